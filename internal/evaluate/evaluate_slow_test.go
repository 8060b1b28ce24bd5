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

// smallConfig is a short evaluation of 1/1/1/1: trials of seconds, a
// coverage of a few seeds at one workload.
func smallConfig(seeds ...uint64) Config {
	cfg := DefaultConfig()
	cfg.Topologies, cfg.Seeds = []string{"1/1/1/1"}, seeds
	cfg.Timing = algorithms.Timing{RampUp: 10 * time.Second, Runtime: 30 * time.Second, Precision: 0.05}
	cfg.FixedTiming = algorithms.Timing{RampUp: 10 * time.Second, Runtime: 20 * time.Second}
	cfg.Coverage.Topology, cfg.Coverage.Workloads, cfg.Coverage.Seeds = "1/1/1/1", []int{1000}, 4
	cfg.Coverage.LongSeeds, cfg.Coverage.LongRuntime, cfg.Coverage.CRNSeeds = 1, time.Minute, 3
	cfg.Coverage.Timing.Runtime = 30 * time.Second
	cfg.Precisions = []float64{0.05}
	cfg.SpeedTiming = algorithms.Timing{RampUp: 5 * time.Second, Runtime: 10 * time.Second}
	cfg.SpeedUsers = []int{1000}
	cfg.ScreenedGrid = GridKey{"1/1/1/1", 1}
	cfg.RampTiming = cfg.Timing
	return cfg
}

