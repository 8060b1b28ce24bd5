package algorithms

import (
	"context"
	"fmt"
)

// ClassPoolOptions tune RecommendClassPools.
type ClassPoolOptions struct {
	// Levels of the swept best-effort class's users for the degradation
	// schemes (default: 0 to its load in about 8 steps).
	Levels []int
	// Parallel trials at once (default GOMAXPROCS); the numbers do not
	// depend on it.
	Parallel int
}

// ClassPoolRecommendation is per-class pool sizes that keep every class with
// an objective at it under the workload's load, and what they cost the
// best-effort classes.
type ClassPoolRecommendation struct {
	Workload string
	// Critical is the hardware resource that saturates at the load.
	Critical ClassCritical
	// SharedPool is the size of the workload's (first) shared pool.
	SharedPool int
	Classes    []ClassPool
	// Swept is the best-effort class raised in Schemes, the degradation
	// schemes of the shared pool and of the recommended pools ("" and none
	// when every class has an objective).
	Swept    string
	Schemes  []DegradationScheme
	Warnings []string
}

// ClassCritical is the saturated hardware resource of a class workload.
type ClassCritical struct {
	// Resource is "cpu", or "none" when the CPU is not saturated.
	Resource    string
	Cores       int
	Utilization float64
}

// ClassPool is one class's recommended pool and its outcomes.
type ClassPool struct {
	Name string
	// Objective reads "adequacy >= A within Ls" or "best effort".
	Objective string
	Users     int
	// MinJobs is the fewest threads with which the class alone keeps 95%
	// of its throughput: the concurrency the critical resource needs from
	// it (0 for open arrivals).
	MinJobs int
	Pool    int
	// Shared is the class in the workload's shared pool, Recommended with
	// the recommended pools, both at the workload's load.
	Shared      ClassOutcome
	Recommended ClassOutcome
}

// ClassOutcome is a class under one configuration at the workload's load.
type ClassOutcome struct {
	Throughput   float64
	Adequacy     float64
	ResponseTime float64
	P90          float64
	// Met says the class's objective holds (true for best effort).
	Met bool
}

// Share of a class's full throughput that its minJobs threads must keep.
const minJobsShare = 0.95

// Utilisation below which the CPU is not the critical resource.
const saturatedCPU = 0.9

