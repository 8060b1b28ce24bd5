package algorithms_test

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
)

var heavyLevels = []int{0, 5, 10, 20, 40}

func degradation(t *testing.T, s *classServer, setups ...algorithms.ClassSetup) []algorithms.DegradationScheme {
	t.Helper()
	schemes, err := algorithms.DegradationSchemes(context.Background(), s, s.workload(), algorithms.DegradationOptions{
		Classes: []string{"light", "heavy"}, Swept: "heavy", Levels: heavyLevels, Setups: setups,
	})
	require.NoError(t, err)
	require.Len(t, schemes, max(1, len(setups)))
	return schemes
}

// Under processor sharing every job gets an equal share: with 30 light and h
// heavy jobs on 4 busy cores, light keeps 30/(30+h) of its solo throughput
// and heavy 4h/((30+h) min(h, 4)) of its own.
func TestDegradationSchemesProcessorSharing(t *testing.T) {
	s := seed000Fake()
	sc := degradation(t, s)[0]
	assert.Equal(t, "file", sc.Setup)
	require.Len(t, sc.Points, len(heavyLevels))
	for i, p := range sc.Points {
		h := float64(heavyLevels[i])
		assert.Equal(t, heavyLevels[i], p.Level)
		light, heavy := p.Class("light"), p.Class("heavy")
		assert.Equal(t, 30, light.Users)
		assert.Equal(t, heavyLevels[i], heavy.Users)
		assert.InDelta(t, 4/0.0039, light.Solo, 1e-9)
		assert.InDelta(t, 1-30/(30+h), light.Drop, 1e-12, "%g heavy", h)
		assert.InDelta(t, 1.0, p.CPU, 1e-12)
		if h == 0 {
			assert.Zero(t, heavy.Solo)
			assert.Zero(t, heavy.Drop, "no solo throughput: no drop")
			continue
		}
		assert.InDelta(t, math.Min(h, 4)/0.4, heavy.Solo, 1e-9)
		assert.InDelta(t, 1-4*h/((30+h)*math.Min(h, 4)), heavy.Drop, 1e-12, "%g heavy", h)
		assert.InDelta(t, heavy.Throughput*heavy.Adequacy, heavy.Goodput, 1e-9)
	}
	// Per setup: each held class alone, then the swept class alone and the
	// mix at each level.
	assert.Equal(t, int64(1+2*len(heavyLevels)), s.trials.Load())
}

// Each setup is its own scheme: a weighted share W keeps light at W of the
// cores, strict priority on per-class pools keeps light whole and starves
// heavy (30 light jobs fill 4 cores).
func TestDegradationSchemesCompareSetups(t *testing.T) {
	s := seed000Fake()
	schemes := degradation(t, s,
		algorithms.ClassSetup{Policy: algorithms.PolicyWeighted, Weights: map[string]float64{"light": 0.8, "heavy": 0.2}},
		algorithms.ClassSetup{Policy: algorithms.PolicyPriority, PerClassPools: true, Priorities: map[string]int{"light": 1}},
	)
	assert.Equal(t, "weighted", schemes[0].Setup)
	assert.Equal(t, "priority per-class pools", schemes[1].Setup)
	last := len(heavyLevels) - 1
	assert.InDelta(t, 0.2, schemes[0].Points[last].Class("light").Drop, 1e-9)
	prio := schemes[1].Points[last]
	assert.InDelta(t, 0, prio.Class("light").Drop, 1e-12)
	assert.Zero(t, prio.Class("heavy").Throughput)
	assert.Positive(t, prio.Class("heavy").Solo)
	assert.Equal(t, int64(2*(1+2*len(heavyLevels))), s.trials.Load())
}

