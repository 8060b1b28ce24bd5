package algorithms

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sort"
	"sync"
)

// Named allocations every comparison includes, beside the grid.
const (
	RoleRecommended    = "recommended"
	RolePractitioners  = "practitioners"
	RoleTomcatDefaults = "tomcat-defaults"
	RoleHikari         = "hikari"
	RoleGrid           = "grid"
)

// GridEntry is one allocation of a comparison and why it is there.
type GridEntry struct {
	Allocation Allocation
	Role       string
	// Also are the other named roles the same allocation fills: a
	// recommendation may be the practitioners' 400-150-60.
	Also []string
}

// Around lists pool sizes near r (halves to doubles) and the anchors, sorted.
func Around(r int, anchors []int) []int {
	set := map[int]bool{}
	for _, f := range []float64{0.5, 0.75, 1, 1.5, 2} {
		set[max(1, int(math.Round(float64(r)*f)))] = true
	}
	for _, a := range anchors {
		set[a] = true
	}
	out := make([]int, 0, len(set))
	for v := range set {
		out = append(out, v)
	}
	sort.Ints(out)
	return out
}

// DefaultGridThreads and DefaultGridConnections are the grid's anchors: the
// sizes a practitioner would try, from the paper's 6 to 200.
var (
	DefaultGridThreads     = []int{6, 10, 20, 50, 100, 150, 200}
	DefaultGridConnections = []int{6, 10, 20, 60, 100, 200}
)

// Grid builds the comparison around a recommendation: the recommendation,
// the practitioners' 400-150-60, Tomcat's defaults (200 threads, 8
// connections), the HikariCP rule of thumb (connections = 2 x DB cores + 1),
// and every pair of app threads x connections (nil: around the
// recommendation plus the anchors) at the recommendation's web pool. A pair
// with more connections than threads is left out: such a connection is never
// opened.
func Grid(d Deployment, rec Allocation, threads, conns []int) []GridEntry {
	if threads == nil {
		threads = Around(rec["app"].Threads, DefaultGridThreads)
	}
	if conns == nil {
		conns = Around(max(rec["app"].Connections, 1), DefaultGridConnections)
	}
	dbCores := 1
	if t, ok := d.Tier("db"); ok && t.Cores > 0 {
		dbCores = t.Cores
	}
	web := rec["web"].Threads
	named := []GridEntry{
		{Allocation: rec, Role: RoleRecommended},
		{Allocation: Allocation{"web": {Threads: 400}, "app": {Threads: 150, Connections: 60}}, Role: RolePractitioners},
		{Allocation: Allocation{"web": {Threads: web}, "app": {Threads: 200, Connections: 8}}, Role: RoleTomcatDefaults},
		{Allocation: Allocation{"web": {Threads: web}, "app": {Threads: 150, Connections: 2*dbCores + 1}}, Role: RoleHikari},
	}
	seen := map[string]int{}
	var out []GridEntry
	add := func(e GridEntry) {
		i, ok := seen[e.Allocation.Key()]
		if !ok {
			seen[e.Allocation.Key()] = len(out)
			out = append(out, e)
		} else if e.Role != RoleGrid {
			out[i].Also = append(out[i].Also, e.Role)
		}
	}
	for _, n := range named {
		add(n)
	}
	for _, t := range threads {
		for _, c := range conns {
			if c <= t {
				add(GridEntry{Allocation: Allocation{"web": {Threads: web}, "app": {Threads: t, Connections: c}}, Role: RoleGrid})
			}
		}
	}
	return out
}

// GridWorkloads are six steps of 500 users from 1,000 below the saturation workload.
func GridWorkloads(saturation int) []int {
	var out []int
	for u := max(500, saturation-1000); len(out) < 6; u += 500 {
		out = append(out, u)
	}
	return out
}