// RecommendClassPools sizes per-class pools on the critical resource:
// classes with an objective keep a pool as large as the shared one, and the
// best-effort classes get one pool size (the same for each): the largest with
// which every objective still holds at the workload's load, found by
// bisection on trials (so it assumes objectives only get harder as
// best-effort pools grow), or a smaller one on the way to it that serves the
// best-effort classes more (a tight heap: fewer threads, less collection).
func RecommendClassPools(ctx context.Context, x ClassExperimenter, w ClassWorkload, o ClassPoolOptions) (ClassPoolRecommendation, error) {
	if err := w.Validate(); err != nil {
		return ClassPoolRecommendation{}, err
	}
	rec := ClassPoolRecommendation{Workload: w.Name, SharedPool: w.SharedPool, Warnings: []string{}}
	var best []string
	for _, k := range w.Classes {
		if !k.HasObjective() {
			best = append(best, k.Name)
		}
	}
	if len(best) == len(w.Classes) {
		return rec, ErrNoClassObjective
	}
	trials := classTrials{x, w}
	shared, err := trials.run(ctx, "class pools", ClassTrial{})
	if err != nil {
		return rec, err
	}
	rec.Critical = ClassCritical{Resource: "cpu", Cores: w.Cores, Utilization: shared.CPU}
	if shared.CPU < saturatedCPU {
		rec.Critical.Resource = "none"
		rec.Warnings = append(rec.Warnings, fmt.Sprintf("the CPU is %.0f%% busy at this load: nothing saturates, so pools are not the lever", 100*shared.CPU))
	}

	// minJobs: the fewest threads with which each closed class alone keeps
	// 95% of its throughput.
	minJobs := make([]int, len(w.Classes))
	err = ForEach(ctx, o.Parallel, len(w.Classes), func(ctx context.Context, i int) error {
		k := w.Classes[i]
		if k.Open || k.StartUsers == 0 {
			return nil
		}
		n, err := minThreads(ctx, trials, k)
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
		if k.Open {
			fill = rec.SharedPool
		}
		fill = max(fill, k.EndUsers)
	}
	upper := max(1, min(rec.SharedPool, fill))
	setup := func(p int) ClassSetup {
		s := ClassSetup{Label: "per-class pools", PerClassPools: true, PoolSizes: map[string]int{}}
		for _, n := range best {
			s.PoolSizes[n] = p
		}
		return s
	}
	trial := func(ctx context.Context, p int) (ClassObservation, bool, error) {
		r, err := trials.run(ctx, "class pools", ClassTrial{Setup: setup(p)})
		return r, objectivesMet(w, r), err
	}
	p := upper
	r, ok, err := trial(ctx, p)
	if err != nil {
		return rec, err
	}
	if !ok && len(best) > 0 {
		lo, hi := 1, upper // invariant: hi misses; lo holds once checked
		var rlo ClassObservation
		if rlo, ok, err = trial(ctx, lo); err != nil {
			return rec, err
		}
		if !ok {
			rec.Warnings = append(rec.Warnings, "even one thread for the best-effort classes misses an objective: pools cannot do it on this policy (try strict priority or weighted share)")
		}
		for ok && hi-lo > 1 {
			mid := (lo + hi) / 2
			rm, okm, err := trial(ctx, mid)
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
	for i, k := range w.Classes {
		cp := ClassPool{Name: k.Name, Objective: "best effort", Users: k.StartUsers, MinJobs: minJobs[i], Pool: rec.SharedPool}
		if k.HasObjective() {
			cp.Objective = fmt.Sprintf("adequacy >= %g within %gs", k.Adequacy, k.LimitSeconds)
		} else {
			cp.Pool = p
			if minJobs[i] > p {
				rec.Warnings = append(rec.Warnings, fmt.Sprintf("%s's pool of %d is below the %d threads it needs alone to keep the CPU busy", k.Name, p, minJobs[i]))
			}
		}
		cp.Shared = outcome(k, shared.Class(k.Name))
		cp.Recommended = outcome(k, r.Class(k.Name))
		rec.Classes = append(rec.Classes, cp)
	}
	if len(best) == 0 {
		return rec, nil
	}

	// The degradation schemes: the first best-effort class raised from 0
	// to its load, the shared pool against the recommended pools.
	rec.Swept = best[0]
	swept := w.Class(rec.Swept)
	levels := o.Levels
	if len(levels) == 0 {
		top := swept.StartUsers
		step := max(1, (top+7)/8)
		for l := 0; l < top; l += step {
			levels = append(levels, l)
		}
		levels = append(levels, top)
	}
	if swept.Open || swept.Ramp {
		rec.Warnings = append(rec.Warnings, fmt.Sprintf("%s has open arrivals or a ramp: no degradation scheme", rec.Swept))
		return rec, nil
	}
	rec.Schemes, err = DegradationSchemes(ctx, x, w, DegradationOptions{
		Classes: defaultDegradationClasses(w, rec.Swept, nil), Swept: rec.Swept, Levels: levels, Parallel: o.Parallel,
		Setups: []ClassSetup{{Label: fmt.Sprintf("shared pool of %d", rec.SharedPool)}, setup(p)},
	})
	return rec, err
}

// mostThroughput looks below the largest feasible best-effort pool, on a
// geometric grid, for the feasible pool under which the best-effort classes
// complete the most requests; the largest within 1% of that wins, so that
// on the CPU alone (where more threads never serve them less) the answer
// stays the largest pool.
func mostThroughput(ctx context.Context, parallel int, best []string, largest int, at ClassObservation,
	trial func(context.Context, int) (ClassObservation, bool, error)) (int, ClassObservation, error) {
	served := func(r ClassObservation) float64 {
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
	results := make([]ClassObservation, len(sizes))
	feasible := make([]bool, len(sizes))
	err := ForEach(ctx, parallel, len(sizes), func(ctx context.Context, i int) error {
		var err error
		results[i], feasible[i], err = trial(ctx, sizes[i])
		return err
	})
	if err != nil {
		return 0, ClassObservation{}, err
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
func objectivesMet(w ClassWorkload, r ClassObservation) bool {
	for _, k := range w.Classes {
		if k.HasObjective() && !(r.Class(k.Name).Adequacy >= k.Adequacy) {
			return false
		}
	}
	return true
}

func outcome(k ServiceClass, c ClassMeasurement) ClassOutcome {
	o := ClassOutcome{Throughput: c.Throughput, Adequacy: c.Adequacy, ResponseTime: c.ResponseTime, P90: c.P90, Met: true}
	if k.HasObjective() {
		o.Met = c.Adequacy >= k.Adequacy
	}
	return o
}

// minThreads is the fewest threads with which class k alone keeps 95% of
// the throughput it has with as many threads as users (bisection).
func minThreads(ctx context.Context, trials classTrials, k ServiceClass) (int, error) {
	users := k.StartUsers
	alone := func(p int) (float64, error) {
		r, err := trials.run(ctx, "class pools: minJobs", ClassTrial{
			Setup: ClassSetup{PerClassPools: true, PoolSizes: map[string]int{k.Name: p}},
			Users: map[string]int{k.Name: users},
		})
		if err != nil {
			return 0, err
		}
		return r.Class(k.Name).Throughput, nil
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
		if x >= minJobsShare*full {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, nil
}
