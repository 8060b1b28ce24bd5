package algorithms

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func noise(r *rand.Rand, n int, mean, sd float64) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = mean + sd*r.NormFloat64()
	}
	return x
}

// ar1 is an autoregressive series: x_i = mean + phi (x_{i-1} - mean) + e_i,
// the shape of a queue's per-second figures.
func ar1(r *rand.Rand, n int, mean, phi, sd float64) []float64 {
	x := make([]float64, n)
	v := mean
	for i := range x {
		v = mean + phi*(v-mean) + sd*r.NormFloat64()
		x[i] = v
	}
	return x
}

func TestMSER5(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	t.Run("a transient is cut off", func(t *testing.T) {
		x := noise(r, 200, 100, 3)
		for i := 0; i < 30; i++ {
			x[i] = 100 * float64(i) / 30 // a load rising for 30 s
		}
		d, ok := MSER5(x)
		assert.True(t, ok)
		assert.Equal(t, 0, d%5, "batches of 5")
		assert.InDelta(t, 30, d, 10)
	})
	t.Run("a steady series keeps everything", func(t *testing.T) {
		d, ok := MSER5(noise(r, 100, 50, 5))
		assert.True(t, ok)
		assert.LessOrEqual(t, d, 25)
	})
	t.Run("a series still rising is not trusted", func(t *testing.T) {
		x := make([]float64, 100)
		for i := range x {
			x[i] = float64(i) + r.NormFloat64()
		}
		d, ok := MSER5(x)
		assert.False(t, ok, "the truncation lies past half the series")
		assert.LessOrEqual(t, d, 50, "an untrusted truncation keeps at least the later half")
	})
	t.Run("a late step is not trusted and keeps the later half", func(t *testing.T) {
		// On the testbed, a trial's MSER minimum at 48 of 54 s left a 6 s window.
		x := noise(r, 100, 50, 5)
		for i := 70; i < len(x); i++ {
			x[i] += 40
		}
		d, ok := MSER5(x)
		assert.False(t, ok)
		assert.Equal(t, 50, d)
	})
	t.Run("too short", func(t *testing.T) {
		_, ok := MSER5(noise(r, 49, 1, 1))
		assert.False(t, ok)
	})
}

// The batch-means interval covers the true mean about 95% of the time for
// independent data, and close to it for a correlated series long enough to
// hold many correlation times.
func TestBatchIntervalCoverage(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		name string
		gen  func() []float64
		min  float64
	}{
		{"independent", func() []float64 { return noise(r, 200, 10, 2) }, 0.92},
		{"AR(1) 0.8", func() []float64 { return ar1(r, 640, 10, 0.8, 1) }, 0.88},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const reps = 400
			hit := 0
			for range reps {
				x := tc.gen()
				iv, _, _ := batchInterval(x, Stopping{}.BatchLength(len(x)), DefaultMinBatches)
				if math.Abs(iv.Mean-10) <= iv.HalfWidth {
					hit++
				}
			}
			cov := float64(hit) / reps
			t.Logf("coverage %.3f", cov)
			assert.GreaterOrEqual(t, cov, tc.min)
			assert.LessOrEqual(t, cov, 0.99, "not much wider than needed")
		})
	}
}

func TestBatchLength(t *testing.T) {
	s := Stopping{}
	for n, want := range map[int]int{10: 1, 39: 1, 40: 2, 79: 2, 80: 4, 640: 32} {
		assert.Equal(t, want, s.BatchLength(n), "n=%d", n)
	}
}

