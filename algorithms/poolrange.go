package algorithms

import (
	"context"
	"fmt"
	"math"
	"slices"
)

// RangeShare is how close to the best goodput a pool size must stay to be
// in the recommended range.
const RangeShare = 0.99

// PoolRange is the range of sizes of the pool that bounds the critical
// tier's jobs (BoundingPool; a pool of the same tier behind it follows it)
// within which goodput at the SLA stays within 1% of its maximum: the
// optimum is flat on most deployments, and this says how flat.
type PoolRange struct {
	Tier string `json:"tier"`
	Pool string `json:"pool"`
	// Recommended is the recommendation's size, per server.
	Recommended int `json:"recommended"`
	// Low and High bound the range, per server; High is 0 when no size
	// measured or predicted worse above Low (the model sees no cost in
	// a larger pool; trials saw none up to the largest size tried), Low 0
	// when no size tried came within 1% of the best (the model only).
	Low  int `json:"low"`
	High int `json:"high"`
	// Source says how the goodputs were had: "model" (advise's queueing
	// model) or "trials" (experiments on the runner).
	Source string `json:"source"`
	// Users is the workload of the trials (0 for the model).
	Users int `json:"users,omitempty"`
	// Points are the sizes tried, ascending, with their goodput (pages/s)
	// and its share of the best.
	Points []RangePoint `json:"points"`
}

// RangePoint is one pool size's goodput.
type RangePoint struct {
	Size    int     `json:"size"`
	Goodput float64 `json:"goodput"`
	Share   float64 `json:"share"`
}

// rangeFactors are the sizes tried, as multiples of the recommendation.
var rangeFactors = []float64{0.25, 0.5, 0.75, 1, 1.5, 2, 4, 8}

