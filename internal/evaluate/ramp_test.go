package evaluate

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/topology"
)

// rampGrid is a ranked two-workload grid of allocations with the given
// goodput at each workload, one SLA per curve given.
func rampGrid(t *testing.T, slas []float64, curves map[string][][]float64) algorithms.Comparison {
	cmp := algorithms.Comparison{Options: algorithms.CompareOptions{Workloads: []int{5000, 6000}, SLAs: slas}}
	for _, a := range []string{"400-150-60", "400-19-19", "400-22-22", "400-38-38"} {
		c, ok := curves[a]
		if !ok {
			continue
		}
		alloc, err := topology.ParseAllocation(a)
		require.NoError(t, err)
		e := algorithms.NewCompared(algorithms.GridEntry{Allocation: alloc, Role: algorithms.RoleGrid}, len(slas), 2)
		e.Goodput = c
		cmp.Entries = append(cmp.Entries, e)
	}
	cmp.Rank()
	return cmp
}

func allocation(t *testing.T, s string) algorithms.Allocation {
	a, err := topology.ParseAllocation(s)
	require.NoError(t, err)
	return a
}

// The ramp's row judges the ramp's, the default campaign's and the fixed
// campaign's answers on the topology's grid, each by its own role, and a
// failed campaign's answer not at all.
func TestRampRowJudgesTheThreeAnswersOnTheGrid(t *testing.T) {
	slas := []float64{0.5, 2}
	cmp := rampGrid(t, slas, map[string][][]float64{
		"400-38-38":  {{90, 100}, {95, 200}},
		"400-22-22":  {{99, 98}, {100, 199}},
		"400-19-19":  {{80, 95}, {90, 190}},
		"400-150-60": {{50, 60}, {60, 150}},
	})
	r := &rampRun{row: RampRow{Topology: "1/2/1/2", Seed: 1}, ramp: allocation(t, "400-22-22"), dflt: allocation(t, "400-19-19")}
	r.judge(cmp, allocation(t, "400-22-22"), slas)
	require.Len(t, r.row.Compared, 3)
	byRole := map[string]Quality{}
	for _, q := range r.row.Compared {
		byRole[q.Role] = q
	}
	assert.Equal(t, "400-22-22", byRole[roleRamp].Allocation)
	assert.InDelta(t, 0.99, byRole[roleRamp].Ratio["0.5"], 1e-12, "99 of the best 100 at 0.5 s")
	assert.InDelta(t, 199.0/200, byRole[roleRamp].Ratio["2"], 1e-12)
	assert.Equal(t, "400-19-19", byRole[roleDefault].Allocation)
	assert.InDelta(t, 0.95, byRole[roleDefault].Ratio["2"], 1e-12)
	assert.Equal(t, byRole[roleRamp].Ratio, byRole[roleFixed].Ratio, "one allocation, one ratio, whoever names it")

	failed := &rampRun{row: RampRow{Topology: "1/2/1/2", Seed: 2}, dflt: allocation(t, "400-19-19")}
	failed.judge(cmp, nil, slas)
	require.Len(t, failed.row.Compared, 1, "the ramp failed and there was no fixed campaign")
	assert.Equal(t, roleDefault, failed.row.Compared[0].Role)
}