func TestStoppingEstimate(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	figs := []Figure{
		{Kind: FigureThroughput},
		{Kind: FigureGoodput, SLA: 2},
		{Kind: FigureCPU, Server: "app-1", Capacity: 1},
		{Kind: FigureBusy, Server: "app-1", Pool: PoolConnections, Capacity: 60},
	}
	series := func(n int, tpSD float64) [][]float64 {
		return [][]float64{
			noise(r, n, 800, tpSD),
			noise(r, n, 790, tpSD),
			noise(r, n, 0.05, 0.02), // a CPU far from saturation: noisy relative to its mean
			make([]float64, n),      // a pool never used: always 0
		}
	}
	est := Stopping{Precision: 0.01}.Estimate(figs, series(40, 10))
	assert.True(t, est.Precise, "800±10/s over 40 s is within 1%%; a CPU at 0.05±0.02 is held to 1%% of a core")
	assert.Equal(t, 0.0, est.Intervals[3].HalfWidth)
	assert.LessOrEqual(t, est.Excess, 1.0)

	est = Stopping{Precision: 0.01}.Estimate(figs, series(40, 80))
	assert.False(t, est.Precise)
	assert.Contains(t, []int{0, 1}, est.Worst, "throughput or goodput is the least precise")
	assert.Greater(t, est.Excess, 1.0)

	// Too few intervals for the fewest batches: never precise.
	est = Stopping{Precision: 0.5}.Estimate(figs, series(8, 1))
	assert.False(t, est.Precise)

	// A pool whose busy units wander by a fifth of its size, as the app's
	// threads do past saturation: it holds the trial, unless only goodput
	// is asked for; its interval is reported either way.
	wander := series(40, 10)
	wander[3] = noise(r, 40, 30, 12)
	est = Stopping{Precision: 0.01}.Estimate(figs, wander)
	assert.False(t, est.Precise)
	assert.Equal(t, 3, est.Worst)
	only := Stopping{Precision: 0.01, GoodputOnly: true}.Estimate(figs, wander)
	assert.True(t, only.Precise, "throughput and goodput are within 1%%")
	assert.Contains(t, []int{0, 1}, only.Worst)
	assert.Equal(t, est.Intervals, only.Intervals)
}

func TestVersus(t *testing.T) {
	for _, tc := range []struct {
		a, b Interval
		want Verdict
	}{
		{Interval{10, 1}, Interval{7, 1}, Above},
		{Interval{10, 1}, Interval{9, 1}, Indistinguishable}, // 1 < sqrt(2)
		{Interval{7, 1}, Interval{10, 1}, Below},
		{Interval{10, 0}, Interval{9.999, 0}, Above}, // bare means: strict comparison
		{Interval{10, 0}, Interval{10, 0}, Indistinguishable},
	} {
		assert.Equal(t, tc.want, tc.a.Versus(tc.b), "%v vs %v", tc.a, tc.b)
	}
	assert.Equal(t, Above, Interval{0.97, 0.01}.VersusValue(0.95))
	assert.Equal(t, Indistinguishable, Interval{0.955, 0.01}.VersusValue(0.95))
}

func TestSetIntervals(t *testing.T) {
	o := Observation{RuntimeSeconds: 60, Throughput: 100, Servers: []ServerObservation{
		{Name: "app-1", Tier: "app", CPU: 0.5, Pools: []PoolObservation{{Name: PoolThreads, Size: 10, Busy: 4}}},
	}}
	figs := []Figure{{Kind: FigureThroughput}, {Kind: FigureGoodput, SLA: 2}, {Kind: FigureCPU, Server: "app-1", Capacity: 1},
		{Kind: FigureBusy, Server: "app-1", Pool: PoolThreads, Capacity: 10}}
	est := Estimates{Intervals: []Interval{{100, 1}, {98, 1.5}, {0.5, 0.01}, {4, 0.2}}, Batches: []int{20, 20, 20, 10},
		Precise: true, Worst: 1, Excess: 0.8}
	o.SetIntervals(figs, est, MeasuredWindow{WarmUpSeconds: 30, IntervalSeconds: 1, Precision: 0.02})
	require.NoError(t, o.Validate())
	assert.Equal(t, 1.0, o.ThroughputHalfWidth)
	assert.Equal(t, []GoodputInterval{{SLA: 2, Goodput: 98, HalfWidth: 1.5}}, o.GoodputIntervals)
	assert.Equal(t, Interval{98, 1.5}, o.GoodputInterval(2))
	assert.Equal(t, Interval{Mean: o.Goodput(0.5)}, o.GoodputInterval(0.5), "no interval at another threshold")
	assert.Equal(t, 0.01, o.Servers[0].CPUHalfWidth)
	assert.Equal(t, 0.2, o.Servers[0].Pools[0].BusyHalfWidth)
	assert.Equal(t, MeasuredWindow{WarmUpSeconds: 30, IntervalSeconds: 1, Batches: 10, Precision: 0.02, Precise: true,
		Limit: "goodput at 2 s", Excess: 0.8}, *o.Window)
	assert.True(t, o.HasIntervals())

	// A window of one batch has no interval: none is written.
	var p Observation
	p.SetIntervals(figs[:1], Estimates{Intervals: []Interval{{1, math.Inf(1)}}, Batches: []int{1}, Worst: 0, Excess: math.Inf(1)}, MeasuredWindow{IntervalSeconds: 1})
	assert.False(t, p.HasIntervals())
	assert.Equal(t, 0.0, p.ThroughputHalfWidth)

	o.Servers[0].CPUHalfWidth = -1
	o.GoodputIntervals[0].SLA = 0
	assert.Equal(t, []string{
		"observation.goodput[0].sla: want a threshold in seconds > 0, got 0",
		"observation.servers[0].cpuHalfWidth: want a half-width >= 0, got -1",
	}, o.Problems())
}

