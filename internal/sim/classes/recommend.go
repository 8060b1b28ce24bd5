package classes

import (
	"context"
	"errors"
	"fmt"
)

// RecommendOptions tune Recommend.
type RecommendOptions struct {
	// Levels of the swept best-effort class's users for the degradation
	// schemes (default: 0 to its load in about 8 steps).
	Levels []int
	Seed   uint64
	// Parallel trials at once (default GOMAXPROCS).
	Parallel int
}

// Recommendation is per-class pool sizes that keep every class with an
// objective at it under the workload's load, and what they cost the
// best-effort classes.
type Recommendation struct {
	Workload string `json:"workload"`
	// Critical is the hardware resource that saturates at the load.
	Critical Critical `json:"critical"`
	// SharedPool is the size of the workload's (first) shared pool.
	SharedPool int                   `json:"sharedPool"`
	Classes    []ClassRecommendation `json:"classes"`
	// Swept is the best-effort class raised in Schemes, the degradation
	// schemes of the shared pool and of the recommended pools.
	Swept    string   `json:"swept"`
	Schemes  []Scheme `json:"schemes"`
	Warnings []string `json:"warnings"`
}

// Critical is the saturated hardware resource.
type Critical struct {
	// Resource is "cpu", or "none" when the CPU is not saturated.
	Resource    string  `json:"resource"`
	Cores       int     `json:"cores"`
	Utilization float64 `json:"utilization"`
}

// ClassRecommendation is one class's pool and outcomes.
type ClassRecommendation struct {
	Name      string `json:"name"`
	Objective string `json:"objective"`
	Users     int    `json:"users"`
	// MinJobs is the fewest threads with which the class alone keeps 95%
	// of its throughput: the concurrency the critical resource needs from
	// it (0 for open arrivals).
	MinJobs     int     `json:"minJobs"`
	Pool        int     `json:"pool"`
	Shared      Outcome `json:"shared"`
	Recommended Outcome `json:"recommended"`
}

// Outcome is a class under one configuration at the workload's load.
type Outcome struct {
	Throughput   float64 `json:"throughput"`
	Adequacy     float64 `json:"adequacy"`
	ResponseTime float64 `json:"responseTime"`
	P90          float64 `json:"p90"`
	// Met says the class's objective holds (true for best effort).
	Met bool `json:"met"`
}

// ErrNoObjective is returned when no class states an objective.
var ErrNoObjective = errors.New("no class has an objective (objective: {adequacy: 0.9})")

func hasObjective(k *Class) bool { return k.Objective != nil && !k.Objective.BestEffort }