// rampRows are two topology-seeds: the ramp agreeing with the fixed
// campaign on one, off by 0.8 points and another critical resource on the
// other, and a third row whose ramp failed.
func rampRows() []RampRow {
	q := func(role, alloc string, r05, r2 float64) Quality {
		return Quality{Role: role, Allocation: alloc, Ratio: map[string]float64{"0.5": r05, "2": r2}, Indistinguishable: []string{"2"}}
	}
	fixed1 := Campaign{Allocation: "400-19-19", Critical: "app/cpu", Saturation: 5500, MinJobs: 37.5, Experiments: 7, EngineSeconds: 1260, SimulatedSeconds: 1260, CPUSeconds: 0.7, WallSeconds: 0.8}
	fixed2 := Campaign{Allocation: "400-150-8", Critical: "cluster/cpu", Saturation: 6500, MinJobs: 20.8, Experiments: 7, EngineSeconds: 1260, SimulatedSeconds: 1260, CPUSeconds: 0.8, WallSeconds: 0.9}
	return []RampRow{
		{Topology: "1/2/1/2", Seed: 1,
			Ramp: Campaign{Mode: "ramp", Allocation: "400-19-19", Critical: "app/cpu", Saturation: 5600, MinJobs: 38.1, Experiments: 2, Ramps: 1, Windows: 9,
				EngineSeconds: 600, SimulatedSeconds: 600, CPUSeconds: 0.3, WallSeconds: 0.4},
			Default: Campaign{Allocation: "400-22-22", Critical: "app/cpu", Saturation: 5500, MinJobs: 42.5, Experiments: 8,
				EngineSeconds: 2000, SimulatedSeconds: 2260, CPUSeconds: 1.1, WallSeconds: 1.2},
			Fixed:    &fixed1,
			Compared: []Quality{q(roleRamp, "400-19-19", 0.997, 0.988), q(roleDefault, "400-22-22", 0.999, 0.995), q(roleFixed, "400-19-19", 0.997, 0.988)}},
		{Topology: "1/4/1/4", Seed: 1,
			Ramp: Campaign{Mode: "ramp", Allocation: "400-150-9", Critical: "db/cpu", Saturation: 6400, MinJobs: 23, Experiments: 3, Ramps: 2, Windows: 12,
				EngineSeconds: 1000, SimulatedSeconds: 1000, CPUSeconds: 0.5, WallSeconds: 0.6},
			Default: Campaign{Allocation: "400-150-9", Critical: "cluster/cpu", Saturation: 6500, MinJobs: 23.3, Experiments: 9,
				EngineSeconds: 1600, SimulatedSeconds: 1635, CPUSeconds: 1.6, WallSeconds: 1.7},
			Fixed:    &fixed2,
			Compared: []Quality{q(roleRamp, "400-150-9", 0.990, 0.992), q(roleDefault, "400-150-9", 0.990, 0.992), q(roleFixed, "400-150-8", 0.998, 0.999)}},
		{Topology: "1/1/1/1", Seed: 1,
			Ramp:    Campaign{Mode: "ramp", Error: "find-critical: the ramp ended before a decision"},
			Default: Campaign{Allocation: "400-24-24", Critical: "app/cpu", Saturation: 3000, MinJobs: 24.2, Experiments: 9, EngineSeconds: 900, SimulatedSeconds: 950},
		},
	}
}

// The section's figures: agreement with the fixed campaign counted, the
// largest ratio difference at any threshold found and named, the
// simulated seconds summed over the rows both campaigns answered.
func TestSummarizeRamps(t *testing.T) {
	s := summarizeRamps(rampRows(), []string{"0.5", "2"})
	assert.Equal(t, 3, s.Rows)
	assert.Equal(t, 2, s.Answered)
	assert.Equal(t, 1, s.SameCriticalFixed, "db/cpu is not cluster/cpu")
	assert.Equal(t, 1, s.SameCriticalDefault)
	assert.Equal(t, 1, s.SameFixed)
	assert.Equal(t, 1, s.SameDefault)
	assert.Equal(t, 2, s.Judged)
	assert.Equal(t, 1, s.WithinHalf, "0.998 against 0.990 at 0.5 s is 0.8 points")
	assert.InDelta(t, 0.8, s.MaxDiff, 1e-9)
	assert.Equal(t, "1/4/1/4 seed 1 at 0.5 s", s.Where)
	assert.InDelta(t, 0.8, s.MaxShortfall, 1e-9)
	assert.Equal(t, 2, s.Timed)
	assert.InDelta(t, 1600, s.RampSim, 1e-9)
	assert.InDelta(t, 3600, s.DefaultSim, 1e-9, "the default's engine seconds, not its refined trials counted whole")
	assert.InDelta(t, 3895, s.DefaultWhole, 1e-9)
	assert.InDelta(t, 2520, s.FixedSim, 1e-9)
	assert.InDelta(t, 1000.0/1600, s.MaxSimRatio, 1e-9)
	assert.Equal(t, 1, s.AtMostHalf, "600 of 2000 is under half, 1000 of 1600 is not")
	assert.InDelta(t, 0.8, s.RampCPU, 1e-9)
	assert.InDelta(t, 2.7, s.DefaultCPU, 1e-9)
}

