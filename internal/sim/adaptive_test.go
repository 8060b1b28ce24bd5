package sim

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
)

func adaptive(t *testing.T, topo, alloc string, users int, precision float64, runtime time.Duration) algorithms.Experiment {
	e := experiment(t, topo, alloc, users, 10*time.Second, runtime)
	e.Timing.Precision, e.Timing.SLAs = precision, []float64{0.5, 2}
	return e
}

// An adaptive trial below saturation stops as soon as every figure is
// precise: long before its longest window, with a window of whole
// five-second marks that starts no earlier than the least warm-up, and
// figures that are the window's own.
func TestAdaptiveTrialStopsWhenPrecise(t *testing.T) {
	e := adaptive(t, "1/2/1/2", "400-150-60", 3000, 0.02, 12*time.Minute)
	o, st, err := Simulate(t.Context(), nil, e, 1)
	require.NoError(t, err)
	require.NoError(t, o.Validate())
	w := o.Window
	require.NotNil(t, w)
	assert.True(t, w.Precise, "limit %s, excess %.2f", w.Limit, w.Excess)
	assert.Equal(t, 0.02, w.Precision)
	assert.Less(t, o.RuntimeSeconds, 200.0, "well before the 12-minute maximum")
	assert.GreaterOrEqual(t, o.RuntimeSeconds, float64(algorithms.DefaultBatches))
	assert.Equal(t, 0.0, math.Mod(o.RuntimeSeconds, 5))
	assert.GreaterOrEqual(t, w.WarmUpSeconds, 10.0)
	assert.Equal(t, 0.0, math.Mod(w.WarmUpSeconds, 5))
	assert.GreaterOrEqual(t, w.WarmUpSeconds, w.TransientSeconds)
	assert.InDelta(t, w.WarmUpSeconds+o.RuntimeSeconds, st.SimulatedSeconds, 1e-9)
	// The window's figures are its own: throughput is its pages over its
	// length, and its histogram holds exactly those pages.
	assert.Equal(t, st.Pages, o.ResponseTimes.Count())
	assert.InDelta(t, float64(st.Pages)/o.RuntimeSeconds, o.Throughput, 1e-9)
	assert.LessOrEqual(t, o.ThroughputHalfWidth, 0.02*o.Throughput)
	require.Len(t, o.GoodputIntervals, 2)
	for _, g := range o.GoodputIntervals {
		assert.LessOrEqual(t, g.HalfWidth, 0.02*o.Throughput, "goodput is held to the precision of throughput")
		assert.InDelta(t, o.Goodput(g.SLA), g.Goodput, 0.01*o.Throughput, "counted exactly, the histogram interpolates")
	}
	for _, s := range o.Servers {
		assert.LessOrEqual(t, s.CPUHalfWidth, 0.02, s.Name)
		for _, p := range s.Pools {
			assert.LessOrEqual(t, p.BusyHalfWidth, 0.02*float64(p.Size), "%s %s", s.Name, p.Name)
		}
	}
}

// A precision the window cannot reach ends the trial at its longest
// window, saying so and naming the figure that held it back.
func TestAdaptiveTrialEndsAtTheLongestWindow(t *testing.T) {
	e := adaptive(t, "1/2/1/2", "400-150-60", 3000, 0.001, 60*time.Second)
	o, _, err := Simulate(t.Context(), nil, e, 1)
	require.NoError(t, err)
	assert.Equal(t, 60.0, o.RuntimeSeconds)
	assert.False(t, o.Window.Precise)
	assert.NotEmpty(t, o.Window.Limit)
	assert.Greater(t, o.Window.Excess, 1.0)
}

// The same seed gives the same adaptive trial, alone or among others run
// in parallel.
func TestAdaptiveTrialDeterministic(t *testing.T) {
	var exps []algorithms.Experiment
	for _, u := range []int{2000, 4000, 5000, 6000} {
		exps = append(exps, adaptive(t, "1/2/1/2", "400-150-60", u, 0.05, 2*time.Minute))
	}
	r := Runner{Seed: 3}
	par, err := algorithms.RunAll(context.Background(), r, exps, 4)
	require.NoError(t, err)
	for i, e := range exps {
		o, err := r.RunExperiment(context.Background(), e)
		require.NoError(t, err)
		assert.Equal(t, o, par[i], "%d users", e.Workload.Users)
	}
}

// Common random numbers: each user draws from its own stream, so the first
// users of a trial with more users behave exactly as in one with fewer
// (TestStreamIndependence shows the same across allocations).
func TestUsersShareStreamsAcrossWorkloads(t *testing.T) {
	type step struct {
		state uint8
		think float64
	}
	record := func(users int) map[int32][]step {
		c, err := newChain(DefaultModel(), experiment(t, "1/2/1/2", "400-150-60", users, 5*time.Second, 30*time.Second), 5)
		require.NoError(t, err)
		seq := map[int32][]step{}
		c.onPage = func(u int32, s uint8, z float64) {
			if u%89 == 0 {
				seq[u] = append(seq[u], step{s, z})
			}
		}
		require.NoError(t, c.run(context.Background()))
		return seq
	}
	small, large := record(2000), record(2500)
	compared := 0
	for u, s := range small {
		n := min(len(s), len(large[u]))
		assert.Equal(t, s[:n], large[u][:n], "user %d", u)
		compared += n
	}
	require.Greater(t, compared, 50)
}

func TestAdaptiveTimingRefused(t *testing.T) {
	e := adaptive(t, "1/2/1/2", "400-150-60", 100, 1.5, time.Minute)
	_, _, err := Simulate(t.Context(), nil, e, 1)
	require.ErrorContains(t, err, "precision 1.5: want a relative half-width in [0,1)")
	e = adaptive(t, "1/2/1/2", "400-150-60", 100, 0.02, time.Minute)
	e.Timing.SLAs = []float64{2, 0.5}
	_, _, err = Simulate(t.Context(), nil, e, 1)
	require.ErrorContains(t, err, "want ascending numbers of seconds > 0")
}

// Past saturation the app servers' busy threads wander by a tenth of the
// pool and more: a trial held to every figure runs its longest window,
// while one held to goodput alone (a grid's) ends when goodput is precise.
func TestAdaptiveTrialGoodputOnly(t *testing.T) {
	e := adaptive(t, "1/4/1/4", "400-150-60", 7000, 0.02, 2*time.Minute)
	e.Timing.SLAs = []float64{2}
	all, _, err := Simulate(t.Context(), nil, e, 1)
	require.NoError(t, err)
	require.False(t, all.Window.Precise)
	assert.Contains(t, all.Window.Limit, "threads busy")
	assert.Equal(t, 120.0, all.RuntimeSeconds)

	e.Timing.GoodputOnly = true
	only, _, err := Simulate(t.Context(), nil, e, 1)
	require.NoError(t, err)
	require.NoError(t, only.Validate())
	assert.True(t, only.Window.Precise, "limit %s, excess %.2f", only.Window.Limit, only.Window.Excess)
	assert.Less(t, only.RuntimeSeconds, all.RuntimeSeconds)
	assert.LessOrEqual(t, only.GoodputIntervals[0].HalfWidth, 0.02*only.Throughput)
	assert.Positive(t, only.Servers[1].Pools[0].BusyHalfWidth, "the servers' figures keep their intervals")
}
