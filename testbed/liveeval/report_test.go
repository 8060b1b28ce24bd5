package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func testReport() *Report {
	r := &Report{SLAs: []float64{0.1, 0.5}, GridUsers: []int{100, 140},
		Caps:     map[string]float64{"web": 0.5, "app": 0.1, "db": 0.6},
		Critical: Critical{Tier: "app", Resource: "cpu", SaturationWorkload: 100, MaxThroughput: 200},
		Recommendations: []Recommendation{{MinJobsAt: "saturation", Allocation: "100-8-8", Experiments: 10},
			{MinJobsAt: "knee", Allocation: "100-5-5", Experiments: 8}},
		Campaign:     []Trial{{Users: 20, Seconds: 10}, {Users: 40, Seconds: 11}, {Users: 60, Seconds: 12}},
		FindCritical: Approach{Experiments: 6, Seconds: 90},
		GridAllocations: []GridAllocation{{Allocation: "100-8-8", Role: "recommended"}, {Allocation: "100-1000-200", Role: "over-allocated"},
			{Allocation: "100-2-1", Role: "under-allocated"}},
		Apply: []ApplyTrial{{Mode: "runtime", ApplySeconds: 1, Trial: Trial{CPUPerPageMS: 0.4}}, {Mode: "runtime", ApplySeconds: 3, Trial: Trial{CPUPerPageMS: 0.6}},
			{Mode: "restart", ApplySeconds: 20, Trial: Trial{CPUPerPageMS: 1}}},
	}
	g := func(a string, users int, g1, g5 float64) GridRow {
		return GridRow{Allocation: a, Users: users, Goodput: map[string]float64{"0.1": g1, "0.5": g5}}
	}
	r.Grid = []GridRow{g("100-8-8", 100, 150, 190), g("100-8-8", 140, 140, 200),
		g("100-1000-200", 100, 160, 195), g("100-1000-200", 140, 100, 150),
		g("100-2-1", 100, 50, 60), g("100-2-1", 140, 40, 61)}
	r.GridApproach = Approach{Experiments: len(r.Grid), Seconds: 100}
	return r
}

func TestAnalyse(t *testing.T) {
	r := testReport()
	r.Analyse()
	require.Len(t, r.Scores, 3)
	rec, over, under := r.Scores[0], r.Scores[1], r.Scores[2]
	// Each allocation's best over the workloads, against the grid's best.
	assert.InDelta(t, 150.0/160, rec.OfBest["0.1"], 1e-9)
	assert.InDelta(t, 1.0, rec.OfBest["0.5"], 1e-9)
	assert.InDelta(t, 1.0, over.OfBest["0.1"], 1e-9)
	assert.InDelta(t, 61.0/200, under.OfBest["0.5"], 1e-9)
	assert.Equal(t, Approach{Experiments: 3, Seconds: 33}, r.RecommendApproach, "every trial of find-critical and both recommends")
	assert.InDelta(t, 2.0, r.ApplySummary["runtime"].ApplySeconds, 1e-9)
	assert.InDelta(t, 0.5, r.ApplySummary["runtime"].CPUPerPageMS, 1e-9)

	// Past the knee, at the highest workload: the over-allocated pools lose
	// a quarter of the recommendation's goodput; the under-allocated ones
	// are not past the knee.
	require.Len(t, r.PastKnee, 2)
	assert.Equal(t, "100-8-8", r.PastKnee[0].Allocation)
	assert.Equal(t, "100-1000-200", r.PastKnee[1].Allocation)
	assert.Equal(t, 140, r.PastKnee[1].Users)
	assert.InDelta(t, -0.25, r.PastKnee[1].Change["0.5"], 1e-9)
}

func TestWriteAndRender(t *testing.T) {
	r := testReport()
	r.Analyse()
	dir := t.TempDir()
	require.NoError(t, r.Write(dir))
	md, err := os.ReadFile(filepath.Join(dir, "live-evaluation.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "| 100-1000-200 | 100.0 (-28.6%) | 150.0 (-25.0%) |")
	for _, f := range []string{"live-evaluation-goodput.svg", "live-evaluation-cost.svg"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err)
		assert.Contains(t, string(b), "<svg", f)
	}
	// -render draws the same report again from the JSON.
	again := t.TempDir()
	require.NoError(t, rerender(filepath.Join(dir, "live-evaluation.json"), again))
	md2, err := os.ReadFile(filepath.Join(again, "live-evaluation.md"))
	require.NoError(t, err)
	assert.Equal(t, string(md), string(md2))
}

func TestParseSLAs(t *testing.T) {
	s, err := parseSLAs("0.1, 0.25,0.5")
	require.NoError(t, err)
	assert.Equal(t, []float64{0.1, 0.25, 0.5}, s)
	_, err = parseSLAs("0.1,fast")
	assert.EqualError(t, err, `-sla "0.1,fast": want positive seconds such as 0.1,0.25,0.5`)
}