// The steps every runner's adaptive trial takes (10 s least warm-up, 120 s
// longest window, 20 batches).
func TestStoppingNext(t *testing.T) {
	s := Stopping{Precision: 0.02}
	for _, c := range []struct {
		t, n    int
		trusted bool
		want    Step
	}{
		{29, 14, false, StepWait},          // not shown over, 19 intervals since the least warm-up
		{40, 30, false, StepEstimateWhole}, // not shown over: 30 batches of one since the least warm-up
		{51, 25, false, StepWait},          // batches of 2 would leave one interval out
		{52, 26, false, StepEstimateWhole}, // 21 batches of 2
		{130, 65, false, StepEnd},          // not shown over by then: the later half, as it is
		{30, 19, true, StepWait},           // fewer than 20 intervals
		{30, 20, true, StepEstimate},       // 20 batches of one
		{51, 41, true, StepWait},           // batches of 2 would leave one interval out
		{52, 42, true, StepEstimate},       // 21 batches of 2
		{130, 120, true, StepEnd},          // the longest window
	} {
		assert.Equal(t, c.want, s.Next(c.t, c.n, 10, 120, c.trusted), "t %d n %d trusted %v", c.t, c.n, c.trusted)
	}
}

// A window whose start MSER does not trust ends the trial only if the
// transient shifts no figure by more than the precision.
func TestStoppingEstimateWhole(t *testing.T) {
	s := Stopping{Precision: 0.05}
	figs := []Figure{{Kind: FigureThroughput}, {Kind: FigureCPU, Server: "app-1", Capacity: 1}}
	// A noisy CPU (sd 0.1) whose first half is higher by step.
	window := func(step float64) [][]float64 {
		r := rand.New(rand.NewPCG(1, 7))
		thr, cpu := noise(r, 40, 300, 10), noise(r, 40, 0.8, 0.1)
		for i := range 20 {
			cpu[i] += step
		}
		return [][]float64{thr, cpu}
	}
	steady := s.EstimateWhole(figs, window(0), 20)
	assert.True(t, steady.Precise, "excess %v", steady.Excess)
	small := s.EstimateWhole(figs, window(0.02), 20)
	assert.True(t, small.Precise, "the later half is 0.01 below the whole window's mean: within 5% of 0.81")

	shifted := window(0.1)
	require.True(t, s.Estimate(figs, shifted).Precise, "precise as a window, the batch means hide the step")
	whole := s.EstimateWhole(figs, shifted, 20)
	assert.False(t, whole.Precise, "the later half is 0.05 below the whole window's mean, past 5% of 0.85")
	assert.Equal(t, 1, whole.Worst)
	assert.Greater(t, whole.Excess, 1.0)

	// The whole window must be precise too.
	assert.False(t, Stopping{Precision: 0.001}.EstimateWhole(figs, window(0), 20).Precise)
}
