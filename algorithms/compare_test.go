package algorithms_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/topology"
)

func TestGrid(t *testing.T) {
	d := deployment(t, "1/4/1/4")
	rec := algorithms.Allocation{"web": {Threads: 400}, "app": {Threads: 8, Connections: 8}}
	g := algorithms.Grid(d, rec, []int{4, 8}, []int{4, 8, 16})
	var roles []string
	keys := map[string]bool{}
	for _, e := range g {
		roles = append(roles, e.Role)
		assert.False(t, keys[e.Allocation.Key()], "no allocation twice")
		keys[e.Allocation.Key()] = true
		assert.LessOrEqual(t, e.Allocation["app"].Connections, e.Allocation["app"].Threads, "never more connections than threads")
	}
	assert.Equal(t, []string{algorithms.RoleRecommended, algorithms.RolePractitioners, algorithms.RoleTomcatDefaults,
		algorithms.RoleHikari, algorithms.RoleGrid, algorithms.RoleGrid}, roles,
		"8-8 is the recommendation already; 4-4, 8-4 and 8-8 are the pairs, one of them the recommendation")
	assert.Equal(t, 3, g[3].Allocation["app"].Connections, "HikariCP: 2 x 1 DB core + 1")

	// The recommendation is the practitioners' pools: one allocation, both roles.
	both := algorithms.Grid(d, allocation(t, "400-150-60"), []int{150}, []int{60})
	assert.Equal(t, algorithms.RoleRecommended, both[0].Role)
	assert.Equal(t, []string{algorithms.RolePractitioners}, both[0].Also)
	for _, e := range both[1:] {
		assert.NotEqual(t, both[0].Allocation.Key(), e.Allocation.Key(), "measured once")
	}

	def := algorithms.Grid(d, rec, nil, nil)
	assert.GreaterOrEqual(t, len(def), 50, "the default grid has at least 50 allocations")
	assert.Equal(t, []int{4, 6, 8, 10, 12, 16, 20, 50, 100, 150, 200}, algorithms.Around(8, algorithms.DefaultGridThreads))
	assert.Equal(t, []int{4500, 5000, 5500, 6000, 6500, 7000}, algorithms.GridWorkloads(5500))
}

func TestCompareAveragesSeedsAndFindsTheBest(t *testing.T) {
	d := deployment(t, "1/2/1/2")
	grid := algorithms.Grid(d, allocation(t, "400-13-13"), []int{2, 13}, []int{1, 13})
	slow := rubbosFake()
	slow.think = 9 // a second "seed" that differs
	o := algorithms.CompareOptions{Workloads: []int{4000, 5000, 6000}, SLAs: []float64{0.5, 2},
		Timing: shortOptions().Timing, Parallel: 1}
	one, err := algorithms.Compare(context.Background(), []algorithms.Experimenter{rubbosFake()}, d, grid, o)
	require.NoError(t, err)
	other, err := algorithms.Compare(context.Background(), []algorithms.Experimenter{slow}, d, grid, o)
	require.NoError(t, err)
	o.Parallel = 4
	both, err := algorithms.Compare(context.Background(), []algorithms.Experimenter{rubbosFake(), slow}, d, grid, o)
	require.NoError(t, err)
	assert.Equal(t, len(grid)*3, both.Experiments)
	for i, e := range both.Entries {
		for s := range o.SLAs {
			for k := range o.Workloads {
				assert.InDelta(t, (one.Entries[i].Goodput[s][k]+other.Entries[i].Goodput[s][k])/2, e.Goodput[s][k], 1e-9,
					"the mean of the seeds, in parallel as in series")
			}
		}
	}
	for s := range o.SLAs {
		best := both.Entries[both.Best[s]]
		assert.InDelta(t, 1, best.Ratio[s], 1e-12)
		for _, e := range both.Entries {
			assert.LessOrEqual(t, e.MaxGoodput[s], best.MaxGoodput[s])
			assert.InDelta(t, e.MaxGoodput[s]/best.MaxGoodput[s], e.Ratio[s], 1e-12)
			assert.Contains(t, o.Workloads, e.AtUsers[s])
		}
	}
	// One thread is a starved pool: far below the best.
	for _, e := range both.Entries {
		if e.Allocation["app"].Threads == 2 {
			assert.Less(t, e.Ratio[1], 0.5)
		}
	}
}

