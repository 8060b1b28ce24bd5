package algorithms

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
)

// adviseNetwork is the chain as a queueing network: one station per fitted
// server resource, the time each tier spends outside them as a constant,
// and users with a think time (closed) or none (open).
type adviseNetwork struct {
	d        Deployment
	stations []Station
	idle     []float64 // each station's idle utilisation (the fit's intercept, clamped)
	perPage  []float64 // each station's utilisation per page/s
	tierOf   []int     // each station's tier index
	fitOf    []int     // each station's index in the fits
	// visits are each tier's requests per page; outside its time per page
	// outside the modelled stations, downstream included; hasRT whether
	// the windows measured the tier's response time.
	visits  []float64
	outside []float64
	hasRT   []bool
	// have counts the windows with each tier's throughput and response
	// time, need is how many a tier wants, gaps are the others.
	have       []int
	need       int
	minWindows int
	gaps       [][]TierGap

	model       string
	think       float64 // closed: the delay per cycle besides the stations (think time and unmodelled time)
	shownThink  float64 // the users' think time alone
	thinkSource string
	notes       []string
}

func newAdviseNetwork(d Deployment, fits []DemandFit, used []Window, opts AdviseOptions) (*adviseNetwork, error) {
	n := &adviseNetwork{d: d}
	for i, f := range fits {
		if f.PerPage <= 0 {
			continue // a resource that does not grow with load does not queue with it
		}
		idle := min(max(0, f.Idle), opts.HardwareThreshold-1e-3)
		// Idle work takes its share of the capacity: the pages get the rest.
		n.stations = append(n.stations, Station{Name: f.Server + "/" + f.Resource, Demand: f.Demand / (1 - idle), Servers: f.Cores})
		n.idle, n.perPage = append(n.idle, idle), append(n.perPage, f.PerPage)
		n.tierOf, n.fitOf = append(n.tierOf, d.TierIndex(f.Tier)), append(n.fitOf, i)
	}
	if len(n.stations) == 0 {
		return nil, fmt.Errorf("no server's utilisation grows with the load over the windows: nothing to model: %w", ErrNotEnoughData)
	}
	nt := len(d.Tiers)
	n.visits, n.outside, n.hasRT = make([]float64, nt), make([]float64, nt), make([]bool, nt)
	n.have, n.gaps, n.minWindows = make([]int, nt), make([][]TierGap, nt), opts.MinWindows
	n.need = max(opts.MinWindows, (len(used)+1)/2)
	for ti, t := range d.Tiers {
		var visits, outside []float64
		gapLacks := map[string]bool{}
		for _, w := range used {
			o := w.Observation
			var tp, jobs float64
			for _, s := range o.Servers {
				if s.Tier == t.Name {
					tp += s.Throughput
					jobs += s.Throughput * s.ResponseTime
				}
			}
			// A window lacking the tier's reading (a sampled busy gauge at 0,
			// a missing series read as 0) is left out of this tier's figures
			// alone: it disabled the whole tier (3 of 27 windows).
			if p, lacks := tierGap(t.Name, o); p != "" {
				n.gaps[ti] = append(n.gaps[ti], TierGap{Tier: t.Name, Label: w.Label, Problem: p})
				gapLacks[lacks] = true
				continue
			}
			n.have[ti]++
			visits = append(visits, tp/o.Throughput)
			// Little's law: the tier's jobs per page/s is its time per page.
			outside = append(outside, jobs/o.Throughput-n.inTiers(ti, n.openResidence(o.Throughput)))
		}
		// The medians stand for the windows only when most have the readings.
		n.hasRT[ti] = n.have[ti] >= n.need && median(visits) > 0
		if n.hasRT[ti] {
			n.visits[ti], n.outside[ti] = median(visits), max(0, median(outside))
			if len(n.gaps[ti]) > 0 {
				n.notes = append(n.notes, gapNote(t.Name, n.gaps[ti], gapLacks, len(used)))
			}
		}
	}
	if err := n.thinkTime(used, opts); err != nil {
		return nil, err
	}
	return n, nil
}

// tierGap says why window o lacks tier's throughput and response time, or
// "" when it has them: each server either idle (both 0) or reading both, and
// the tier serving some requests. lacks is "throughput", "response time" or
// "both" (its servers lack different ones).
func tierGap(tier string, o Observation) (problem, lacks string) {
	var problems []string
	var tp float64
	lack := func(what string) {
		if lacks != "" && lacks != what {
			what = "both"
		}
		lacks = what
	}
	for _, s := range o.Servers {
		if s.Tier != tier {
			continue
		}
		tp += s.Throughput
		switch {
		case s.Throughput > 0 && s.ResponseTime == 0:
			problems = append(problems, fmt.Sprintf("%s: response time 0 while its throughput is %.4g/s", s.Name, s.Throughput))
			lack("response time")
		case s.Throughput == 0 && s.ResponseTime > 0:
			problems = append(problems, fmt.Sprintf("%s: throughput 0 while its response time is %.4g s", s.Name, s.ResponseTime))
			lack("throughput")
		}
	}
	if len(problems) == 0 && tp == 0 {
		return fmt.Sprintf("tier %s: throughput 0 while the deployment served %.4g pages/s", tier, o.Throughput), "throughput"
	}
	return strings.Join(problems, "; "), lacks
}

