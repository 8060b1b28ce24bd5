package live

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/softalloc/softalloc/algorithms"
)

// A trial's readings can be wrong while each looks valid on its own: on a
// busy machine find-critical took app-1's CPU as 0.062 at 185 users and 0.056
// at 195 users between neighbours at 0.84-0.90, at the same page rate, and
// named the wrong resource. By the utilisation law a server's CPU over its
// throughput is its demand per request, and its throughput over the pages'
// is its visit ratio: both change slowly with the workload, so a trial whose
// figures stray far from the trials measured beside it is a measurement
// fault (a stale or broken scrape), measured again, never used.
//
// Only trials at the same allocation are the reference. A demand depends on
// the allocation (the paper's over-allocation effect), and a hook that
// restarts a server resets it: the Java testbed's JVM, started with its cap
// lifted, read 0.181 CPU per request in its first trial at 40 users, then
// 0.024-0.033 at the same workload once the pools had doubled (and the JIT had
// compiled). Judged against the cold trial, the three warm readings were
// refused and the campaign failed, although it was the old reading that no
// longer held.
const (
	// demandFactor bounds a demand's ratio to its neighbours': the app's CPU
	// per page falls with load and the paper's over-allocation (GC, context
	// switches) raises it, each by well under 2x on the testbeds; the fault
	// seen was 14x.
	demandFactor = 4.0
	// visitFactor bounds a visit ratio's: a page mix makes a server's
	// requests per page vary by some tens of percent between short trials.
	visitFactor = 2.0
	// minNeighbours is how many trials of a server a judgement needs.
	minNeighbours = 2
	// neighbours is how many of the nearest workloads' trials make the reference.
	neighbours = 3
	// minCPU is the least CPU a reference trial needs for its demand to mean
	// something: near idle, the process's own background work dominates.
	minCPU = 0.05
)

// plausibilityKey names the trials that are each other's reference: those at
// the same allocation on the same replicas (a server's requests per page
// halve when its tier's replicas double).
func plausibilityKey(e algorithms.Experiment) string {
	var b strings.Builder
	b.WriteString(e.Allocation.Key())
	for _, t := range e.Deployment.Tiers {
		fmt.Fprintf(&b, " %s×%d", t.Name, t.Replicas)
	}
	return b.String()
}

// serverSample is one trial's demand and visit ratio of one server.
type serverSample struct {
	users          int
	allocation     string  // the allocation's key
	demand, visits float64 // CPU per request; requests per page
}

// plausibility keeps the samples of the trials this runner measured, per server.
type plausibility struct {
	samples map[string][]serverSample
}

// check compares the trial's servers with the trials of the nearest
// workloads at the same allocation; it says what is implausible, naming the
// server, the figures and the neighbours', or "" when nothing is (or there is
// too little to judge).
func (p *plausibility) check(users int, allocation string, o algorithms.Observation) string {
	if !(o.Throughput > 0) {
		return ""
	}
	for _, s := range o.Servers {
		ref := p.nearest(s.Name, allocation, users)
		if len(ref) < minNeighbours || !(s.Throughput > 0) {
			continue
		}
		lo, hi := ref[0].users, ref[0].users
		demands := make([]float64, len(ref))
		visits := make([]float64, len(ref))
		for i, r := range ref {
			lo, hi = min(lo, r.users), max(hi, r.users)
			demands[i], visits[i] = r.demand, r.visits
		}
		at := fmt.Sprintf("%d-%d users", lo, hi)
		if lo == hi {
			at = fmt.Sprintf("%d users", lo)
		}
		if d, ref := s.CPU/s.Throughput, median(demands); !within(d, ref, demandFactor) {
			return fmt.Sprintf("%s: cpu %.3f at %.1f requests/s is %.3g per request, against %.3g in the trials at %s: more than %gx apart (a stale or broken reading)",
				s.Name, s.CPU, s.Throughput, d, ref, at, demandFactor)
		}
		if v, ref := s.Throughput/o.Throughput, median(visits); !within(v, ref, visitFactor) {
			return fmt.Sprintf("%s: %.1f requests/s for %.1f pages/s is %.3g per page, against %.3g in the trials at %s: more than %gx apart (a stale or broken reading)",
				s.Name, s.Throughput, o.Throughput, v, ref, at, visitFactor)
		}
	}
	return ""
}

// add keeps a trial that was used.
func (p *plausibility) add(users int, allocation string, o algorithms.Observation) {
	if !(o.Throughput > 0) {
		return
	}
	if p.samples == nil {
		p.samples = map[string][]serverSample{}
	}
	for _, s := range o.Servers {
		if s.Throughput > 0 && s.CPU >= minCPU {
			p.samples[s.Name] = append(p.samples[s.Name], serverSample{users, allocation, s.CPU / s.Throughput, s.Throughput / o.Throughput})
		}
	}
}

// nearest returns the server's samples at the allocation of the workloads nearest users.
func (p *plausibility) nearest(server, allocation string, users int) []serverSample {
	all := slices.DeleteFunc(slices.Clone(p.samples[server]), func(s serverSample) bool { return s.allocation != allocation })
	sort.SliceStable(all, func(i, j int) bool {
		return abs(all[i].users-users) < abs(all[j].users-users)
	})
	return all[:min(len(all), neighbours)]
}

func within(v, ref, factor float64) bool {
	if !(ref > 0) {
		return true // nothing to compare with
	}
	return v*factor >= ref && v <= ref*factor
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
