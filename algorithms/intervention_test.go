package algorithms

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// steps returns n workloads from start, step apart.
func steps(n int, start, step float64) []float64 {
	w := make([]float64, n)
	for i := range w {
		w[i] = start + step*float64(i)
	}
	return w
}

// kneeSeries is satisfaction level before index knee, then falling by fall
// per step; slope adds a gentle linear decline over the whole series.
func kneeSeries(n, knee int, level, slope, fall float64) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = level - slope*float64(i)
		if i >= knee {
			s[i] -= fall * float64(i-knee+1)
		}
	}
	return s
}

func TestDefaultInterventionOptions(t *testing.T) {
	d := DefaultInterventionOptions()
	assert.Equal(t, InterventionOptions{Alpha: 0.05, Consecutive: 2, MinDrop: 0.01, Baseline: 4}, d)
	got, err := InterventionOptions{}.withDefaults()
	require.NoError(t, err)
	assert.Equal(t, d, got, "zero fields take the defaults")
	got, err = InterventionOptions{Consecutive: 3}.withDefaults()
	require.NoError(t, err)
	assert.Equal(t, InterventionOptions{Alpha: 0.05, Consecutive: 3, MinDrop: 0.01, Baseline: 4}, got)
}

func TestInterventionAnalysisKnownKnee(t *testing.T) {
	tests := []struct {
		name      string
		workloads []float64
		slo       []float64
		opts      InterventionOptions
		knee      int
	}{
		{
			name:      "flat 1.0 then a steep fall (sigma 0: MinDrop decides)",
			workloads: steps(16, 1000, 200),
			slo:       kneeSeries(16, 9, 1, 0, 0.05),
			knee:      9,
		},
		{
			name:      "flat 1.0, a fall under MinDrop, then the knee",
			workloads: steps(12, 100, 100),
			slo:       []float64{1, 1, 1, 1, 1, 1, 0.995, 0.995, 0.97, 0.93, 0.85, 0.7},
			knee:      8,
		},
		{
			name:      "gently declining baseline, then a bend",
			workloads: steps(24, 3000, 200),
			slo:       kneeSeries(24, 14, 0.999, 0.0004, 0.015),
			knee:      14,
		},
		{
			name:      "uneven workload steps",
			workloads: []float64{100, 500, 900, 1000, 1600, 2000, 2100, 2150, 2200, 2400, 3000},
			slo:       []float64{0.998, 0.998, 0.997, 0.998, 0.997, 0.996, 0.997, 0.95, 0.90, 0.80, 0.50},
			knee:      7,
		},
		{
			name:      "Table-I-like scan: knee at 5,800 users",
			workloads: steps(14, 5000, 100),
			slo:       []float64{0.999, 0.999, 0.998, 0.999, 0.998, 0.998, 0.997, 0.998, 0.99, 0.96, 0.91, 0.85, 0.80, 0.74},
			knee:      8,
		},
		{
			name:      "three in a row confirm",
			workloads: steps(15, 10, 10),
			slo:       kneeSeries(15, 10, 0.98, 0, 0.02),
			opts:      InterventionOptions{Consecutive: 3},
			knee:      10,
		},
		{
			name:      "a larger baseline",
			workloads: steps(20, 10, 10),
			slo:       kneeSeries(20, 12, 0.98, 0, 0.02),
			opts:      InterventionOptions{Baseline: 8},
			knee:      12,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Len(t, tc.slo, len(tc.workloads))
			res, err := InterventionAnalysis(tc.workloads, tc.slo, tc.opts)
			require.NoError(t, err)
			require.True(t, res.Knee, "warnings: %v", res.Warnings)
			assert.InDelta(t, tc.knee, res.Index, 1, "found within one step")
			assert.Equal(t, tc.workloads[res.Index], res.Workload)
			assert.GreaterOrEqual(t, res.Fit.N, max(4, tc.opts.Baseline))
			assert.LessOrEqual(t, res.Fit.N, res.Index, "the baseline holds only points before the knee")
			assert.Empty(t, res.Warnings)
		})
	}
}

