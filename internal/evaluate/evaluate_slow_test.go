//go:build !race

package evaluate

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
)

// Long-running (the race detector would make it ten times slower); the
// Makefile's second pass runs it.
// A small evaluation end to end: every section is measured and written.
func TestSlowRunAndWrite(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Topologies, cfg.Seeds = []string{"1/2/1/2"}, []uint64{1, 2}
	cfg.Timing = algorithms.Timing{RampUp: 10 * time.Second, Runtime: 30 * time.Second, Precision: 0.05}
	cfg.FixedTiming = algorithms.Timing{RampUp: 10 * time.Second, Runtime: 20 * time.Second}
	cfg.Coverage.Topology, cfg.Coverage.Workloads, cfg.Coverage.Seeds = "1/2/1/2", []int{2000}, 4
	cfg.Coverage.LongSeeds, cfg.Coverage.LongRuntime, cfg.Coverage.CRNSeeds = 1, time.Minute, 3
	cfg.Coverage.Timing.Runtime = 30 * time.Second
	cfg.Precisions = []float64{0.05}
	cfg.SpeedTiming = algorithms.Timing{RampUp: 5 * time.Second, Runtime: 10 * time.Second}
	cfg.SpeedUsers = []int{1000}
	rep, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	require.Len(t, rep.Results, 2)
	assert.Len(t, rep.Speed.Trials, 4)
	for _, r := range rep.Results {
		require.Len(t, r.Campaigns, 3)
		e, p := r.Campaigns[0], r.Campaigns[1]
		assert.Empty(t, e.Error)
		assert.Equal(t, "app/cpu", e.Critical)
		assert.Less(t, e.Experiments, p.Experiments, "the efficient mode needs fewer experiments")
		require.NotNil(t, r.Fixed, "the default campaign with fixed trials beside")
		assert.Equal(t, "app/cpu", r.Fixed.Critical)
		assert.Zero(t, r.Fixed.Precision)
		assert.Equal(t, 0.05, e.Precision)
		assert.Positive(t, e.SimulatedSeconds)
		assert.Positive(t, r.GridSimulatedSeconds)
		assert.InDelta(t, 1, r.GridBest.Ratio["2"], 1e-12)
		for _, q := range r.Compared {
			for _, v := range q.Ratio {
				assert.LessOrEqual(t, v, 1.0+1e-12, "%s", q.Role)
			}
		}
	}
	dir := t.TempDir()
	require.NoError(t, Write(dir, rep))
	md, err := os.ReadFile(filepath.Join(dir, "evaluation.md"))
	require.NoError(t, err)
	require.NotNil(t, rep.Coverage)
	assert.Len(t, rep.Coverage.Workloads, 1)
	assert.Positive(t, rep.Coverage.Overall)
	assert.Len(t, rep.Coverage.CRN, 1)
	assert.Len(t, rep.Precisions, 4, "fixed and 5%, two seeds")
	for _, section := range []string{"## 1. Simulator speed", "## 2. Experiments needed", "### Adaptive against fixed-length trials", "## 3. Quality",
		"Seed-to-seed spread", "## 5. Coverage of the intervals", "Common random numbers", "### Choosing the default precision", "## 6. Wall time"} {
		assert.Contains(t, string(md), section)
	}
	var back Report
	js, err := os.ReadFile(filepath.Join(dir, "evaluation.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(js, &back))
	assert.Equal(t, rep.Results[0].Campaigns[0].Allocation, back.Results[0].Campaigns[0].Allocation)
	for _, plot := range []string{"evaluation-speed.svg", "evaluation-experiments.svg"} {
		svg, err := os.ReadFile(filepath.Join(dir, plot))
		require.NoError(t, err)
		assert.True(t, bytes.Contains(svg, []byte("<svg")), plot)
	}
}