// A grid compared in two parts, ranked together, is the grid compared
// whole: Rank is how a reference's grid and the allocations measured since
// become one comparison.
func TestRankJoinsTheParts(t *testing.T) {
	d := deployment(t, "1/2/1/2")
	grid := algorithms.Grid(d, allocation(t, "400-13-13"), []int{2, 13, 20}, []int{1, 13})
	o := algorithms.CompareOptions{Workloads: []int{4000, 5000, 6000}, SLAs: []float64{0.5, 2}, Timing: shortOptions().Timing, Parallel: 1}
	ctx := context.Background()
	whole, err := algorithms.Compare(ctx, []algorithms.Experimenter{rubbosFake()}, d, grid, o)
	require.NoError(t, err)
	first, err := algorithms.Compare(ctx, []algorithms.Experimenter{rubbosFake()}, d, grid[:3], o)
	require.NoError(t, err)
	rest, err := algorithms.Compare(ctx, []algorithms.Experimenter{rubbosFake()}, d, grid[3:], o)
	require.NoError(t, err)
	joined := algorithms.Comparison{Options: o, Entries: append(first.Entries, rest.Entries...)}
	joined.Rank()
	assert.Equal(t, whole.Best, joined.Best)
	for i, e := range whole.Entries {
		j := joined.Entries[i]
		assert.Equal(t, e.MaxGoodput, j.MaxGoodput)
		assert.Equal(t, e.AtUsers, j.AtUsers)
		assert.Equal(t, e.Ratio, j.Ratio, e.Allocation.String())
		assert.Equal(t, e.Indistinguishable, j.Indistinguishable)
	}
}

// failingAt fails the experiment at one workload and waits for the
// cancellation in every other.
type failingAt struct{ users int }

func (f failingAt) RunExperiment(ctx context.Context, e algorithms.Experiment) (algorithms.Observation, error) {
	if e.Workload.Users == f.users {
		return algorithms.Observation{}, errors.New("the deployment fell over")
	}
	<-ctx.Done()
	return algorithms.Observation{}, ctx.Err()
}

func TestRunAllReportsTheFailureNotTheCancellation(t *testing.T) {
	d := deployment(t, "1/2/1/2")
	var exps []algorithms.Experiment
	for _, u := range []int{100, 200, 300, 400} {
		exps = append(exps, algorithms.Experiment{Deployment: d, Allocation: allocation(t, "400-150-60"), Workload: algorithms.Workload{Users: u}})
	}
	_, err := algorithms.RunAll(context.Background(), failingAt{300}, exps, 4)
	require.Error(t, err)
	assert.Equal(t, "400-150-60 at 300 users: the deployment fell over", err.Error(), "the allocation as the user writes it")
	assert.NotErrorIs(t, err, context.Canceled)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = algorithms.RunAll(ctx, failingAt{-1}, exps, 2)
	assert.ErrorIs(t, err, context.Canceled)
}

func TestAllocationString(t *testing.T) {
	assert.Equal(t, "400-150-60", allocation(t, "400-150-60").String())
	// What the notation cannot say stays the canonical key.
	odd := algorithms.Allocation{"web": {Threads: 100}, "app": {Threads: 20, Connections: 10}, "cache": {Threads: 4}}
	assert.Equal(t, odd.Key(), odd.String())
	noConns := algorithms.Allocation{"web": {Threads: 100}, "app": {Threads: 20}}
	assert.Equal(t, noConns.Key(), noConns.String())
}

func TestSweepMeasuresTheAllocationAsConfigured(t *testing.T) {
	d := deployment(t, "1/2/1/2")
	opts := shortOptions()
	trials, err := algorithms.Sweep(context.Background(), rubbosFake(), d, allocation(t, "400-6-6"), opts)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(trials), 2)
	for i, tr := range trials {
		assert.Equal(t, "400-6-6", fmtAlloc(t, tr.Experiment.Allocation), "no pool is doubled")
		assert.Equal(t, (i+1)*opts.Step, tr.Experiment.Workload.Users)
	}
	last, prev := trials[len(trials)-1].Observation.Throughput, trials[len(trials)-2].Observation.Throughput
	assert.LessOrEqual(t, last, prev, "it stops where throughput stopped growing")

	c := algorithms.MeasureCapacity(d, trials, 2, opts)
	assert.Equal(t, len(trials), c.Experiments)
	require.NotNil(t, c.FirstSaturated)
	assert.Equal(t, "app/threads", c.FirstSaturated.Tier+"/"+c.FirstSaturated.Resource, "six threads bound it before any CPU")
	assert.Positive(t, c.SaturationWorkload)
	assert.GreaterOrEqual(t, c.MaxThroughput, c.MaxGoodput)
	assert.GreaterOrEqual(t, c.MaxThroughput, last)
}