// noTierReadings is the error for tier ti, which sizing (what) needs, when
// too few of the used windows have its throughput and response time.
func (n *adviseNetwork) noTierReadings(ti, used int, what string) error {
	t := n.d.Tiers[ti]
	first := ""
	if g := n.gaps[ti]; len(g) > 0 {
		first = fmt.Sprintf(" (the first %s: %s)", g[0].Label, g[0].Problem)
	}
	switch {
	case n.have[ti] == 0:
		return fmt.Errorf("tier %q: none of the %d windows has a throughput and response time for it%s, which Little's law needs to size %s: add its throughput and responseTime queries: %w",
			t.Name, used, first, what, ErrNotEnoughData)
	case n.have[ti] < n.need:
		return fmt.Errorf("tier %q: %d of %d windows have its throughput and response time (want at least %d: half the windows, and at least %d), which Little's law needs to size %s; %d lack them%s: check its throughput and responseTime queries: %w",
			t.Name, n.have[ti], used, n.need, n.minWindows, what, len(n.gaps[ti]), first, ErrNotEnoughData)
	}
	return fmt.Errorf("tier %q: %d of %d windows have its throughput and response time, but the model gives it no time per page, which Little's law needs to size %s: %w",
		t.Name, n.have[ti], used, what, ErrNotEnoughData)
}

// gapNote names the windows left out of a tier's time per page.
// lacks holds what they lack (tierGap's).
func gapNote(tier string, gaps []TierGap, lacks map[string]bool, used int) string {
	var labels []string
	for _, g := range gaps[:min(5, len(gaps))] {
		labels = append(labels, g.Label)
	}
	what := "throughput or response time"
	if len(lacks) == 1 && !lacks["both"] {
		for k := range lacks {
			what = k
		}
	}
	more := ""
	if len(gaps) > len(labels) {
		more = fmt.Sprintf(" and %d more", len(gaps)-len(labels))
	}
	return fmt.Sprintf("tier %s: %d of %d windows lack its %s and are left out of its time per page (the other %d give it): %s%s",
		tier, len(gaps), used, what, used-len(gaps), strings.Join(labels, ", "), more)
}

// thinkTime chooses the model: closed with the think time given or read from
// the windows' users (the response time law, Z = N/X - R), open otherwise.
func (n *adviseNetwork) thinkTime(used []Window, opts AdviseOptions) error {
	var delays, thinks []float64
	for _, w := range used {
		if w.Users <= 0 {
			continue
		}
		x := w.Observation.Throughput
		// Everything a cycle spends outside the stations: thinking, and the
		// time the stations do not model.
		delays = append(delays, w.Users/x-n.total(n.openResidence(x)))
		if r := pageResponseTime(w); r > 0 {
			thinks = append(thinks, w.Users/x-r)
		}
	}
	switch {
	case opts.ThinkTime > 0:
		n.model, n.think, n.shownThink, n.thinkSource = "closed", opts.ThinkTime+n.unmodelled(used), opts.ThinkTime, "given"
	case len(delays) > 0:
		n.model, n.thinkSource = "closed", fmt.Sprintf("the users of %d windows (response time law)", len(delays))
		n.think, n.shownThink = median(delays), median(delays)
		if len(thinks) > 0 {
			n.shownThink = median(thinks)
		}
		if n.think <= 0 {
			return fmt.Errorf("the windows' users and throughput give a think time of %.3g s: want users counted over the same windows as the pages: %w", n.think, ErrNotEnoughData)
		}
	case opts.WorkloadThinkTime > 0:
		n.model, n.think, n.shownThink = "closed", opts.WorkloadThinkTime+n.unmodelled(used), opts.WorkloadThinkTime
		n.thinkSource = cmp.Or(opts.WorkloadThinkTimeSource, "the workload")
	default:
		n.model = "open"
		n.notes = append(n.notes, "no think time and no user counts: modelled as an open workload (arrivals independent of response times); give the think time for a closed one")
	}
	return nil
}

