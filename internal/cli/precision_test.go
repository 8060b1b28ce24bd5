package cli_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Trials are adaptive by default; --precision sets the precision (2% or
// 0.02), --fixed (or --precision 0) gives the paper's fixed trials.
func TestSlowPrecisionFlags(t *testing.T) {
	sim := []string{"simulate", "-t", "1/2/1/2", "--users", "2000", "--runtime", "2m", "--output", "observation", "--no-journal"}
	observe := func(args ...string) map[string]any {
		stdout, stderr, code := run(t, "", append(append([]string{}, sim...), args...)...)
		require.Equal(t, 0, code, stderr)
		var o map[string]any
		require.NoError(t, json.Unmarshal([]byte(stdout), &o))
		return o
	}
	def := observe()
	w := def["window"].(map[string]any)
	assert.Equal(t, 0.02, w["precision"], "adaptive by default, at 2%")
	assert.Less(t, def["runtimeSeconds"], 120.0, "a 2000-user trial is precise before its longest window")
	assert.Len(t, def["goodput"], 3, "goodput at each --sla threshold")

	loose := observe("--precision", "10%")
	assert.Equal(t, 0.1, loose["window"].(map[string]any)["precision"])
	assert.LessOrEqual(t, loose["runtimeSeconds"], def["runtimeSeconds"])

	for _, fixed := range [][]string{{"--fixed"}, {"--precision", "0"}} {
		o := observe(fixed...)
		assert.Equal(t, 120.0, o["runtimeSeconds"], "%v", fixed)
		assert.NotContains(t, o["window"], "precision", "%v: a fixed trial", fixed)
		assert.Equal(t, 60.0, o["window"].(map[string]any)["warmUpSeconds"], "the simulator's fixed warm-up")
	}

	for _, tc := range []struct {
		args []string
		line string
	}{
		{[]string{"--fixed", "--precision", "1%"}, "--fixed and --precision 0.01: give one (--fixed is --precision 0)"},
		{[]string{"--precision", "60%"}, `--precision: want a share in [0, 0.5] such as 2% or 0.02 (0: fixed trials), got "60%"`},
		{[]string{"--precision", "tight"}, `--precision: want a share in [0, 0.5] such as 2% or 0.02 (0: fixed trials), got "tight"`},
	} {
		stdout, stderr, code := run(t, "", append(append([]string{}, sim...), tc.args...)...)
		assert.Equal(t, 2, code, "%v", tc.args)
		assert.Equal(t, "softalloc: "+tc.line+"\n", stderr)
		assert.Empty(t, stdout)
	}
}

// --output json carries the measured time and the intervals: simulate's
// rows, and recommend's scan points.
func TestSlowJSONCarriesIntervals(t *testing.T) {
	stdout, stderr, code := run(t, "", "simulate", "-t", "1/2/1/2", "--users", "3000", "--runtime", "2m", "--sla", "2", "--output", "json", "--no-journal")
	require.Equal(t, 0, code, stderr)
	var rows []map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &rows))
	require.Len(t, rows, 1)
	r := rows[0]
	assert.Less(t, r["runtimeSeconds"], 120.0)
	assert.Positive(t, r["throughputHalfWidth"])
	assert.Contains(t, r["goodputHalfWidth"], "2")
	assert.Equal(t, true, r["window"].(map[string]any)["precise"])
	srv := r["servers"].([]any)[1].(map[string]any)
	assert.Positive(t, srv["cpuHalfWidth"])

	stdout, stderr, code = run(t, "", "recommend", "-t", "1/2/1/2", "--runtime", "2m", "--output", "json", "--no-journal", "--quiet")
	require.Equal(t, 0, code, stderr)
	var rec struct {
		Evidence struct {
			Scan []map[string]any `json:"scan"`
		} `json:"evidence"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &rec))
	require.NotEmpty(t, rec.Evidence.Scan)
	for _, p := range rec.Evidence.Scan {
		assert.Positive(t, p["runtimeSeconds"])
		assert.Positive(t, p["throughputHalfWidth"])
		assert.Positive(t, p["criticalUtilizationHalfWidth"])
	}
}

// validate says which allocations cannot be told from the grid's best.
func TestSlowValidateSaysWhatIsWithinTheNoise(t *testing.T) {
	stdout, stderr, code := run(t, "", "validate", "-t", "1/2/1/2", "--recommended", "400-21-21", "--users", "5000,5500",
		"--grid-threads", "21,150", "--grid-connections", "1,21", "--runtime", "1m", "--output", "json", "--no-journal", "--quiet")
	require.Equal(t, 0, code, stderr)
	var doc struct {
		Best struct {
			Indistinguishable bool    `json:"indistinguishable"`
			HalfWidth         float64 `json:"maxGoodputHalfWidth"`
		} `json:"best"`
		Grid []struct {
			Allocation        string  `json:"allocation"`
			Ratio             float64 `json:"ratio"`
			Indistinguishable bool    `json:"indistinguishable"`
		} `json:"grid"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
	assert.True(t, doc.Best.Indistinguishable, "the best is as good as itself")
	assert.Positive(t, doc.Best.HalfWidth)
	for _, g := range doc.Grid {
		if g.Allocation == "400-21-1" {
			assert.False(t, g.Indistinguishable, "one connection is clearly worse (ratio %.3f)", g.Ratio)
		}
	}
}