func TestDegradationSchemesDoNotDependOnParallel(t *testing.T) {
	s := seed000Fake()
	o := algorithms.DegradationOptions{Swept: "heavy", Levels: heavyLevels, Held: map[string]int{"light": 12},
		Setups: []algorithms.ClassSetup{{}, {Policy: algorithms.PolicyWeighted, Weights: map[string]float64{"light": 3}}}}
	o.Parallel = 1
	serial, err := algorithms.DegradationSchemes(context.Background(), s, s.workload(), o)
	require.NoError(t, err)
	o.Parallel = 8
	parallel, err := algorithms.DegradationSchemes(context.Background(), s, s.workload(), o)
	require.NoError(t, err)
	assert.Equal(t, serial, parallel)
	assert.Equal(t, 12, serial[0].Points[0].Class("light").Users, "held users override the workload's")
}

// Left out, the classes are the swept one, the held ones and every class
// with steady closed users, in the workload's order.
func TestDegradationSchemesDefaultClasses(t *testing.T) {
	s := seed000Fake()
	s.classes = append([]fakeClass{{name: "idle", demand: 0.1, limit: 1}, {name: "ramped", demand: 0.1, users: 5, limit: 1, ramp: true}},
		s.classes...)
	s.classes = append(s.classes, fakeClass{name: "middle", demand: 0.48, limit: 1})
	schemes, err := algorithms.DegradationSchemes(context.Background(), s, s.workload(), algorithms.DegradationOptions{
		Swept: "heavy", Levels: []int{10}, Held: map[string]int{"middle": 3},
	})
	require.NoError(t, err)
	var names []string
	for _, c := range schemes[0].Points[0].Classes {
		names = append(names, c.Name)
	}
	assert.Equal(t, []string{"light", "heavy", "middle"}, names)
}

