package algorithms

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
)

// Experimenter runs one experiment and returns what was measured. Runners
// (the simulator, a replayed recording, a user's program, a live deployment)
// implement it; every procedure of Algorithm 1 drives one.
type Experimenter interface {
	RunExperiment(ctx context.Context, e Experiment) (Observation, error)
}

// Observation is what SysStat, server logs and pool monitors gave the paper
// for one trial, measured over the runtime window only.
type Observation struct {
	// RuntimeSeconds is the length of the measured window.
	RuntimeSeconds float64 `json:"runtimeSeconds"`
	// Throughput is completed pages per second, end to end.
	Throughput float64 `json:"throughput"`
	// ResponseTimes is the distribution of page response times (seconds),
	// from which goodput and badput at any SLA threshold follow.
	ResponseTimes Histogram `json:"responseTimes"`
	// Servers holds one entry per server, in chain order.
	Servers []ServerObservation `json:"servers"`
	// Drops counts connection attempts refused by a full accept queue;
	// Retries counts the client or upstream retransmissions they caused.
	Drops   int64 `json:"drops"`
	Retries int64 `json:"retries"`
	// Errors counts pages that failed (refused, timed out, 5xx) and are not
	// in ResponseTimes.
	Errors int64 `json:"errors"`

	// ThroughputHalfWidth, Goodput and Window are there when the runner
	// measured the window as a series of intervals (an adaptive trial, or
	// any trial of the simulator): the half-widths of the figures' 95%
	// confidence intervals, goodput at the SLA thresholds the experiment
	// named, and how the window was chosen. Servers and pools carry their
	// own half-widths. Absent, every figure is a bare mean.
	ThroughputHalfWidth float64           `json:"throughputHalfWidth,omitempty"`
	GoodputIntervals    []GoodputInterval `json:"goodput,omitempty"`
	Window              *MeasuredWindow   `json:"window,omitempty"`
}

// GoodputInterval is goodput at one SLA threshold with its interval.
type GoodputInterval struct {
	SLA       float64 `json:"sla"`     // seconds
	Goodput   float64 `json:"goodput"` // pages per second within SLA
	HalfWidth float64 `json:"halfWidth"`
}

// MeasuredWindow says how a trial's measured window was chosen and how precise
// its figures came out.
type MeasuredWindow struct {
	// WarmUpSeconds is the time from the start of the load to the window.
	// TransientSeconds is where MSER-5 put the end of the transient on the
	// throughput and the users inside (an adaptive trial's window begins at
	// the first check at which that answer could be trusted, and never
	// before the minimum ramp-up; a window that begins before it was
	// measured whole because the transient shifted none of its figures by
	// more than the precision, Stopping.EstimateWhole); 0 for a fixed trial.
	WarmUpSeconds    float64 `json:"warmUpSeconds"`
	TransientSeconds float64 `json:"transientSeconds,omitempty"`
	// IntervalSeconds is the length of the window's intervals; Batches the
	// fewest batch means of any figure's interval.
	IntervalSeconds float64 `json:"intervalSeconds"`
	Batches         int     `json:"batches"`
	// Precision is the relative half-width the trial ran to (0: a fixed
	// trial); Precise says every figure reached it before the maximum
	// runtime, and Limit names the figure furthest from it, with its
	// half-width over what the precision allows (Excess; 0 when the
	// figure's batch means never passed the independence test, so that no
	// half-width of it could be trusted).
	Precision float64 `json:"precision,omitempty"`
	Precise   bool    `json:"precise"`
	Limit     string  `json:"limit,omitempty"`
	Excess    float64 `json:"excess,omitempty"`
}