func TestInterventionAnalysisFlatBaseline(t *testing.T) {
	w := steps(10, 100, 100)
	s := []float64{1, 1, 1, 1, 1, 1, 1, 0.98, 0.95, 0.9}
	res, err := InterventionAnalysis(w, s, InterventionOptions{})
	require.NoError(t, err)
	require.True(t, res.Knee)
	assert.Equal(t, 7, res.Index)
	assert.Equal(t, 800.0, res.Workload)
	assert.Zero(t, res.Fit.Sigma, "a perfectly flat baseline has no residual")
	assert.InDelta(t, 1, res.Fit.Intercept, 1e-12)
	assert.InDelta(t, 0, res.Fit.Slope, 1e-12)
	assert.Equal(t, 7, res.Fit.N)
}

// TestInterventionAnalysisNoisy draws 200 seeded series: satisfaction 0.99
// plus Gaussian noise of sd 0.005 (clipped at 1) for 20 points, then falling
// 0.02 per step. The true knee is index 20. MinDrop is 4 noise sd (0.02), as
// the doc of InterventionAnalysis advises; the default 0.01 is checked at
// noise sd 0.0025, its own 4-sd level.
func TestInterventionAnalysisNoisy(t *testing.T) {
	const seeds, trueKnee, points = 200, 20, 32
	tests := []struct {
		name    string
		noiseSD float64
		opts    InterventionOptions
	}{
		{"sd 0.005, MinDrop 0.02", 0.005, InterventionOptions{MinDrop: 0.02}},
		{"sd 0.0025, defaults", 0.0025, InterventionOptions{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := steps(points, 4000, 100)
			for seed := range uint64(seeds) {
				rng := rand.New(rand.NewPCG(seed, 2011))
				s := kneeSeries(points, trueKnee, 0.99, 0, 0.02)
				for i := range s {
					s[i] = math.Min(1, s[i]+rng.NormFloat64()*tc.noiseSD)
				}
				res, err := InterventionAnalysis(w, s, tc.opts)
				require.NoError(t, err)
				require.True(t, res.Knee, "seed %d: the fall must be found", seed)
				require.GreaterOrEqual(t, res.Index, trueKnee, "seed %d: false knee before the true one", seed)
				require.LessOrEqual(t, res.Index, trueKnee+1, "seed %d: found within one step", seed)
			}
		})
	}
}

func TestInterventionAnalysisNoKnee(t *testing.T) {
	noisy := make([]float64, 30)
	rng := rand.New(rand.NewPCG(7, 11))
	for i := range noisy {
		noisy[i] = math.Min(1, 0.995+rng.NormFloat64()*0.001)
	}
	tests := []struct {
		name      string
		workloads []float64
		slo       []float64
	}{
		{"all 1.0", steps(12, 100, 100), kneeSeries(12, 99, 1, 0, 0)},
		{"noise around 0.995, sd 0.001", steps(30, 100, 100), noisy},
		{"steady gentle decline", steps(25, 1000, 100), kneeSeries(25, 99, 1, 0.002, 0)},
		{"rising", steps(10, 1, 1), []float64{0.90, 0.91, 0.92, 0.93, 0.94, 0.95, 0.96, 0.97, 0.98, 0.99}},
		{"exactly the baseline", steps(4, 1, 1), []float64{1, 1, 1, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := InterventionAnalysis(tc.workloads, tc.slo, InterventionOptions{})
			require.NoError(t, err)
			assert.False(t, res.Knee)
			assert.Equal(t, -1, res.Index)
			assert.Zero(t, res.Workload)
			assert.Equal(t, len(tc.workloads), res.Fit.N, "every point joined the baseline")
			require.NotEmpty(t, res.Warnings)
			assert.Contains(t, res.Warnings[len(res.Warnings)-1], "no knee found")
		})
	}
}

