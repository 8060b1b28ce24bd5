package algorithms_test

import (
	"context"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
)

// intervalExperimenter gives the analytic fake's observations intervals
// whose half-widths are spread times the trial's precision (of a core for
// CPU, of the mean for throughput and goodput), as a runner that ran the
// trial to that precision would; it remembers the precisions asked for.
type intervalExperimenter struct {
	x      algorithms.Experimenter
	spread float64
	mu     sync.Mutex
	asked  map[int][]float64 // users -> precisions
}

func (m *intervalExperimenter) RunExperiment(ctx context.Context, e algorithms.Experiment) (algorithms.Observation, error) {
	o, err := m.x.RunExperiment(ctx, e)
	if err != nil || !e.Timing.Adaptive() {
		return o, err
	}
	m.mu.Lock()
	if m.asked == nil {
		m.asked = map[int][]float64{}
	}
	m.asked[e.Workload.Users] = append(m.asked[e.Workload.Users], e.Timing.Precision)
	m.mu.Unlock()
	p := e.Timing.Precision * m.spread
	o.ThroughputHalfWidth = p * o.Throughput
	for _, sla := range e.Timing.SLAs {
		g := o.Goodput(sla)
		o.GoodputIntervals = append(o.GoodputIntervals, algorithms.GoodputInterval{SLA: sla, Goodput: g, HalfWidth: p * g})
	}
	for i := range o.Servers {
		o.Servers[i].CPUHalfWidth = p
	}
	o.Window = &algorithms.MeasuredWindow{IntervalSeconds: 1, Batches: 20, Precision: e.Timing.Precision, Precise: true}
	return o, o.Validate()
}

func adaptiveOptions(precision float64) algorithms.Options {
	o := shortOptions()
	o.Timing.Precision, o.Timing.SLAs = precision, []float64{o.SLA}
	return o
}

// A bisection probe whose CPU interval holds the threshold is measured
// again at half the precision, up to Options.Refinements times; one that
// stays within the noise is at the threshold: saturated, with a warning.
// Fixed trials, and trials that ran to their longest window short of the
// precision, are never measured again.
func TestSaturationTestsRefineIndistinguishableTrials(t *testing.T) {
	d := deployment(t, "1/2/1/2")
	fixed, err := algorithms.Recommend(context.Background(), rubbosFake(), d, allocation(t, "400-150-60"), shortOptions())
	require.NoError(t, err)

	x := &intervalExperimenter{x: rubbosFake(), spread: 2}
	rec, err := algorithms.Recommend(context.Background(), x, d, allocation(t, "400-150-60"), adaptiveOptions(0.02))
	require.NoError(t, err)
	// The fake's means are exact: only its intervals differ. The bisection
	// ends at the lowest probe whose interval reaches the threshold, at or
	// below the bare means' answer, and no further than its interval.
	assert.LessOrEqual(t, rec.MinJobs.WLmin, fixed.MinJobs.WLmin)
	last := rec.MinJobs.Points[len(rec.MinJobs.Points)-1]
	assert.Equal(t, rec.MinJobs.WLmin, last.Workload)
	assert.GreaterOrEqual(t, last.CriticalUtilization+last.CriticalUtilizationHalfWidth, 0.95)
	assert.Less(t, rec.MinJobs.Points[0].CriticalUtilization+rec.MinJobs.Points[0].CriticalUtilizationHalfWidth, 0.95,
		"the probe below lies clearly below the threshold")

	refined := 0
	for users, ps := range x.asked {
		assert.LessOrEqual(t, len(ps), 1+algorithms.DefaultOptions().Refinements, "at most Refinements at %d users", users)
		for i, p := range ps {
			assert.InDelta(t, 0.02/float64(int(1)<<i), p, 1e-12, "each at half the last precision")
		}
		if len(ps) > 1 {
			refined++
		}
	}
	assert.Positive(t, refined, "a CPU within 4%% of a core of 0.95 needs a second look")
	assert.Greater(t, rec.Experiments, fixed.Experiments, "refinements are experiments of their own")
	// With one refinement a probe stays within the noise, and is named.
	once := adaptiveOptions(0.02)
	once.Refinements = 1
	rec1, err := algorithms.Recommend(context.Background(), &intervalExperimenter{x: rubbosFake(), spread: 2}, d, allocation(t, "400-150-60"), once)
	require.NoError(t, err)
	var notes []string
	for _, w := range append(rec1.Critical.Warnings, rec1.MinJobs.Warnings...) {
		if strings.Contains(w, "could not be told from 0.95 at the finest precision tried: taken as at the threshold") {
			notes = append(notes, w)
		}
	}
	assert.NotEmpty(t, notes, "a probe still within the noise at the finest precision is named")

	// A runner that ignores the precision (no window of that precision):
	// nothing is refined.
	y := &intervalExperimenter{x: rubbosFake(), spread: 2}
	ignoring := experimenterFunc(func(ctx context.Context, e algorithms.Experiment) (algorithms.Observation, error) {
		o, err := y.RunExperiment(ctx, e)
		if o.Window != nil {
			o.Window.Precision = 0
		}
		return o, err
	})
	rec2, err := algorithms.Recommend(context.Background(), ignoring, d, allocation(t, "400-150-60"), adaptiveOptions(0.02))
	require.NoError(t, err)
	assert.Equal(t, fixed.Experiments, rec2.Experiments)

	// Trials that ran to their longest window short of the precision: a
	// finer one would end at the same window, so nothing is refined.
	z := &intervalExperimenter{x: rubbosFake(), spread: 2}
	imprecise := experimenterFunc(func(ctx context.Context, e algorithms.Experiment) (algorithms.Observation, error) {
		o, err := z.RunExperiment(ctx, e)
		if o.Window != nil {
			o.Window.Precise = false
		}
		return o, err
	})
	rec3, err := algorithms.Recommend(context.Background(), imprecise, d, allocation(t, "400-150-60"), adaptiveOptions(0.02))
	require.NoError(t, err)
	assert.Equal(t, fixed.Experiments, rec3.Experiments)
}