// Recommend sizes per-class pools on the critical resource: classes with an
// objective keep a pool as large as the shared one, and the best-effort
// classes get one pool size (the same for each): the largest with which
// every objective still holds at the workload's load, found by bisection on
// simulated trials (so it assumes objectives only get harder as best-effort
// pools grow), or a smaller one on the way to it that serves the best-effort
// classes more (a tight heap: fewer threads, less collection).
func Recommend(ctx context.Context, w *Workload, o RecommendOptions) (Recommendation, error) {
	if err := w.Validate(); err != nil {
		return Recommendation{}, err
	}
	rec := Recommendation{Workload: w.Name, SharedPool: w.Server.Pools[0].Size, Warnings: []string{}}
	var best []string
	for i := range w.Classes {
		k := &w.Classes[i]
		if !hasObjective(k) {
			best = append(best, k.Name)
		}
	}
	if len(best) == len(w.Classes) {
		return rec, ErrNoObjective
	}
	run := func(ctx context.Context, c *Workload) (Result, error) { return Simulate(ctx, c, o.Seed) }
	shared, err := run(ctx, w)
	if err != nil {
		return rec, err
	}
	rec.Critical = Critical{Resource: "cpu", Cores: w.Server.Cores, Utilization: shared.CPU}
	if shared.CPU < 0.9 {
		rec.Critical.Resource = "none"
		rec.Warnings = append(rec.Warnings, fmt.Sprintf("the CPU is %.0f%% busy at this load: nothing saturates, so pools are not the lever", 100*shared.CPU))
	}

	// minJobs: the fewest threads with which each closed class alone keeps
	// 95% of its throughput.
	minJobs := make([]int, len(w.Classes))
	err = runAll(ctx, o.Parallel, len(w.Classes), func(ctx context.Context, i int) error {
		k := &w.Classes[i]
		if k.Load.Arrivals != nil || k.Load.Concurrency(0) == 0 {
			return nil
		}
		n, err := minThreads(ctx, w, k.Name, o.Seed)
		minJobs[i] = n
		return err
	})
	if err != nil {
		return rec, err
	}

	// The largest best-effort pool that keeps every objective: no more
	// than the shared pool, nor than the best-effort users can fill.
	fill := 0
	for _, n := range best {
		k := w.Class(n)
		if k.Load.Arrivals != nil {
			fill = rec.SharedPool
		}
		fill = max(fill, k.Load.Concurrency(float64(w.Run.WarmUp+w.Run.Duration)))
	}
	upper := max(1, min(rec.SharedPool, fill))
	setup := func(p int) Setup {
		s := Setup{Label: "per-class pools", PerClassPools: true, PoolSizes: map[string]int{}}
		for _, n := range best {
			s.PoolSizes[n] = p
		}
		return s
	}
	trial := func(p int) (Result, bool, error) {
		c, err := setup(p).Apply(w)
		if err != nil {
			return Result{}, false, err
		}
		r, err := run(ctx, c)
		return r, objectivesMet(w, r), err
	}
	p := upper
	r, ok, err := trial(p)
	if err != nil {
		return rec, err
	}
	if !ok && len(best) > 0 {
		lo, hi := 1, upper // invariant: hi misses; lo holds once checked
		var rlo Result
		if rlo, ok, err = trial(lo); err != nil {
			return rec, err
		}
		if !ok {
			rec.Warnings = append(rec.Warnings, "even one thread for the best-effort classes misses an objective: pools cannot do it on this policy (try strict priority or weighted share)")
		}
		for ok && hi-lo > 1 {
			mid := (lo + hi) / 2
			rm, okm, err := trial(mid)
			if err != nil {
				return rec, err
			}
			if okm {
				lo, rlo = mid, rm
			} else {
				hi = mid
			}
		}
		p, r = lo, rlo
	}
	if ok && len(best) > 0 && p > 1 {
		if p, r, err = mostThroughput(ctx, o.Parallel, best, p, r, trial); err != nil {
			return rec, err
		}
	}
	for i := range w.Classes {
		k := &w.Classes[i]
		cr := ClassRecommendation{Name: k.Name, Objective: "best effort", Users: k.Load.Concurrency(0), MinJobs: minJobs[i], Pool: rec.SharedPool}
		if hasObjective(k) {
			cr.Objective = fmt.Sprintf("adequacy >= %g within %gs", k.Objective.Adequacy, float64(k.Limit))
		} else {
			cr.Pool = p
			if minJobs[i] > p {
				rec.Warnings = append(rec.Warnings, fmt.Sprintf("%s's pool of %d is below the %d threads it needs alone to keep the CPU busy", k.Name, p, minJobs[i]))
			}
		}
		cr.Shared = outcome(k, shared.Class(k.Name))
		cr.Recommended = outcome(k, r.Class(k.Name))
		rec.Classes = append(rec.Classes, cr)
	}
	if len(best) == 0 {
		return rec, nil
	}

	// The degradation schemes: the first best-effort class raised from 0
	// to its load, the shared pool against the recommended pools.
	rec.Swept = best[0]
	levels := o.Levels
	if len(levels) == 0 {
		top := w.Class(rec.Swept).Load.Concurrency(0)
		step := max(1, (top+7)/8)
		for l := 0; l < top; l += step {
			levels = append(levels, l)
		}
		levels = append(levels, top)
	}
	var names []string
	for _, k := range w.Classes {
		if k.Name == rec.Swept || (k.Load.Arrivals == nil && k.Load.Ramp == nil && k.Load.Users > 0) {
			names = append(names, k.Name)
		}
	}
	if w.Class(rec.Swept).Load.Arrivals != nil || w.Class(rec.Swept).Load.Ramp != nil {
		rec.Warnings = append(rec.Warnings, fmt.Sprintf("%s has open arrivals or a ramp: no degradation scheme", rec.Swept))
		return rec, nil
	}
	rec.Schemes, err = Degradation(ctx, w, DegradationOptions{
		Classes: names, Swept: rec.Swept, Levels: levels, Seed: o.Seed, Parallel: o.Parallel,
		Setups: []Setup{{Label: fmt.Sprintf("shared pool of %d", rec.SharedPool)}, setup(p)},
	})
	return rec, err
}