func fmtAlloc(t *testing.T, a algorithms.Allocation) string {
	t.Helper()
	s, err := topology.FormatAllocation(a)
	require.NoError(t, err)
	return s
}

// asking records the precisions each (allocation, workload) was measured
// at, and whether the trial was held to them on goodput alone; imprecise
// says the runner reached no precision (a trial at its longest window).
type asking struct {
	x         algorithms.Experimenter
	imprecise bool
	mu        sync.Mutex
	asked     map[string][]float64
	allFigs   int // trials held to the precision on every figure
	otherSLAs int // trials held to other thresholds than those compared
}

func (a *asking) RunExperiment(ctx context.Context, e algorithms.Experiment) (algorithms.Observation, error) {
	o, err := a.x.RunExperiment(ctx, e)
	if err != nil {
		return o, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.asked == nil {
		a.asked = map[string][]float64{}
	}
	k := fmt.Sprintf("%s@%d", e.Allocation.Key(), e.Workload.Users)
	a.asked[k] = append(a.asked[k], e.Timing.Precision)
	if !e.Timing.GoodputOnly {
		a.allFigs++
	}
	if fmt.Sprint(e.Timing.SLAs) != "[0.5 2]" {
		a.otherSLAs++
	}
	o.Window.Precise = !a.imprecise
	return o, nil
}

// Screening measures the whole grid at four times the precision, and only
// what could still be the best, or a named allocation's maximum, again:
// the comparison's answer is the unscreened one's.
func TestCompareScreensTheGrid(t *testing.T) {
	d := deployment(t, "1/2/1/2")
	grid := algorithms.Grid(d, allocation(t, "400-13-13"), []int{2, 13, 50}, []int{1, 13})
	o := algorithms.CompareOptions{Workloads: []int{4000, 5000, 6000}, SLAs: []float64{0.5, 2}, Parallel: 2}
	o.Timing = shortOptions().Timing
	o.Timing.Precision = 0.02 // and no thresholds: the comparison's are what it needs precise
	run := func(screening int, imprecise bool) (algorithms.Comparison, *asking) {
		a := &asking{x: &intervalExperimenter{x: rubbosFake(), spread: 0.5}, imprecise: imprecise}
		o.Screening = screening
		cmp, err := algorithms.Compare(context.Background(), []algorithms.Experimenter{a}, d, grid, o)
		require.NoError(t, err)
		return cmp, a
	}
	plain, pa := run(0, false)
	screened, sa := run(algorithms.DefaultScreening, false)
	assert.Zero(t, pa.allFigs+sa.allFigs, "a comparison reads goodput alone")
	assert.Zero(t, pa.otherSLAs+sa.otherSLAs, "at the thresholds it compares")
	cells := len(grid) * len(o.Workloads)
	assert.Equal(t, cells, plain.Experiments)
	for k, ps := range pa.asked {
		assert.Equal(t, []float64{0.02}, ps, k)
	}

	again := 0
	for k, ps := range sa.asked {
		assert.Equal(t, 0.08, ps[0], "%s: first at four times the precision", k)
		for i := 1; i < len(ps); i++ {
			assert.Equal(t, ps[i-1]/2, ps[i], "%s: then at half the last", k)
		}
		again += len(ps) - 1
	}
	assert.Equal(t, cells+again, screened.Experiments, "every trial counts")
	assert.Positive(t, again)
	assert.Less(t, again, 2*cells, "most of the grid was measured once")
	for s := range o.SLAs {
		assert.Equal(t, plain.Best[s], screened.Best[s], "the same best at %g s", o.SLAs[s])
		best := screened.Entries[screened.Best[s]]
		assert.Equal(t, 0.02, last(sa.asked[fmt.Sprintf("%s@%d", best.Allocation.Key(), best.AtUsers[s])]),
			"the best's maximum at the precision asked")
		for i, e := range screened.Entries {
			assert.Equal(t, plain.Entries[i].MaxGoodput[s], e.MaxGoodput[s], "the fake's means do not depend on the precision")
			if e.Role != algorithms.RoleGrid {
				assert.Equal(t, 0.02, last(sa.asked[fmt.Sprintf("%s@%d", e.Allocation.Key(), e.AtUsers[s])]),
					"%s: a named allocation's maximum at the precision asked", e.Role)
			}
			if e.Allocation["app"].Threads == 2 {
				assert.Equal(t, []float64{0.08}, sa.asked[fmt.Sprintf("%s@%d", e.Allocation.Key(), e.AtUsers[s])],
					"a starved pool lies clearly below the best")
				assert.False(t, e.Indistinguishable[s])
			}
		}
	}

	// The named allocations' maxima can be measured finer than the grid.
	o.NamedPrecision = 0.005
	fine, fa := run(algorithms.DefaultScreening, false)
	o.NamedPrecision = 0
	for s := range o.SLAs {
		for _, e := range fine.Entries {
			got := last(fa.asked[fmt.Sprintf("%s@%d", e.Allocation.Key(), e.AtUsers[s])])
			if e.Role != algorithms.RoleGrid {
				assert.Equal(t, 0.005, got, "%s's maximum at the named precision", e.Role)
			}
		}
	}
	for k, ps := range fa.asked {
		if last(ps) < 0.02 {
			assert.Contains(t, named(grid), k[:strings.Index(k, "@")], "%s: only named allocations finer than the grid", k)
		}
	}

	// An allocation in two roles is measured once: the recommendation
	// again as another reading's answer, and a grid pair named.
	twice := append(append([]algorithms.GridEntry{}, grid...),
		algorithms.GridEntry{Allocation: grid[0].Allocation, Role: "recommended-knee"},
		algorithms.GridEntry{Allocation: grid[len(grid)-1].Allocation, Role: "recommended-paper"})
	a := &asking{x: &intervalExperimenter{x: rubbosFake(), spread: 0.5}}
	o.Screening = algorithms.DefaultScreening
	both, err := algorithms.Compare(context.Background(), []algorithms.Experimenter{a}, d, twice, o)
	require.NoError(t, err)
	for k, ps := range a.asked {
		for i := 1; i < len(ps); i++ {
			assert.Less(t, ps[i], ps[i-1], "%s: never twice at one precision", k)
		}
	}
	for s := range o.SLAs {
		assert.Equal(t, both.Entries[0].MaxGoodput[s], both.Entries[len(grid)].MaxGoodput[s])
	}

	// A trial that reached no precision ran to its longest window: it
	// would only do so again.
	stuck, _ := run(algorithms.DefaultScreening, true)
	assert.Equal(t, cells, stuck.Experiments)
}

// named lists the keys of the grid's named allocations.
func named(grid []algorithms.GridEntry) []string {
	var out []string
	for _, g := range grid {
		if g.Role != algorithms.RoleGrid {
			out = append(out, g.Allocation.Key())
		}
	}
	return out
}

func last(ps []float64) float64 {
	if len(ps) == 0 {
		return 0
	}
	return ps[len(ps)-1]
}

// ForEach, serial or parallel, returns the failure that cancelled the
// others (not a cancellation, not a later index's), and a caller's
// cancellation even when no call looks at its context.
func TestForEachReportsTheFailureAndTheCallersCancellation(t *testing.T) {
	for _, parallel := range []int{1, 3} {
		var ran atomic.Int32
		err := algorithms.ForEach(context.Background(), parallel, 5, func(ctx context.Context, i int) error {
			ran.Add(1)
			switch i {
			case 1:
				return fmt.Errorf("call %d failed", i)
			case 4:
				return errors.New("a later failure")
			}
			if parallel > 1 {
				<-ctx.Done()
				return ctx.Err()
			}
			return nil
		})
		require.Error(t, err, "parallel %d", parallel)
		assert.Equal(t, "call 1 failed", err.Error(), "parallel %d", parallel)
		if parallel == 1 {
			assert.EqualValues(t, 2, ran.Load(), "in order, stopping at the failure")
		}

		ctx, cancel := context.WithCancel(context.Background())
		ran.Store(0)
		err = algorithms.ForEach(ctx, parallel, 4, func(context.Context, int) error {
			if ran.Add(1) == 1 {
				cancel()
			}
			return nil
		})
		assert.ErrorIs(t, err, context.Canceled, "parallel %d", parallel)
		if parallel == 1 {
			assert.EqualValues(t, 1, ran.Load(), "nothing runs after the caller cancelled")
		}
	}
}