type experimenterFunc func(context.Context, algorithms.Experiment) (algorithms.Observation, error)

func (f experimenterFunc) RunExperiment(ctx context.Context, e algorithms.Experiment) (algorithms.Observation, error) {
	return f(ctx, e)
}

// Throughput grows only when its interval lies above the last one's: a
// sweep stops at the first step whose rise is within the noise.
func TestSweepStopsWhenGrowthIsWithinTheNoise(t *testing.T) {
	d := deployment(t, "1/2/1/2")
	a := allocation(t, "400-150-60")
	bare, err := algorithms.Sweep(context.Background(), rubbosFake(), d, a, shortOptions())
	require.NoError(t, err)
	noisy, err := algorithms.Sweep(context.Background(), &intervalExperimenter{x: rubbosFake(), spread: 10}, d, a, adaptiveOptions(0.02))
	require.NoError(t, err)
	assert.Less(t, len(noisy), len(bare), "a 20%% half-width hides the last rises")
}

// Compare says which allocations cannot be told from the grid's best.
func TestCompareIndistinguishable(t *testing.T) {
	d := deployment(t, "1/2/1/2")
	grid := algorithms.Grid(d, allocation(t, "400-13-13"), []int{2, 13, 30}, []int{1, 13})
	o := algorithms.CompareOptions{Workloads: []int{4000, 5000, 6000}, SLAs: []float64{2}, Timing: adaptiveOptions(0.02).Timing, Parallel: 2}
	cmp, err := algorithms.Compare(context.Background(), []algorithms.Experimenter{&intervalExperimenter{x: rubbosFake(), spread: 0.5}}, d, grid, o)
	require.NoError(t, err)
	best := cmp.Entries[cmp.Best[0]]
	assert.True(t, best.Indistinguishable[0], "the best is as good as itself")
	assert.InDelta(t, 0.01*best.MaxGoodput[0], best.MaxHalfWidth[0], 1e-9)
	var same, worse int
	for _, e := range cmp.Entries {
		if e.Indistinguishable[0] {
			same++
			assert.Greater(t, e.Ratio[0], 0.97, "%s is within the noise of the best", e.Allocation.Key())
		} else {
			worse++
			assert.Greater(t, best.MaxGoodput[0]-e.MaxGoodput[0], math.Hypot(best.MaxHalfWidth[0], e.MaxHalfWidth[0]),
				"%s is below the best by more than the noise", e.Allocation.Key())
		}
	}
	assert.Positive(t, worse, "one connection is clearly worse")

	// Bare means: only equals are indistinguishable.
	o.Timing = shortOptions().Timing
	bare, err := algorithms.Compare(context.Background(), []algorithms.Experimenter{rubbosFake()}, d, grid, o)
	require.NoError(t, err)
	for _, e := range bare.Entries {
		assert.Equal(t, e.MaxGoodput[0] == bare.Entries[bare.Best[0]].MaxGoodput[0], e.Indistinguishable[0])
	}
}

// The paper's small-step scan with intervals: a step's rise within the
// noise does not end it at once, so it reaches the same peak as with bare
// means on the analytic fake (2% half-widths, 100-user steps; waiting
// for one flat step only ends it about 1,000 users early).
func TestScanWaitsForTwoFlatSteps(t *testing.T) {
	d := deployment(t, "1/2/1/2")
	opts := shortOptions()
	opts.Mode = algorithms.ModePaper
	bare, err := algorithms.Recommend(context.Background(), rubbosFake(), d, allocation(t, "400-150-60"), opts)
	require.NoError(t, err)
	aopts := adaptiveOptions(0.01)
	aopts.Mode = algorithms.ModePaper
	noisy, err := algorithms.Recommend(context.Background(), &intervalExperimenter{x: rubbosFake(), spread: 2}, d, allocation(t, "400-150-60"), aopts)
	require.NoError(t, err)
	lastBare := bare.MinJobs.Points[len(bare.MinJobs.Points)-1].Workload
	lastNoisy := noisy.MinJobs.Points[len(noisy.MinJobs.Points)-1].Workload
	assert.InDelta(t, lastBare, lastNoisy, float64(2*opts.SmallStep), "the scan ends near where it does without noise")
	assert.Equal(t, bare.Allocation, noisy.Allocation)
}