// rangeSizes are the sizes tried around rec (at least 1, no repeats).
func rangeSizes(rec int) []int {
	var out []int
	for _, f := range rangeFactors {
		out = append(out, max(1, int(math.Round(f*float64(rec)))))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// finish fills the shares, Low and High from the points' goodputs: the
// run of sizes around the best whose goodput stays within RangeShare of it.
func (r *PoolRange) finish() {
	best := 0
	for i, p := range r.Points {
		if p.Goodput > r.Points[best].Goodput {
			best = i
		}
	}
	top := r.Points[best].Goodput
	for i := range r.Points {
		if top > 0 {
			r.Points[i].Share = r.Points[i].Goodput / top
		}
	}
	lo, hi := best, best
	for lo > 0 && r.Points[lo-1].Share >= RangeShare {
		lo--
	}
	for hi < len(r.Points)-1 && r.Points[hi+1].Share >= RangeShare {
		hi++
	}
	r.Low, r.High = r.Points[lo].Size, r.Points[hi].Size
	if hi == len(r.Points)-1 {
		r.High = 0
	}
}

// withPoolSize is alloc with the bounding pool (tier bt, pool bp) set to
// size, and the tier's connections not above its threads.
func withPoolSize(d Deployment, alloc Allocation, bt int, bp string, size int) Allocation {
	a := alloc.Clone()
	t := d.Tiers[bt]
	p := a[t.Name]
	switch bp {
	case PoolThreads:
		p.Threads = size
		if t.HasPool(PoolConnections) {
			// Connections behind the threads follow them: a connection
			// beyond the threads is never opened.
			p.Connections = size
		}
	case PoolConnections:
		p.Connections = size
		p.Threads = max(p.Threads, size)
	}
	a[t.Name] = p
	return a
}

// rangePrecision is the finest precision MeasureRange's adaptive trials
// run to: a quarter of the range's 1% band.
const rangePrecision = 0.0025

// MeasureRange measures the recommended range by experiments: the bounding
// pool at sizes from a quarter to eight times the recommendation, the rest
// of the allocation as recommended, at users a little past the saturation
// workload (where pool sizes matter; 6/5 of it). It takes len(sizes)
// experiments (at most 8), answered by the journal when recorded.
func MeasureRange(ctx context.Context, x Experimenter, d Deployment, rec Recommendation, opts Options) (PoolRange, error) {
	opts = opts.withDefaults()
	bt, bp := BoundingPool(d, rec.Critical.Tier)
	if bt < 0 || !d.Tiers[bt].HasPool(bp) {
		return PoolRange{}, fmt.Errorf("range: the critical tier %q has no pool bounding its jobs to vary", rec.Critical.Tier)
	}
	t := d.Tiers[bt]
	size := rec.Allocation[t.Name].Size(bp)
	if size < 1 {
		return PoolRange{}, fmt.Errorf("range: the recommendation sets no %s %s pool", t.Name, bp)
	}
	users := max(1, rec.Critical.SaturationWorkload*6/5)
	timing := opts.Timing
	if timing.Adaptive() {
		// A band of 1% cannot be read off trials precise to 2%: on
		// 1/4/1/4 those put sizes 6 and 12 at 0.992 of the best, outside
		// a range that measured 8 alone.
		timing.Precision = min(timing.Precision, rangePrecision)
	}
	r := PoolRange{Tier: t.Name, Pool: bp, Recommended: size, Source: "trials", Users: users}
	for _, s := range rangeSizes(size) {
		o, err := x.RunExperiment(ctx, Experiment{Deployment: d, Allocation: withPoolSize(d, rec.Allocation, bt, bp, s),
			Workload: Workload{Users: users}, Timing: timing})
		if err != nil {
			return r, fmt.Errorf("range: %s %s %d at %d users: %w", t.Name, bp, s, users, err)
		}
		r.Points = append(r.Points, RangePoint{Size: s, Goodput: o.Goodput(opts.SLA)})
	}
	r.finish()
	return r, nil
}

// poolRange predicts the range from the model: a pool of k jobs in front
// of the critical tier lets through at most what the stations behind it
// serve with k jobs cycling among them (exact MVA of that sub-network, the
// tier's time outside the stations as its delay). The model sees no cost in
// idle threads, so the range has no upper end.
func (n *adviseNetwork) poolRange(alloc Allocation, critical string) (PoolRange, error) {
	bt, bp := BoundingPool(n.d, critical)
	ci := n.d.TierIndex(critical)
	if bt < 0 || !n.d.Tiers[bt].HasPool(bp) {
		return PoolRange{}, fmt.Errorf("the critical tier %q has no pool bounding its jobs", critical)
	}
	t := n.d.Tiers[bt]
	size := alloc[t.Name].Size(bp)
	if size < 1 {
		return PoolRange{}, fmt.Errorf("the allocation sets no %s %s pool", t.Name, bp)
	}
	var sub []Station
	for k, s := range n.stations {
		if n.tierOf[k] >= ci {
			sub = append(sub, s)
		}
	}
	if len(sub) == 0 {
		return PoolRange{}, fmt.Errorf("no station at or behind tier %q", critical)
	}
	replicas := max(1, t.Replicas)
	sizes := rangeSizes(size)
	pts, err := MVA(sub, n.outside[ci], slices.Max(sizes)*replicas)
	if err != nil {
		return PoolRange{}, err
	}
	_, xmax := MVASaturation(sub, n.outside[ci])
	r := PoolRange{Tier: t.Name, Pool: bp, Recommended: size, Source: "model"}
	for _, s := range sizes {
		r.Points = append(r.Points, RangePoint{Size: s, Goodput: pts[s*replicas-1].Throughput})
	}
	// The best is the hardware's: no pool can beat the saturated station.
	r.Points = append(r.Points, RangePoint{Size: math.MaxInt32, Goodput: xmax})
	r.finish()
	r.Points = r.Points[:len(r.Points)-1]
	if r.Low == math.MaxInt32 {
		r.Low = 0 // no size tried comes within 1% of the hardware's best
	}
	r.High = 0
	return r, nil
}