// mostThroughput looks below the largest feasible best-effort pool, on a
// geometric grid, for the feasible pool under which the best-effort classes
// complete the most requests; the largest within 1% of that wins, so that
// on the CPU alone (where more threads never serve them less) the answer
// stays the largest pool.
func mostThroughput(ctx context.Context, parallel int, best []string, largest int, at Result,
	trial func(int) (Result, bool, error)) (int, Result, error) {
	served := func(r Result) float64 {
		var x float64
		for _, n := range best {
			x += r.Class(n).Throughput
		}
		return x
	}
	var sizes []int
	for p := 1; p < largest; p = max(p+1, p*3/2) {
		sizes = append(sizes, p)
	}
	results := make([]Result, len(sizes))
	feasible := make([]bool, len(sizes))
	err := runAll(ctx, parallel, len(sizes), func(_ context.Context, i int) error {
		var err error
		results[i], feasible[i], err = trial(sizes[i])
		return err
	})
	if err != nil {
		return 0, Result{}, err
	}
	top := served(at)
	for i := range sizes {
		if feasible[i] {
			top = max(top, served(results[i]))
		}
	}
	if served(at) >= 0.99*top {
		return largest, at, nil
	}
	for i := len(sizes) - 1; i >= 0; i-- {
		if feasible[i] && served(results[i]) >= 0.99*top {
			return sizes[i], results[i], nil
		}
	}
	return largest, at, nil
}

// objectivesMet says every class with an objective meets it in r.
func objectivesMet(w *Workload, r Result) bool {
	for i := range w.Classes {
		k := &w.Classes[i]
		if hasObjective(k) && !(r.Class(k.Name).Adequacy >= k.Objective.Adequacy) {
			return false
		}
	}
	return true
}

func outcome(k *Class, c *ClassResult) Outcome {
	o := Outcome{Throughput: c.Throughput, Adequacy: c.Adequacy, ResponseTime: c.ResponseTime, P90: c.P90, Met: true}
	if hasObjective(k) {
		o.Met = c.Adequacy >= k.Objective.Adequacy
	}
	return o
}

// minThreads is the fewest threads with which class name alone keeps 95% of
// the throughput it has with as many threads as users (bisection).
func minThreads(ctx context.Context, w *Workload, name string, seed uint64) (int, error) {
	users := w.Class(name).Load.Concurrency(0)
	alone := func(p int) (float64, error) {
		c, err := Setup{PerClassPools: true, PoolSizes: map[string]int{name: p}}.Apply(withUsers(w, map[string]int{name: users}))
		if err != nil {
			return 0, err
		}
		r, err := Simulate(ctx, c, seed)
		if err != nil {
			return 0, err
		}
		return r.Class(name).Throughput, nil
	}
	full, err := alone(users)
	if err != nil || full == 0 {
		return users, err
	}
	lo, hi := 0, users // lo falls short (0 threads: nothing), hi keeps it
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		x, err := alone(mid)
		if err != nil {
			return 0, err
		}
		if x >= 0.95*full {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, nil
}