// Section 4 sets the three campaigns side by side, a row each, and says
// what the rows show in numbers; a report without ramps has no section 4.
func TestRampSectionMarkdown(t *testing.T) {
	rep := Report{Config: ReportConfig{SLAs: []float64{0.5, 2}, Precision: 0.02, RuntimeSeconds: 120, FixedWarmUp: 60,
		RampRuntimeSeconds: 720, RampPrecision: 0.02, Parallel: 2}, Ramps: rampRows()}
	var b bytes.Buffer
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	rampSection(p, rep)
	md := b.String()
	assert.Contains(t, md, "## 4. One ramp against the staircase")
	assert.Contains(t, md, "2% precision (at most 720 s)")
	assert.Contains(t, md, "minJobs where it reaches the threshold,\nbetween the last window below it and the first at it")
	assert.Contains(t, md, "the first window, which only predicts where the ramp jumps, and a\nplateau probe are measured to 5%.")
	assert.Contains(t, md, "(60 s warm-up, 120 s measured; the reference's campaign)")
	assert.Contains(t, md, "| 1/2/1/2 | 1 | app/cpu / app/cpu / app/cpu | 5600 / 5500 / 5500 | 38.1 / 42.5 / 37.5 | 400-19-19 / 400-22-22 / 400-19-19 | "+
		"0.988* / 0.995* / 0.988* | 0.00 | 1+1 (9) / 8 / 7 | 600 / 2000 / 1260 | 0.30 | 0.40 / 1.20 / 0.80 | 0.30 / 1.10 / 0.70 |")
	assert.Contains(t, md, "| 1/4/1/4 | 1 | db/cpu / cluster/cpu / cluster/cpu |")
	assert.Contains(t, md, "| 0.80 | 2+1 (12) / 9 / 7 | 1000 / 1600 / 1260 | 0.62 |")
	assert.Contains(t, md, "| 1/1/1/1 | 1 | - / app/cpu / - |", "a failed ramp and no fixed campaign: dashes")
	assert.Contains(t, md, "1/1/1/1 seed 1, recommend --ramp: find-critical: the ramp ended before a decision")
	assert.Contains(t, md, "The ramp answered on 2 of 3. It names the fixed campaign's critical resource on 1 of them and the default's on 1;")
	assert.Contains(t, md, "on 1 of 2 judged; the largest difference is 0.80 points\n(1/4/1/4 seed 1 at 0.5 s)")
	assert.Contains(t, md, "the ramps simulated 1600 s in all against the default campaigns' 3600 s (0.44 of it; 3895 s")
	assert.Contains(t, md, "per row at most 0.62 of the default's, half or less on 1 of 2")
	assert.Contains(t, md, "(1 of 3),")
	assert.NotContains(t, md, "%!", "every verb has its value")

	b.Reset()
	rep.Ramps = nil
	rampSection(p, rep)
	assert.Empty(t, b.String())
}

// Section 2's adaptive column is this run's adaptive campaign, whose
// longest window is --runtime's, not recommend's default campaign on the
// simulator (12 min), which simulated 2,260 s where the column read 685 s
// on 1/2/1/2 seed 1: the page says which it is and where the other is.
func TestAdaptiveColumnNamesItsLongestWindow(t *testing.T) {
	rep := Report{Config: ReportConfig{SLAs: []float64{2}, Precision: 0.02, RuntimeSeconds: 120, FixedWarmUp: 60, RampRuntimeSeconds: 720},
		Results: []TopologyResult{{Topology: "1/2/1/2", Seed: 1, Campaigns: []Campaign{{Allocation: "400-19-19", SimulatedSeconds: 685}},
			Fixed: &Campaign{Allocation: "400-19-19", SimulatedSeconds: 1260}}}}
	var b bytes.Buffer
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	adaptiveSection(p, rep)
	md := b.String()
	assert.Contains(t, md, "with this run's adaptive trials (at most 120 s\nmeasured")
	assert.Contains(t, md, "recommend's own default on the\nsimulator measures up to 720 s a trial")
	assert.Contains(t, md, "| adaptive (at most 120 s) |")
	assert.False(t, strings.HasPrefix(strings.SplitN(md, "\n\n", 2)[1], "The default campaign (efficient mode"))

	b.Reset()
	rep.Config.RampRuntimeSeconds = 0 // an older report, or a run without the ramp
	adaptiveSection(p, rep)
	assert.NotContains(t, b.String(), "recommend's own default")
}