// ServerObservation is one server's share of an observation.
//
// ResponseTime is what the server's own log would show: from the moment one
// of its threads takes the request to the moment it answers, downstream calls
// included; the wait in front of its pool (accept queue) and, for a web
// server, the wait for the client's FIN after the response are excluded.
type ServerObservation struct {
	Name string `json:"name"` // "app-1"
	Tier string `json:"tier"` // "app"
	// CPU is the mean CPU utilisation over the runtime, in [0,1], all cores.
	CPU float64 `json:"cpu"`
	// Resources holds other hardware utilisations in [0,1] (disk, network), if measured.
	Resources map[string]float64 `json:"resources,omitempty"`
	// Pools holds the soft resources of this server.
	Pools []PoolObservation `json:"pools,omitempty"`
	// Throughput is requests per second this server completed.
	Throughput float64 `json:"throughput"`
	// ResponseTime is the mean per-request residence in seconds (see above).
	ResponseTime float64 `json:"responseTime"`
	// GCShare is the share of the runtime the server spent in stop-the-world
	// garbage collection (a JVM's GC time / wall time), if measured.
	GCShare float64 `json:"gcShare,omitempty"`
	// Throttled is, for a server under a CPU quota (a cgroup or a container
	// limit), the share of the quota's enforcement periods in which it ran
	// out of quota, in [0,1]; 0 when it has no quota or it was not measured.
	Throttled float64 `json:"throttled,omitempty"`
	// CPUHalfWidth is the half-width of CPU's 95% interval (see
	// Observation.Window).
	CPUHalfWidth float64 `json:"cpuHalfWidth,omitempty"`
}

// CPUSaturation is how close the server's CPU is to saturation: its
// utilisation or, under a CPU quota, the share of quota periods in which it
// was throttled, whichever is higher. A capped server that runs out of quota
// in nearly every period can be saturated while its mean usage stays below
// the quota (the kernel hands quota out to each core in slices, and what is
// left of a slice on another core is lost for the period).
func (s ServerObservation) CPUSaturation() float64 { return math.Max(s.CPU, s.Throttled) }

// PoolObservation is one soft-resource pool of a server.
type PoolObservation struct {
	Name string  `json:"name"` // "threads", "connections"
	Size int     `json:"size"`
	Busy float64 `json:"busy"` // mean busy units over the runtime
	// FullShare is the share of the runtime in which every unit was busy, in
	// [0,1]; negative when the runner could not measure it.
	FullShare float64 `json:"fullShare"`
	// BusyHalfWidth is the half-width of Busy's 95% interval.
	BusyHalfWidth float64 `json:"busyHalfWidth,omitempty"`
}

// Utilization is the mean share of the pool's units that were busy.
func (p PoolObservation) Utilization() float64 {
	if p.Size <= 0 {
		return 0
	}
	return p.Busy / float64(p.Size)
}

// Server returns the observation of the named server.
func (o Observation) Server(name string) (ServerObservation, bool) {
	for _, s := range o.Servers {
		if s.Name == name {
			return s, true
		}
	}
	return ServerObservation{}, false
}

// Pages is the pages the window served by its throughput: throughput x
// runtime (what the noise of a fixed trial's means is counted in).
func (o Observation) Pages() float64 { return o.Throughput * o.RuntimeSeconds }

// Goodput is the rate of pages with response time at or under threshold seconds.
func (o Observation) Goodput(threshold float64) float64 {
	if o.RuntimeSeconds <= 0 {
		return 0
	}
	return o.ResponseTimes.CountWithin(threshold) / o.RuntimeSeconds
}

// Badput is the rate of pages slower than threshold seconds.
func (o Observation) Badput(threshold float64) float64 {
	if o.RuntimeSeconds <= 0 {
		return 0
	}
	return (float64(o.ResponseTimes.Count()) - o.ResponseTimes.CountWithin(threshold)) / o.RuntimeSeconds
}

// SLOSatisfaction is the share of pages within threshold seconds (1 when none finished).
func (o Observation) SLOSatisfaction(threshold float64) float64 {
	n := o.ResponseTimes.Count()
	if n == 0 {
		return 1
	}
	return o.ResponseTimes.CountWithin(threshold) / float64(n)
}