// unmodelled is a page's time outside the stations: its response time where
// the windows have it, else the front tier's time outside them.
func (n *adviseNetwork) unmodelled(used []Window) float64 {
	var out []float64
	for _, w := range used {
		if r := pageResponseTime(w); r > 0 {
			out = append(out, r-n.total(n.openResidence(w.Observation.Throughput)))
		}
	}
	if len(out) > 0 {
		return max(0, median(out))
	}
	return n.outside[0]
}

// pageResponseTime is a window's mean page response time, 0 when unknown.
func pageResponseTime(w Window) float64 {
	if w.ResponseTime > 0 {
		return w.ResponseTime
	}
	return w.Observation.ResponseTimes.Mean()
}

// openResidence is each station's residence per page at page throughput x
// in the open network (M/M/c: Erlang C).
func (n *adviseNetwork) openResidence(x float64) []float64 {
	r := make([]float64, len(n.stations))
	for k, s := range n.stations {
		r[k] = mmcResidence(s.Demand, s.Servers, x)
	}
	return r
}

// mmcResidence is the mean residence per page of an M/M/c station with
// demand d (seconds of one core per page) at page throughput x: d plus the
// wait, C(c, A) d / (c (1 - rho)), A = x d, rho = A / c. +Inf at rho >= 1.
func mmcResidence(d float64, c int, x float64) float64 {
	a := x * d
	rho := a / float64(c)
	if rho >= 1 {
		return math.Inf(1)
	}
	// Erlang C from the terms A^k/k!, scaled by the largest to stay finite.
	term, sum := 1.0, 0.0
	for k := 0; k < c; k++ {
		sum += term
		term *= a / float64(k+1)
	}
	last := term / (1 - rho) // A^c/c! / (1 - rho)
	erlangC := last / (sum + last)
	return d + erlangC*d/(float64(c)*(1-rho))
}

// inTiers sums the residences of the stations in tier ti and behind it: a
// request holds its tier's thread while it waits downstream.
func (n *adviseNetwork) inTiers(ti int, res []float64) float64 {
	var sum float64
	for k, r := range res {
		if n.tierOf[k] >= ti {
			sum += r
		}
	}
	return sum
}

func (n *adviseNetwork) total(res []float64) float64 { return n.inTiers(0, res) }

// utilization is station k's utilisation (idle work included) when its
// share of the pages' capacity is u.
func (n *adviseNetwork) utilization(k int, u float64) float64 { return n.idle[k] + (1-n.idle[k])*u }

// maxThroughput is the page throughput at which the first station is fully busy.
func (n *adviseNetwork) maxThroughput() float64 {
	best := math.Inf(1)
	for k := range n.stations {
		best = min(best, (1-n.idle[k])/n.perPage[k])
	}
	return best
}

// prediction is the network where the critical resource reaches the threshold.
type prediction struct {
	users            int // closed model only
	throughput       float64
	tierThroughput   []float64
	tierResponseTime []float64
}

func (n *adviseNetwork) atThreshold(crit DemandFit, threshold float64) (prediction, error) {
	ck := -1
	for k, s := range n.stations {
		if s.Name == crit.Server+"/"+crit.Resource {
			ck = k
		}
	}
	if ck < 0 {
		return prediction{}, fmt.Errorf("%s %s: its utilisation does not grow with the load: %w", crit.Server, crit.Resource, ErrNotEnoughData)
	}
	var p prediction
	var res []float64
	switch n.model {
	case "open":
		p.throughput = (threshold - n.idle[ck]) / n.perPage[ck]
		res = n.openResidence(p.throughput)
	default:
		nStar, _ := MVASaturation(n.stations, n.think)
		const most = 2_000_000 // users: MVA's cost grows with them
		limit := int(min(most, math.Max(100, 3*nStar)))
		pts, err := MVA(n.stations, n.think, limit)
		if err != nil {
			return p, fmt.Errorf("the fitted network: %w", err)
		}
		i := slices.IndexFunc(pts, func(pt MVAPoint) bool { return n.utilization(ck, pt.Utilization[ck]) >= threshold })
		if i < 0 {
			return p, fmt.Errorf("the fitted network does not bring %s %s to %.0f%% below %d users", crit.Server, crit.Resource, 100*threshold, limit)
		}
		p.users, p.throughput, res = pts[i].Users, pts[i].Throughput, pts[i].Residence
	}
	for ti := range n.d.Tiers {
		tp, rt := 0.0, 0.0
		if n.hasRT[ti] {
			tp = n.visits[ti] * p.throughput
			rt = (n.inTiers(ti, res) + n.outside[ti]) / n.visits[ti]
		}
		p.tierThroughput, p.tierResponseTime = append(p.tierThroughput, tp), append(p.tierResponseTime, rt)
	}
	return p, nil
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}