// CompareOptions say where allocations are compared.
type CompareOptions struct {
	Workloads []int
	// SLAs are the goodput thresholds, seconds.
	SLAs   []float64
	Timing Timing
	// Parallel is how many trials run at once (at least 1).
	Parallel int
	// Screening measures adaptive trials first at the precision times
	// 2^Screening (at most 25%), then only those that could still be the
	// grid's best or a named allocation's maximum again at half the
	// precision, until they reach Timing.Precision: most of a grid lies
	// clearly below its best and needs no more. 0: every trial at the
	// precision.
	Screening int
	// NamedPrecision, when finer than Timing.Precision, is the precision
	// the maxima of the named allocations (every role but RoleGrid) are
	// measured to: their ratios are what a comparison reports, and two 2%
	// maxima cannot be told apart by less than about 3 points. 0:
	// Timing.Precision.
	NamedPrecision float64
}

// DefaultScreening starts a grid's trials at four times the precision.
const DefaultScreening = 2

// Compared is one allocation's showing; every slice is indexed by SLA.
type Compared struct {
	GridEntry
	// Goodput is the curve over the workloads, per SLA: the mean over the
	// experimenters (seeds).
	Goodput [][]float64
	// MaxGoodput is the curve's highest point and AtUsers its workload.
	MaxGoodput []float64
	AtUsers    []int
	// HalfWidth is the half-width of each point of Goodput's 95% interval
	// (0 where the runner gave bare means), MaxHalfWidth MaxGoodput's.
	HalfWidth    [][]float64
	MaxHalfWidth []float64
	// Ratio is MaxGoodput over the best allocation's.
	Ratio []float64
	// Indistinguishable says the allocation's maximum goodput cannot be
	// told from the best's at the intervals' confidence (the best itself
	// included): any of them could be the grid's best.
	Indistinguishable []bool
}

// MaxInterval is the maximum goodput at SLA index s with its interval.
func (c Compared) MaxInterval(s int) Interval { return Interval{c.MaxGoodput[s], c.MaxHalfWidth[s]} }

// Comparison is every allocation's goodput over the workloads.
//
// The best is the highest maximum goodput; an allocation whose maximum's
// interval overlaps the best's by more than their difference's half-width
// is Indistinguishable from it. The maximum of noisy curves is biased up
// (the more so the noisier), which is why an interval, not the ratio
// alone, says whether an allocation lost.
type Comparison struct {
	Options CompareOptions
	Entries []Compared
	// Best is, per SLA, the index of the entry with the highest maximum
	// goodput (the first of equals).
	Best []int
	// Experiments is what the comparison ran, per experimenter: a trial
	// the screening measured again counts each time, an allocation in two
	// roles once.
	Experiments int
}

// Compare runs every allocation of the grid at every workload on each
// experimenter (one per seed, say) and compares their maximum goodput.
// Adaptive trials are held to the precision on throughput and goodput
// alone (Timing.GoodputOnly), and screened (CompareOptions.Screening).
func Compare(ctx context.Context, xs []Experimenter, d Deployment, grid []GridEntry, o CompareOptions) (Comparison, error) {
	cmp := Comparison{Options: o, Entries: make([]Compared, len(grid))}
	if len(xs) == 0 || len(grid) == 0 || len(o.Workloads) == 0 || len(o.SLAs) == 0 {
		return cmp, errors.New("compare: want at least one experimenter, allocation, workload and SLA")
	}
	nw := len(o.Workloads)
	// A comparison reads goodput at its thresholds and nothing else, so
	// only that need be precise.
	timing := o.Timing
	if timing.Adaptive() {
		timing.GoodputOnly, timing.SLAs = true, o.SLAs
	}
	var exps []Experiment
	for i, g := range grid {
		cmp.Entries[i] = NewCompared(g, len(o.SLAs), nw)
		for _, u := range o.Workloads {
			exps = append(exps, Experiment{Deployment: d, Allocation: g.Allocation, Workload: Workload{Users: u}, Timing: timing})
		}
	}
	if timing.Adaptive() {
		for range o.Screening {
			if exps[0].Timing.Precision*2 > maxScreeningPrecision {
				break
			}
			for j := range exps {
				exps[j].Timing.Precision *= 2
			}
		}
	}
	obs := make([][]Observation, len(xs))
	for xi := range xs {
		obs[xi] = make([]Observation, len(exps))
	}
	for todo := seq(len(exps)); len(todo) > 0; todo = cmp.remeasure(exps, obs, timing.Precision) {
		batch, slot := distinct(exps, todo)
		for xi, x := range xs {
			got, err := RunAll(ctx, x, batch, o.Parallel)
			if err != nil {
				return cmp, err
			}
			for k, j := range todo {
				obs[xi][j] = got[slot[k]]
			}
		}
		cmp.Experiments += len(batch)
		cmp.fill(obs)
	}
	cmp.Rank()
	return cmp, nil
}