// The reference and the run judged on it, end to end: a fixed-length
// evaluation measures its grid and the coverage's truth and writes them;
// an adaptive one reads them back, judges seed 1 on the reference's grid
// (the screened grid of its own beside it) and measures seed 2's own grid,
// which the reference lacks; a reference the simulator does not reproduce
// is refused.
func TestSlowRunAndWrite(t *testing.T) {
	ctx := context.Background()
	fixed := smallConfig(1)
	fixed.Timing, fixed.Coverage.Seeds = fixed.FixedTiming, 0
	ref, err := Run(ctx, fixed)
	require.NoError(t, err)
	require.Len(t, ref.Results, 1)
	assert.Equal(t, "measured", ref.Results[0].GridSource)
	assert.Nil(t, ref.Coverage, "a fixed run checks no intervals")
	assert.Nil(t, ref.Ramps, "nor ramps: a ramp's windows are measured to a precision")
	require.NotNil(t, ref.CoverageTruth, "but measures what they are checked against")
	assert.Len(t, ref.CoverageTruth.Means, 1)
	assert.Len(t, ref.CoverageTruth.CRN, 1)
	require.Len(t, ref.Precisions, 1, "the precision table's fixed campaign, for the adaptive runs")
	assert.Zero(t, ref.Precisions[0].Precision)
	refDir := t.TempDir()
	require.NoError(t, Write(refDir, ref))
	grids, err := ReadGrids(filepath.Join(refDir, GridsFile))
	require.NoError(t, err)
	require.Len(t, grids[GridKey{"1/1/1/1", 1}], ref.Results[0].GridAllocations)
	for _, g := range grids[GridKey{"1/1/1/1", 1}] {
		for _, hw := range g.HalfWidth {
			assert.Positive(t, hw[0], "fixed trials' goodput carries its interval: %s", g.Allocation)
		}
	}

	cfg := smallConfig(1, 2)
	cfg.Reference, cfg.ReferenceGrids = &ref, grids
	rep, err := Run(ctx, cfg)
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
		assert.Positive(t, e.CPUSeconds, "a campaign's CPU is its thread's")
		assert.Positive(t, r.GridSimulatedSeconds)
		assert.InDelta(t, 1, r.GridBest.Ratio["2"], 1e-12)
		for _, q := range r.Compared {
			for _, v := range q.Ratio {
				assert.LessOrEqual(t, v, 1.0+1e-12, "%s", q.Role)
			}
		}
	}
	// The ramp beside the default campaign and the fixed one, each judged
	// on the topology's grid.
	require.Len(t, rep.Ramps, 2)
	for i, r := range rep.Ramps {
		assert.Equal(t, rep.Results[i].Topology, r.Topology)
		assert.Equal(t, rep.Results[i].Seed, r.Seed)
		assert.Empty(t, r.Ramp.Error)
		assert.Equal(t, "app/cpu", r.Ramp.Critical)
		assert.Positive(t, r.Ramp.Windows)
		assert.Positive(t, r.Ramp.EngineSeconds)
		assert.Empty(t, r.Default.Error)
		assert.Positive(t, r.Default.EngineSeconds)
		assert.LessOrEqual(t, r.Default.EngineSeconds, r.Default.SimulatedSeconds, "a refinement adds only its excess")
		require.NotNil(t, r.Fixed)
		assert.Equal(t, rep.Results[i].Fixed.Allocation, r.Fixed.Allocation)
		var roles []string
		for _, q := range r.Compared {
			roles = append(roles, q.Role)
			assert.Len(t, q.Ratio, len(cfg.SLAs), q.Role)
		}
		assert.ElementsMatch(t, []string{roleRamp, roleDefault, roleFixed}, roles)
	}
	assert.Equal(t, cfg.RampTiming.Runtime.Seconds(), rep.Config.RampRuntimeSeconds)
	one, two := rep.Results[0], rep.Results[1]
	assert.Equal(t, "reference", one.GridSource)
	assert.Equal(t, ref.Results[0].GridWorkloads, one.GridWorkloads, "the reference's grid, at its workloads")
	assert.GreaterOrEqual(t, one.GridAllocations, ref.Results[0].GridAllocations)
	assert.Less(t, one.GridTrials, ref.Results[0].GridTrials/10, "only the check and the answers the reference lacks")
	assert.Equal(t, "measured", two.GridSource, "seed 2 is not in the reference")
	assert.NotEmpty(t, two.Grid, "its grid is written")
	// On one grid, the same allocation has the same ratio whoever names it.
	require.NotEmpty(t, one.ReferenceCompared)
	theirs := map[string]Quality{}
	for _, q := range one.ReferenceCompared {
		theirs[q.Role] = q
	}
	for _, q := range one.Compared {
		if f, ok := theirs[q.Role]; ok && f.Allocation == q.Allocation {
			assert.Equal(t, f.Ratio, q.Ratio, q.Role)
		}
	}
	require.NotNil(t, rep.ScreenedGrid)
	sg := rep.ScreenedGrid
	assert.Equal(t, "1/1/1/1", sg.Topology)
	assert.Equal(t, one.GridWorkloads, sg.Workloads)
	assert.GreaterOrEqual(t, sg.Trials, sg.Allocations*len(sg.Workloads), "every cell at least once")
	assert.Positive(t, sg.SimulatedSeconds)
	assert.Len(t, sg.BestOnReference, len(cfg.SLAs), "the screened grid's best is measured on the reference's grid too")
	assert.Positive(t, rep.Sections.ScreenedGridCPU)
	assert.Positive(t, rep.Sections.TopologiesCPU)
	require.NotNil(t, rep.Coverage)
	assert.True(t, rep.Coverage.TruthFromReference)
	assert.Equal(t, ref.CoverageTruth.CRN, rep.Coverage.CRN)
	assert.Positive(t, rep.Coverage.Overall)
	assert.Len(t, rep.Precisions, 4, "fixed and 5%, two seeds")
	for _, r := range rep.Precisions {
		assert.False(t, r.FromReference, "the reference lacks seed 2: every campaign is measured here")
	}
	require.NotNil(t, rep.Reference)
	assert.Len(t, rep.Reference.Rows, 1, "the reference holds seed 1 alone")

	dir := t.TempDir()
	require.NoError(t, Write(dir, rep))
	md, err := os.ReadFile(filepath.Join(dir, "evaluation.md"))
	require.NoError(t, err)
	for _, section := range []string{"## 1. Simulator speed", "## 2. Experiments needed", "### Adaptive against fixed-length trials",
		"### A grid with adaptive trials beside the reference's", "## 3. Quality", "Seed-to-seed spread", "## 5. Coverage of the intervals",
		"Common random numbers", "### Choosing the default precision", "## 4. One ramp against the staircase", "## 6. Wall time", "is the reference's"} {
		assert.Contains(t, string(md), section)
	}
	var back Report
	js, err := os.ReadFile(filepath.Join(dir, "evaluation.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(js, &back))
	assert.Equal(t, rep.Results[0].Campaigns[0].Allocation, back.Results[0].Campaigns[0].Allocation)
	mine, err := ReadGrids(filepath.Join(dir, GridsFile))
	require.NoError(t, err)
	assert.NotContains(t, mine, GridKey{"1/1/1/1", 1}, "a grid taken from the reference is not written again")
	assert.Contains(t, mine, GridKey{"1/1/1/1", 2})
	for _, plot := range []string{"evaluation-speed.svg", "evaluation-experiments.svg"} {
		svg, err := os.ReadFile(filepath.Join(dir, plot))
		require.NoError(t, err)
		assert.True(t, bytes.Contains(svg, []byte("<svg")), plot)
	}

	// A reference this simulator does not reproduce is no ground truth.
	stale := map[GridKey][]GridCurves{}
	for k, g := range grids {
		g = append([]GridCurves(nil), g...)
		first := g[0]
		first.Goodput = [][]float64{append([]float64{first.Goodput[0][0] * 1.001}, first.Goodput[0][1:]...)}
		first.Goodput = append(first.Goodput, g[0].Goodput[1:]...)
		g[0] = first
		stale[k] = g
	}
	cfg = smallConfig(1)
	cfg.Reference, cfg.ReferenceGrids = &ref, stale
	cfg.Precisions, cfg.Coverage.Seeds = nil, 0
	_, err = Run(ctx, cfg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the reference is stale")
	assert.Contains(t, err.Error(), "make evaluate-fixed")

	// So is one whose fixed-length campaign this code does not repeat; its
	// precision table's fixed campaigns are taken when it holds them all.
	other := ref
	other.Results = append([]TopologyResult(nil), ref.Results...)
	other.Results[0].Campaigns = append([]Campaign(nil), ref.Results[0].Campaigns...)
	other.Results[0].Campaigns[0].MinJobs += 0.5
	cfg.Reference, cfg.ReferenceGrids = &other, grids
	_, err = Run(ctx, cfg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "its fixed-length campaign recommended")
	cfg = smallConfig(1)
	cfg.Reference, cfg.ReferenceGrids = &ref, grids
	cfg.Coverage.Seeds, cfg.ScreenedGrid = 0, GridKey{}
	rep, err = Run(ctx, cfg)
	require.NoError(t, err)
	require.Len(t, rep.Precisions, 2)
	assert.Equal(t, ref.Precisions[0].Allocation, rep.Precisions[0].Allocation)
	assert.True(t, rep.Precisions[0].FromReference)
	assert.False(t, rep.Precisions[1].FromReference)
}