func TestInterventionAnalysisUnconfirmed(t *testing.T) {
	tests := []struct {
		name    string
		slo     []float64
		opts    InterventionOptions
		knee    bool
		warning string
	}{
		{
			name:    "falls only at its last point",
			slo:     []float64{1, 1, 1, 1, 1, 1, 1, 0.9},
			warning: "the series ends with 1 flagged point from workload 800: not a knee, 2 in a row confirm one; extend the series",
		},
		{
			name:    "one dip that recovers",
			slo:     []float64{1, 1, 1, 1, 0.95, 1, 1, 1},
			warning: "1 flagged point from workload 500, then a recovery: not a knee",
		},
		{
			name:    "two at the end when three confirm",
			slo:     []float64{1, 1, 1, 1, 1, 1, 0.95, 0.9},
			opts:    InterventionOptions{Consecutive: 3},
			warning: "the series ends with 2 flagged points from workload 700: not a knee, 3 in a row confirm one; extend the series",
		},
		{
			name: "one point is a knee when one confirms",
			slo:  []float64{1, 1, 1, 1, 1, 1, 1, 0.9},
			opts: InterventionOptions{Consecutive: 1},
			knee: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := InterventionAnalysis(steps(len(tc.slo), 100, 100), tc.slo, tc.opts)
			require.NoError(t, err)
			assert.Equal(t, tc.knee, res.Knee)
			if tc.knee {
				assert.Equal(t, len(tc.slo)-1, res.Index)
				return
			}
			assert.Equal(t, -1, res.Index)
			assert.Contains(t, res.Warnings, tc.warning)
		})
	}
}

func TestInterventionAnalysisShortSeries(t *testing.T) {
	res, err := InterventionAnalysis([]float64{1, 2, 3}, []float64{1, 0.5, 0.1}, InterventionOptions{})
	require.NoError(t, err, "too short is a warning, not an error")
	assert.False(t, res.Knee)
	assert.Equal(t, -1, res.Index)
	assert.Equal(t, []string{"series of 3 points is shorter than the 4-point baseline: no knee can be tested"}, res.Warnings)

	res, err = InterventionAnalysis(nil, nil, InterventionOptions{})
	require.NoError(t, err)
	assert.False(t, res.Knee)
}

func TestInterventionAnalysisFallingBaselineWarns(t *testing.T) {
	res, err := InterventionAnalysis(steps(8, 100, 100), []float64{1, 0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.65}, InterventionOptions{})
	require.NoError(t, err)
	assert.False(t, res.Knee, "a straight fall from the start has no knee")
	require.NotEmpty(t, res.Warnings)
	assert.Contains(t, res.Warnings[0], "the baseline already falls by 0.15")
}

func TestInterventionAnalysisErrors(t *testing.T) {
	w := steps(6, 100, 100)
	s := []float64{1, 1, 1, 1, 0.9, 0.8}
	tests := []struct {
		name      string
		workloads []float64
		slo       []float64
		opts      InterventionOptions
		want      string
	}{
		{"lengths differ", w, s[:5], InterventionOptions{}, "6 workloads but 5 SLO satisfaction values"},
		{"descending", []float64{100, 200, 150, 300, 400, 500}, s, InterventionOptions{}, "workloads[2]: want strictly ascending"},
		{"repeated workload", []float64{100, 200, 200, 300, 400, 500}, s, InterventionOptions{}, "workloads[2]: want strictly ascending"},
		{"NaN workload", []float64{100, math.NaN(), 300, 400, 500, 600}, s, InterventionOptions{}, "workloads[1]: want a finite number"},
		{"infinite workload", []float64{100, 200, 300, 400, 500, math.Inf(1)}, s, InterventionOptions{}, "workloads[5]: want a finite number"},
		{"NaN satisfaction", w, []float64{1, 1, math.NaN(), 1, 1, 1}, InterventionOptions{}, "sloSatisfaction[2]: want a finite number"},
		{"alpha too large", w, s, InterventionOptions{Alpha: 0.7}, "alpha"},
		{"negative alpha", w, s, InterventionOptions{Alpha: -0.05}, "alpha"},
		{"negative consecutive", w, s, InterventionOptions{Consecutive: -1}, "consecutive"},
		{"negative drop", w, s, InterventionOptions{MinDrop: -0.01}, "minDrop"},
		{"baseline of two", w, s, InterventionOptions{Baseline: 2}, "baseline"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := InterventionAnalysis(tc.workloads, tc.slo, tc.opts)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrInterventionInput)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func BenchmarkInterventionAnalysis(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	w := steps(60, 4000, 50)
	s := kneeSeries(60, 45, 0.99, 0, 0.02)
	for i := range s {
		s[i] = math.Min(1, s[i]+rng.NormFloat64()*0.002)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := InterventionAnalysis(w, s, InterventionOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