// TierTotals sums a tier's servers: throughput adds up, response time is the
// throughput-weighted mean, so L = X * R stays Little's law for the tier.
func (o Observation) TierTotals(tier string) (throughput, responseTime float64, servers int) {
	var weighted float64
	for _, s := range o.Servers {
		if s.Tier != tier {
			continue
		}
		servers++
		throughput += s.Throughput
		weighted += s.Throughput * s.ResponseTime
	}
	if throughput > 0 {
		responseTime = weighted / throughput
	}
	return throughput, responseTime, servers
}

// Validate reports the first field that is missing or out of range, by name
// ("observation.servers[2].cpu: want a number in [0,1], got 1.7").
func (o Observation) Validate() error {
	if p := o.Problems(); len(p) > 0 {
		return errors.New(strings.Join(p, "; "))
	}
	return nil
}

// Problems lists every field that is missing or out of range, in field
// order, so that a program writing observations sees all its mistakes at once,
// then every pair of figures that contradict each other (see consistency).
// It is the one validation: every way an observation enters softalloc (a
// journal, a replay campaign, an exec program, the live runner) passes it.
func (o Observation) Problems() []string {
	var out []string
	bad := func(field, want string, got any) {
		out = append(out, fmt.Sprintf("observation.%s: want %s, got %v", field, want, got))
	}
	if !(o.RuntimeSeconds > 0) || math.IsInf(o.RuntimeSeconds, 0) {
		bad("runtimeSeconds", "a positive number", o.RuntimeSeconds)
	}
	if !(o.Throughput >= 0) || math.IsInf(o.Throughput, 0) {
		bad("throughput", "a number >= 0", o.Throughput)
	}
	if err := o.ResponseTimes.Validate(); err != nil {
		out = append(out, "observation.responseTimes."+err.Error())
	}
	for _, n := range []struct {
		name string
		v    int64
	}{{"drops", o.Drops}, {"retries", o.Retries}, {"errors", o.Errors}} {
		if n.v < 0 {
			bad(n.name, "an integer >= 0", n.v)
		}
	}
	halfWidth := func(field string, v float64) {
		if !(v >= 0) || math.IsInf(v, 0) {
			bad(field, "a half-width >= 0", v)
		}
	}
	halfWidth("throughputHalfWidth", o.ThroughputHalfWidth)
	for i, g := range o.GoodputIntervals {
		f := fmt.Sprintf("goodput[%d]", i)
		if !(g.SLA > 0) || math.IsInf(g.SLA, 0) {
			bad(f+".sla", "a threshold in seconds > 0", g.SLA)
		}
		if !(g.Goodput >= 0) || math.IsInf(g.Goodput, 0) {
			bad(f+".goodput", "a number >= 0", g.Goodput)
		}
		halfWidth(f+".halfWidth", g.HalfWidth)
	}
	if w := o.Window; w != nil {
		for _, v := range []struct {
			name string
			v    float64
		}{{"warmUpSeconds", w.WarmUpSeconds}, {"transientSeconds", w.TransientSeconds}, {"intervalSeconds", w.IntervalSeconds}, {"excess", w.Excess}} {
			if !(v.v >= 0) || math.IsInf(v.v, 0) {
				bad("window."+v.name, "a number >= 0", v.v)
			}
		}
		if w.Batches < 0 {
			bad("window.batches", "an integer >= 0", w.Batches)
		}
		if !(w.Precision >= 0 && w.Precision < 1) {
			bad("window.precision", "a share in [0,1)", w.Precision)
		}
	}
	if len(o.Servers) == 0 {
		bad("servers", "at least one server", "none")
	}
	for i, s := range o.Servers {
		f := fmt.Sprintf("servers[%d]", i)
		if s.Name == "" {
			bad(f+".name", "a server name", `""`)
		}
		if s.Tier == "" {
			bad(f+".tier", "a tier name", `""`)
		}
		for _, share := range []struct {
			name string
			v    float64
		}{{"cpu", s.CPU}, {"throttled", s.Throttled}, {"gcShare", s.GCShare}} {
			if !(share.v >= 0 && share.v <= 1) {
				bad(f+"."+share.name, "a number in [0,1]", share.v)
			}
		}
		if !(s.Throughput >= 0) || math.IsInf(s.Throughput, 0) {
			bad(f+".throughput", "a number >= 0", s.Throughput)
		}
		if !(s.ResponseTime >= 0) || math.IsInf(s.ResponseTime, 0) {
			bad(f+".responseTime", "a number of seconds >= 0", s.ResponseTime)
		}
		halfWidth(f+".cpuHalfWidth", s.CPUHalfWidth)
		for _, r := range slices.Sorted(maps.Keys(s.Resources)) {
			if u := s.Resources[r]; !(u >= 0 && u <= 1) {
				bad(fmt.Sprintf("%s.resources.%s", f, r), "a number in [0,1]", u)
			}
		}
		for j, p := range s.Pools {
			pf := fmt.Sprintf("%s.pools[%d]", f, j)
			if p.Name == "" {
				bad(pf+".name", "a pool name", `""`)
			}
			if p.Size < 0 {
				bad(pf+".size", "an integer >= 0", p.Size)
			}
			if !(p.Busy >= 0) || (p.Size > 0 && p.Busy > float64(p.Size)*1.0001) {
				bad(pf+".busy", fmt.Sprintf("a number in [0,%d]", max(p.Size, 0)), p.Busy)
			}
			if !(p.FullShare <= 1) || math.IsNaN(p.FullShare) {
				bad(pf+".fullShare", "a number in [0,1], or negative for unknown", p.FullShare)
			}
			halfWidth(pf+".busyHalfWidth", p.BusyHalfWidth)
		}
	}
	if len(out) == 0 {
		// Figures out of range would only repeat themselves below.
		out = o.consistency()
	}
	return out
}