// Rank sets, from the entries' curves (Goodput and HalfWidth), each
// entry's maximum, the best entry at each SLA, and every entry's ratio to
// it and whether it can be told from it. Compare ranks what it measured;
// a caller that holds curves measured elsewhere (a reference's grid, with
// allocations measured since at the same workloads and timing) ranks them
// together with this.
func (cmp *Comparison) Rank() {
	cmp.Best = make([]int, len(cmp.Options.SLAs))
	for i := range cmp.Entries {
		cmp.Entries[i].setMax(cmp.Options.Workloads)
	}
	for s := range cmp.Options.SLAs {
		best := cmp.best(s)
		cmp.Best[s] = best
		for i := range cmp.Entries {
			e := &cmp.Entries[i]
			e.Ratio[s] = 0
			if top := cmp.Entries[best].MaxGoodput[s]; top > 0 {
				e.Ratio[s] = e.MaxGoodput[s] / top
			}
			e.Indistinguishable[s] = e.MaxInterval(s).Versus(cmp.Entries[best].MaxInterval(s)) != Below
		}
	}
}

// NewCompared is an entry of a comparison over nw workloads and nslas
// thresholds, its curves still zero.
func NewCompared(g GridEntry, nslas, nw int) Compared {
	c := Compared{GridEntry: g, Goodput: make([][]float64, nslas), HalfWidth: make([][]float64, nslas),
		MaxGoodput: make([]float64, nslas), MaxHalfWidth: make([]float64, nslas), AtUsers: make([]int, nslas),
		Ratio: make([]float64, nslas), Indistinguishable: make([]bool, nslas)}
	for s := range nslas {
		c.Goodput[s] = make([]float64, nw)
		c.HalfWidth[s] = make([]float64, nw)
	}
	return c
}

// setMax sets the maximum of each curve, its workload and its half-width.
func (e *Compared) setMax(workloads []int) {
	for s := range e.Goodput {
		e.MaxGoodput[s], e.AtUsers[s], e.MaxHalfWidth[s] = 0, 0, 0
		for k, m := range e.Goodput[s] {
			if m > e.MaxGoodput[s] {
				e.MaxGoodput[s], e.AtUsers[s], e.MaxHalfWidth[s] = m, workloads[k], e.HalfWidth[s][k]
			}
		}
	}
}

// maxScreeningPrecision bounds the screening's first precision: wider
// intervals would tell nothing apart.
const maxScreeningPrecision = 0.25