func TestDegradationSchemesRejects(t *testing.T) {
	s := seed000Fake()
	s.classes = append(s.classes, fakeClass{name: "ramped", demand: 0.1, users: 5, limit: 1, ramp: true})
	for name, c := range map[string]struct {
		o    algorithms.DegradationOptions
		want string
	}{
		"unknown class": {algorithms.DegradationOptions{Classes: []string{"light", "nope"}, Swept: "light", Levels: []int{1}}, `class "nope": not in workload "seed000" (it has heavy, light, ramped)`},
		"twice":         {algorithms.DegradationOptions{Classes: []string{"light", "light"}, Swept: "light", Levels: []int{1}}, `class "light": named twice`},
		"ramp":          {algorithms.DegradationOptions{Classes: []string{"light", "ramped"}, Swept: "light", Levels: []int{1}}, `class "ramped": the degradation experiment holds closed users`},
		"swept absent":  {algorithms.DegradationOptions{Classes: []string{"light"}, Swept: "heavy", Levels: []int{1}}, `swept class "heavy": not among the classes light`},
		"no levels":     {algorithms.DegradationOptions{Classes: []string{"light", "heavy"}, Swept: "heavy"}, "no levels"},
		"held absent":   {algorithms.DegradationOptions{Classes: []string{"light", "heavy"}, Swept: "heavy", Levels: []int{1}, Held: map[string]int{"ramped": 1}}, `held class "ramped": not among the classes light,heavy`},
		"bad setup": {algorithms.DegradationOptions{Classes: []string{"light", "heavy"}, Swept: "heavy", Levels: []int{1},
			Setups: []algorithms.ClassSetup{{Policy: algorithms.PolicyWeighted, Weights: map[string]float64{"nope": 1}}}}, `setup "weighted": weight for "nope": no such class`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := algorithms.DegradationSchemes(context.Background(), s, s.workload(), c.o)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
	assert.Zero(t, s.trials.Load(), "no trial before the options are checked")
}

func TestDegradationSchemesReportTheFailedTrial(t *testing.T) {
	s := seed000Fake()
	s.fail = func(t algorithms.ClassTrial) bool { return t.Users["heavy"] == 10 && t.Users["light"] == 30 }
	_, err := algorithms.DegradationSchemes(context.Background(), s, s.workload(), algorithms.DegradationOptions{
		Swept: "heavy", Levels: heavyLevels, Parallel: 1,
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `degradation: trial on setup "file" with users heavy=10,light=30: fake: trial failed`)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = algorithms.DegradationSchemes(ctx, seed000Fake(), s.workload(), algorithms.DegradationOptions{Swept: "heavy", Levels: heavyLevels})
	assert.ErrorIs(t, err, context.Canceled)
}

// linuxFake is seed000-linux.yaml's question on the fake: light wants 90%
// of its responses within 100 ms, heavy is best effort.
func linuxFake() *classServer {
	s := seed000Fake()
	s.classes[0].limit, s.classes[0].adequacy = 0.1, 0.9
	return s
}

// With exponential responses, light meets its objective while its mean
// response, 3.9 ms x (30 + p) / 4 with p heavy threads, is within
// limit / ln 10: p <= 4 x 0.1 / (ln 10 x 3.9 ms) - 30, so 14 threads. Heavy
// is served more the more threads it has, so the largest wins.
func TestRecommendClassPoolsBisectsTheBestEffortPool(t *testing.T) {
	s := linuxFake()
	rec, err := algorithms.RecommendClassPools(context.Background(), s, s.workload(), algorithms.ClassPoolOptions{})
	require.NoError(t, err)
	largest := int(math.Floor(4*0.1/(math.Ln10*0.0039) - 30))
	require.Equal(t, 14, largest)
	assert.Equal(t, algorithms.ClassCritical{Resource: "cpu", Cores: 4, Utilization: 1}, rec.Critical)
	assert.Equal(t, 150, rec.SharedPool)
	require.Len(t, rec.Classes, 2)
	light, heavy := rec.Classes[0], rec.Classes[1]
	assert.Equal(t, "adequacy >= 0.9 within 0.1s", light.Objective)
	assert.Equal(t, "best effort", heavy.Objective)
	assert.Equal(t, 150, light.Pool)
	assert.Equal(t, largest, heavy.Pool)
	// minJobs: 95% of the throughput of 4 busy cores takes 4 threads.
	assert.Equal(t, int(math.Ceil(0.95*4)), light.MinJobs)
	assert.Equal(t, int(math.Ceil(0.95*4)), heavy.MinJobs)
	assert.False(t, light.Shared.Met)
	assert.True(t, light.Recommended.Met)
	assert.True(t, heavy.Shared.Met, "best effort always meets")
	assert.InDelta(t, 0.0039*(30+14)/4, light.Recommended.ResponseTime, 1e-12)
	assert.InDelta(t, light.Recommended.ResponseTime*math.Ln10, light.Recommended.P90, 1e-12)
	assert.Empty(t, rec.Warnings)
	assert.NotNil(t, rec.Warnings)

	// The schemes: heavy from 0 to 40 in steps of 5, shared against recommended.
	assert.Equal(t, "heavy", rec.Swept)
	require.Len(t, rec.Schemes, 2)
	assert.Equal(t, "shared pool of 150", rec.Schemes[0].Setup)
	assert.Equal(t, "per-class pools", rec.Schemes[1].Setup)
	require.Len(t, rec.Schemes[1].Points, 9)
	last := rec.Schemes[1].Points[8]
	assert.Equal(t, 40, last.Level)
	assert.InDelta(t, light.Recommended.Throughput, last.Class("light").Throughput, 1e-9, "the scheme's last point is the recommendation")
}

func TestRecommendClassPoolsDoesNotDependOnParallel(t *testing.T) {
	s := linuxFake()
	serial, err := algorithms.RecommendClassPools(context.Background(), s, s.workload(), algorithms.ClassPoolOptions{Parallel: 1})
	require.NoError(t, err)
	parallel, err := algorithms.RecommendClassPools(context.Background(), s, s.workload(), algorithms.ClassPoolOptions{Parallel: 8})
	require.NoError(t, err)
	assert.Equal(t, serial, parallel)
}

// When memory is the waste, fewer heavy threads serve heavy more: 20 MB per
// heavy request in a 1 GB heap makes the collector costlier the more are
// live, so the answer is below the largest pool that keeps light's
// objective, near the peak of heavy's throughput.
func TestRecommendClassPoolsPrefersThePoolThatServesBestEffortMost(t *testing.T) {
	s := linuxFake()
	s.classes[0].limit = 0.5
	s.heap, s.base, s.gcCost = 1<<30, 128<<20, 0.5
	s.classes[0].memory, s.classes[1].memory = 1<<20, 20<<20
	heavyAt := func(p int) (float64, bool) {
		o, err := s.RunClassTrial(context.Background(), algorithms.ClassTrial{Setup: algorithms.ClassSetup{PerClassPools: true, PoolSizes: map[string]int{"heavy": p}}})
		require.NoError(t, err)
		return o.Class("heavy").Throughput, o.Class("light").Adequacy >= 0.9
	}
	largest, peak := 0, 0.0
	for p := 1; p <= 40; p++ {
		x, ok := heavyAt(p)
		if ok {
			largest, peak = p, max(peak, x)
		}
	}
	rec, err := algorithms.RecommendClassPools(context.Background(), s, s.workload(), algorithms.ClassPoolOptions{})
	require.NoError(t, err)
	heavy := rec.Classes[1]
	atLargest, _ := heavyAt(largest)
	require.Less(t, atLargest, 0.99*peak, "the fake must peak below the largest feasible pool")
	assert.Less(t, heavy.Pool, largest)
	assert.Greater(t, heavy.Recommended.Throughput, atLargest)
	assert.GreaterOrEqual(t, heavy.Recommended.Throughput, 0.95*peak, "on the x1.5 grid, near the peak")
	assert.True(t, rec.Classes[0].Recommended.Met)
}

func TestRecommendClassPoolsWarns(t *testing.T) {
	t.Run("impossible objective", func(t *testing.T) {
		s := linuxFake()
		s.classes[0].limit = 0.02 // light alone answers in 29 ms on average
		rec, err := algorithms.RecommendClassPools(context.Background(), s, s.workload(), algorithms.ClassPoolOptions{})
		require.NoError(t, err)
		assert.Equal(t, 1, rec.Classes[1].Pool)
		assert.False(t, rec.Classes[0].Recommended.Met)
		assert.Contains(t, rec.Warnings, "heavy's pool of 1 is below the 4 threads it needs alone to keep the CPU busy")
		assert.Contains(t, rec.Warnings[0], "even one thread for the best-effort classes misses an objective")
	})
	t.Run("idle CPU", func(t *testing.T) {
		s := linuxFake()
		s.classes[0].users, s.classes[1].users = 1, 1
		rec, err := algorithms.RecommendClassPools(context.Background(), s, s.workload(), algorithms.ClassPoolOptions{})
		require.NoError(t, err)
		assert.Equal(t, "none", rec.Critical.Resource)
		assert.InDelta(t, 0.5, rec.Critical.Utilization, 1e-12)
		assert.Contains(t, rec.Warnings, "the CPU is 50% busy at this load: nothing saturates, so pools are not the lever")
	})
	t.Run("ramped best effort", func(t *testing.T) {
		s := linuxFake()
		s.classes[1].ramp = true
		rec, err := algorithms.RecommendClassPools(context.Background(), s, s.workload(), algorithms.ClassPoolOptions{})
		require.NoError(t, err)
		assert.Equal(t, "heavy", rec.Swept)
		assert.Nil(t, rec.Schemes)
		assert.Contains(t, rec.Warnings, "heavy has open arrivals or a ramp: no degradation scheme")
	})
}

func TestRecommendClassPoolsWantsAnObjective(t *testing.T) {
	s := seed000Fake()
	_, err := algorithms.RecommendClassPools(context.Background(), s, s.workload(), algorithms.ClassPoolOptions{})
	assert.ErrorIs(t, err, algorithms.ErrNoClassObjective)
	assert.Zero(t, s.trials.Load())
}

func TestRecommendClassPoolsReportsAMissingClass(t *testing.T) {
	s := linuxFake()
	w := s.workload()
	w.Classes = append(w.Classes, algorithms.ServiceClass{Name: "ghost", LimitSeconds: 1})
	_, err := algorithms.RecommendClassPools(context.Background(), s, w, algorithms.ClassPoolOptions{})
	assert.ErrorContains(t, err, `class pools: trial on setup "file" at the workload's load: the observation has no class "ghost"`)
}

func TestClassWorkloadCheckSetup(t *testing.T) {
	w := seed000Fake().workload()
	for setup, want := range map[*algorithms.ClassSetup]string{
		{Weights: map[string]float64{"nope": 1}}:                 `weight for "nope": no such class`,
		{Weights: map[string]float64{"light": 0}}:                `weight for "light": want a number > 0, got 0`,
		{Priorities: map[string]int{"nope": 1}}:                  `priority for "nope": no such class`,
		{PerClassPools: true, PoolSizes: map[string]int{"x": 1}}: `pool for "x": no such class`,
		{PoolSizes: map[string]int{"light": 0}}:                  `pool for "light": want a size >= 1, got 0`,
		{Policy: algorithms.PolicyRR}:                            `policy rr: want a quantum (workload "seed000" has none)`,
		{Policy: "fifo"}:                                         `policy "fifo": want ps, rr, priority or weighted`,
	} {
		assert.EqualError(t, w.CheckSetup(*setup), want)
	}
	assert.NoError(t, w.CheckSetup(algorithms.ClassSetup{Policy: algorithms.PolicyRR, QuantumSeconds: 0.01, PerClassPools: true, PoolSize: 7}))
	assert.Equal(t, "rr 10ms per-class pools", algorithms.ClassSetup{Policy: algorithms.PolicyRR, QuantumSeconds: 0.01, PerClassPools: true}.Name())
}

func TestClassWorkloadValidate(t *testing.T) {
	for name, edit := range map[string]func(*algorithms.ClassWorkload){
		"cores":     func(w *algorithms.ClassWorkload) { w.Cores = 0 },
		"pool":      func(w *algorithms.ClassWorkload) { w.SharedPool = 0 },
		"no class":  func(w *algorithms.ClassWorkload) { w.Classes = nil },
		"twice":     func(w *algorithms.ClassWorkload) { w.Classes[1].Name = "light" },
		"adequacy":  func(w *algorithms.ClassWorkload) { w.Classes[0].Adequacy = 1.5 },
		"limit":     func(w *algorithms.ClassWorkload) { w.Classes[0].LimitSeconds = math.NaN() },
		"negatives": func(w *algorithms.ClassWorkload) { w.Classes[0].EndUsers = -1 },
	} {
		t.Run(name, func(t *testing.T) {
			w := seed000Fake().workload()
			edit(&w)
			assert.ErrorContains(t, w.Validate(), `class workload "seed000"`)
		})
	}
}

// A workload with none of the default classes (no steady users, no swept
// class) takes every class, so the error says which one cannot be held.
func TestDegradationSchemesWithNoDefaultClassNameTheWorkloads(t *testing.T) {
	s := seed000Fake()
	s.classes = []fakeClass{{name: "open", demand: 0.1, limit: 1, ramp: true}}
	_, err := algorithms.DegradationSchemes(context.Background(), s, s.workload(), algorithms.DegradationOptions{Swept: "heavy", Levels: []int{1}})
	assert.EqualError(t, err, `class "open": the degradation experiment holds closed users; it has arrivals or a ramp`)
}