// Tolerances of the consistency rules.
const (
	// pagesSlack: throughput x runtime and the histogram's count are two
	// figures of one window. A program may take them from different
	// sources (a load generator's count, a server log, a window measured
	// on another clock), which differ by the pages at the window's edges:
	// a few seconds' worth in a window of minutes. 5% allows that, and one
	// page for rounding; a tenfold difference is the wrong window or unit.
	pagesSlack = 0.05
	// meanSlack: the mean lies within the bounds of the buckets that hold
	// the pages, but the sum and the bounds may each be printed to 6
	// digits, and a recorder's bound is a rounding off its value.
	meanSlack = 1e-3
	// goodputSlack: goodput counts a subset of the pages the throughput
	// counts, over the same window; a program that computes the two in
	// different ways (batch means, a histogram's interpolation) may round
	// one above the other, by far less than 1%.
	goodputSlack = 0.01
	// maxErrorRate bounds failed pages per second of the window. A failed
	// page can be far faster than a served one (a refused connection takes
	// microseconds) and an outage has errors and no pages at all, so no
	// ratio to the pages holds; but no load generator sends more than a few
	// million requests a second, and a count beyond that is an overflow or
	// a total of the wrong thing.
	maxErrorRate = 1e7
)

// consistency lists the figures that contradict each other, with the
// numbers: 10^12 errors at 282 pages/s, pages all under 10 s with a mean of
// 70,882 s, throughput 1,000 with 10 pages in the buckets, goodput ten
// times the throughput (issue 35).
//
// An empty histogram (no buckets with pages, sum 0) is response times not
// measured, not a count of zero: a window Advise reads from Prometheus has
// page throughput and no page response times. A trial's runner measures
// them; the exec runner refuses a program's trial without them.
func (o Observation) consistency() []string {
	var out []string
	T := o.RuntimeSeconds
	if rate := float64(o.Errors) / T; rate > maxErrorRate {
		out = append(out, fmt.Sprintf("observation.errors: %d failed pages in %g s is %.3g a second, faster than any load generator sends (at most %.3g a second); want the count of the window's failed pages",
			o.Errors, T, rate, float64(maxErrorRate)))
	}
	h := o.ResponseTimes
	n := h.Count()
	lo, hi, measured := h.span()
	if want := o.Throughput * T; (measured || h.Sum > 0) && math.Abs(float64(n)-want) > pagesSlack*math.Max(float64(n), want)+1 {
		out = append(out, fmt.Sprintf("observation.responseTimes: %d pages in the buckets, but throughput %g pages/s over runtimeSeconds %g is %.6g pages; want the pages of the same window",
			n, o.Throughput, T, want))
	}
	if !measured && h.Sum > 0 {
		out = append(out, fmt.Sprintf("observation.responseTimes.sum: %g s over no pages; want 0", h.Sum))
	}
	if measured {
		if mean := h.Mean(); mean < lo*(1-meanSlack) || mean > hi*(1+meanSlack) {
			out = append(out, fmt.Sprintf("observation.responseTimes.sum: %g s over %d pages is a mean of %.6g s, outside the buckets that hold them (%g s to %g s); want the sum of the same pages' response times",
				h.Sum, n, mean, lo, hi))
		}
	}
	for i, g := range o.GoodputIntervals {
		if g.Goodput > o.Throughput*(1+goodputSlack) {
			out = append(out, fmt.Sprintf("observation.goodput[%d].goodput: %g pages/s within %g s is more than the throughput, %g pages/s; want at most the throughput",
				i, g.Goodput, g.SLA, o.Throughput))
		}
	}
	return out
}