// distinct is the experiments exps[todo] once each, and where each of
// todo's is among them: an allocation that fills two roles (the two
// readings of minJobs may agree, or a named one may be in the grid) is
// measured once per workload and precision.
func distinct(exps []Experiment, todo []int) ([]Experiment, []int) {
	var batch []Experiment
	slot := make([]int, len(todo))
	seen := map[string]int{}
	for k, j := range todo {
		e := exps[j]
		b, ok := seen[e.key()]
		if !ok {
			b = len(batch)
			seen[e.key()] = b
			batch = append(batch, e)
		}
		slot[k] = b
	}
	return batch, slot
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// fill sets every entry's goodput curves and their maxima from the
// observations, obs[experimenter][entry x workloads + workload].
func (cmp *Comparison) fill(obs [][]Observation) {
	nw, n := len(cmp.Options.Workloads), float64(len(obs))
	for i := range cmp.Entries {
		e := &cmp.Entries[i]
		for s, sla := range cmp.Options.SLAs {
			for k := range nw {
				// The mean over experimenters of independent estimates:
				// its half-width is the root of the summed squares over n.
				var m, h2 float64
				for _, ob := range obs {
					g := ob[i*nw+k].GoodputInterval(sla)
					m += g.Mean / n
					h2 += g.HalfWidth * g.HalfWidth
				}
				e.Goodput[s][k], e.HalfWidth[s][k] = m, math.Sqrt(h2)/n
			}
		}
		e.setMax(cmp.Options.Workloads)
	}
}

// best is the entry with the highest maximum goodput at SLA index s, the
// first of equals.
func (cmp *Comparison) best(s int) int {
	best := 0
	for i := range cmp.Entries {
		if cmp.Entries[i].MaxGoodput[s] > cmp.Entries[best].MaxGoodput[s] {
			best = i
		}
	}
	return best
}

// remeasure picks the trials of a screening to measure again at half their
// precision: those not yet at the precision asked (a named allocation's:
// NamedPrecision's, if finer), measured to the one they were asked (a trial
// that ran to its longest window would only do so again), that at some SLA
// are not Below the grid's best maximum (they could be it; down to the
// precision asked) or, for a named allocation, not Below its own maximum
// (they could be what its ratio is read from). The others keep their
// coarser interval: the comparison holds them below the best at 95%, as it
// would at the precision asked.
func (cmp *Comparison) remeasure(exps []Experiment, obs [][]Observation, precision float64) []int {
	nw := len(cmp.Options.Workloads)
	top := make([]Interval, len(cmp.Options.SLAs))
	for s := range top {
		top[s] = cmp.Entries[cmp.best(s)].MaxInterval(s)
	}
	var out []int
	for j := range exps {
		t := exps[j].Timing
		e := &cmp.Entries[j/nw]
		named := e.Role != RoleGrid
		finest := precision
		if np := cmp.Options.NamedPrecision; named && np > 0 {
			finest = min(finest, np)
		}
		if t.Precision <= finest {
			continue
		}
		measured := true
		for _, ob := range obs {
			measured = measured && refinable(ob[j], t)
		}
		if !measured {
			continue
		}
		contends := false
		for s := range cmp.Options.SLAs {
			at := Interval{e.Goodput[s][j%nw], e.HalfWidth[s][j%nw]}
			ownMax := named && at.Versus(e.MaxInterval(s)) != Below
			if ownMax || t.Precision > precision && at.Versus(top[s]) != Below {
				contends = true
				break
			}
		}
		if contends {
			exps[j].Timing.Precision = max(t.Precision/2, finest)
			out = append(out, j)
		}
	}
	return out
}

// RunAll runs independent experiments, at most parallel at once, and returns
// the observations in the order of exps. Each experiment's result depends on
// the experiment alone, so the numbers equal a serial run's.
func RunAll(ctx context.Context, x Experimenter, exps []Experiment, parallel int) ([]Observation, error) {
	obs := make([]Observation, len(exps))
	err := ForEach(ctx, max(parallel, 1), len(exps), func(ctx context.Context, i int) error {
		var err error
		if obs[i], err = x.RunExperiment(ctx, exps[i]); err != nil {
			return fmt.Errorf("%s at %d users: %w", exps[i].Allocation, exps[i].Workload.Users, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return obs, nil
}

// ForEach calls f(ctx, i) for every i in [0, n), at most parallel at once
// (0 or less: GOMAXPROCS; 1: in order, in the caller's goroutine, so that a
// caller that reads its own thread's CPU time counts the work). Each call
// writes its own results, so they do not depend on the schedule. A failure
// cancels the calls still running; ForEach returns the failure of the
// lowest index that is not a cancellation (the one that cancelled the
// others), else the lowest, else the context's error if the caller
// cancelled.
func ForEach(ctx context.Context, parallel, n int, f func(context.Context, int) error) error {
	if parallel <= 0 {
		parallel = runtime.GOMAXPROCS(0)
	}
	if parallel == 1 {
		for i := range n {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := f(ctx, i); err != nil {
				return err
			}
		}
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(parallel, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if errs[i] = f(ctx, i); errs[i] != nil {
					cancel()
				}
			}
		}()
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	var first error
	for _, err := range errs {
		if err != nil && (first == nil || errors.Is(first, context.Canceled) && !errors.Is(err, context.Canceled)) {
			first = err
		}
	}
	if first != nil {
		return first
	}
	// No call failed, yet the context ended: the caller cancelled.
	return ctx.Err()
}