// span is the range the histogram's values lie in: from the lower bound of
// its first non-empty bucket to the upper bound of its last; ok is false
// when it holds none.
func (h Histogram) span() (lo, hi float64, ok bool) {
	prev := 0.0
	for _, b := range h.Buckets {
		if b.Count > 0 {
			if !ok {
				lo, ok = prev, true
			}
			hi = b.LE
		}
		prev = b.LE
	}
	return lo, hi, ok
}

// Bucket counts the values in (previous bucket's LE, LE].
type Bucket struct {
	LE    float64 `json:"le"`
	Count int64   `json:"count"`
}

// Histogram is a response-time distribution as sparse buckets in ascending
// order of upper bound, the shape any latency recorder can export.
type Histogram struct {
	Buckets []Bucket `json:"buckets"`
	Sum     float64  `json:"sum"` // sum of all values, for the mean
}

// Count is the number of values recorded.
func (h Histogram) Count() int64 {
	var n int64
	for _, b := range h.Buckets {
		n += b.Count
	}
	return n
}

// Mean is the mean value (0 when empty).
func (h Histogram) Mean() float64 {
	n := h.Count()
	if n == 0 {
		return 0
	}
	return h.Sum / float64(n)
}

// CountWithin estimates how many values are <= t. A bucket that straddles t
// contributes the share of its width below t (values spread evenly inside it).
func (h Histogram) CountWithin(t float64) float64 {
	var n float64
	lo := 0.0
	for _, b := range h.Buckets {
		if b.LE <= t {
			n += float64(b.Count)
			lo = b.LE
			continue
		}
		if t > lo && b.LE > lo {
			n += float64(b.Count) * (t - lo) / (b.LE - lo)
		}
		break
	}
	return n
}

// Quantile estimates the q-quantile (q in [0,1]) by interpolating inside buckets.
func (h Histogram) Quantile(q float64) float64 {
	n := h.Count()
	if n == 0 {
		return math.NaN()
	}
	target := q * float64(n)
	var seen float64
	lo := 0.0
	for _, b := range h.Buckets {
		c := float64(b.Count)
		if c > 0 && seen+c >= target {
			return lo + (b.LE-lo)*(target-seen)/c
		}
		seen += c
		lo = b.LE
	}
	return lo
}

// maxHistogramCount bounds a histogram's values: a million pages a second
// for a year is 3.2e13, and counts near 2^63 wrapped Count to a negative.
const maxHistogramCount = 1 << 50

// Validate checks that bounds ascend and counts are non-negative, and that
// they add up to a count that fits.
func (h Histogram) Validate() error {
	prev := 0.0
	var total int64
	for i, b := range h.Buckets {
		if !(b.LE > prev) || math.IsInf(b.LE, 0) {
			return fmt.Errorf("buckets[%d].le: want a finite number above the previous bound %g, got %g", i, prev, b.LE)
		}
		if b.Count < 0 || b.Count > maxHistogramCount-total {
			return fmt.Errorf("buckets[%d].count: want an integer >= 0 that keeps the total at most %d, got %d", i, int64(maxHistogramCount), b.Count)
		}
		total += b.Count
		prev = b.LE
	}
	if !(h.Sum >= 0) {
		return fmt.Errorf("sum: want a number >= 0, got %g", h.Sum)
	}
	return nil
}

// Merge adds another histogram's counts (bounds are united).
func (h Histogram) Merge(o Histogram) Histogram {
	m := map[float64]int64{}
	for _, b := range h.Buckets {
		m[b.LE] += b.Count
	}
	for _, b := range o.Buckets {
		m[b.LE] += b.Count
	}
	out := Histogram{Sum: h.Sum + o.Sum, Buckets: make([]Bucket, 0, len(m))}
	for le, c := range m {
		out.Buckets = append(out.Buckets, Bucket{LE: le, Count: c})
	}
	sort.Slice(out.Buckets, func(i, j int) bool { return out.Buckets[i].LE < out.Buckets[j].LE })
	return out
}

// Recorder is a streaming response-time histogram of fixed memory: log-spaced
// buckets, 200 per decade (about 1.2% wide) from 10 us to 100,000 s. Recording
// is one logarithm and an increment; memory does not depend on the count.
type Recorder struct {
	counts [recorderBuckets]int64
	sum    float64
}

const (
	recorderPerDecade = 200
	recorderMinExp    = -5 // 10 us
	recorderDecades   = 10
	recorderBuckets   = recorderPerDecade*recorderDecades + 2
)

// Add records one value in seconds.
func (r *Recorder) Add(v float64) {
	r.counts[recorderIndex(v)]++
	r.sum += v
}

// Reset forgets everything recorded.
func (r *Recorder) Reset() { *r = Recorder{} }

// recorderMin is the first bucket's bound, 10^recorderMinExp.
const recorderMin = 1e-5

func recorderIndex(v float64) int {
	if v <= recorderMin {
		return 0
	}
	i := int(math.Ceil((math.Log10(v) - recorderMinExp) * recorderPerDecade))
	if i >= recorderBuckets {
		return recorderBuckets - 1
	}
	return i
}

// recorderBound is the upper bound of bucket i.
func recorderBound(i int) float64 {
	if i == recorderBuckets-1 {
		return math.MaxFloat64
	}
	return math.Pow(10, recorderMinExp+float64(i)/recorderPerDecade)
}

// Histogram exports the non-empty buckets.
func (r *Recorder) Histogram() Histogram {
	h := Histogram{Sum: r.sum}
	for i, c := range r.counts {
		if c > 0 {
			h.Buckets = append(h.Buckets, Bucket{LE: recorderBound(i), Count: c})
		}
	}
	return h
}

// Since is what r recorded after the moment earlier was copied from it:
// the histogram of a window that began then.
func (r *Recorder) Since(earlier *Recorder) Recorder {
	out := Recorder{sum: r.sum - earlier.sum}
	for i := range r.counts {
		out.counts[i] = r.counts[i] - earlier.counts[i]
	}
	return out
}
