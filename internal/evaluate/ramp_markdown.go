package evaluate

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/report"
)

// rampSection sets the ramp campaign beside today's default campaign and
// the fixed-length one, topology by topology (section 4).
func rampSection(p func(string, ...any), rep Report) {
	if len(rep.Ramps) == 0 {
		return
	}
	c := rep.Config
	slas := slaLabels(c.SLAs)
	top := slas[len(slas)-1]
	p("\n## 4. One ramp against the staircase\n\n")
	p("`recommend --ramp` from 400-150-60: one simulation whose users rise without a reset, each level a window measured to\n")
	p("%s precision (at most %.0f s), the critical resource read from the windows and minJobs where it reaches the threshold,\n",
		report.Percent(100*c.RampPrecision, 0, false), c.RampRuntimeSeconds)
	p("between the last window below it and the first at it; the first window, which only predicts where the ramp jumps, and a\n")
	p("plateau probe are measured to %s. Then one confirming trial of the recommended allocation. Beside it today's default\n",
		report.Percent(100*algorithms.LoosePrecision(c.RampPrecision), 0, false))
	p("campaign, the adaptive staircase of separate trials (`recommend`, the same trials: as recommend runs both on the\n")
	p("simulator, whatever this run's --runtime), and the staircase with section 2's fixed-length trials\n")
	p("(%.0f s warm-up, %.0f s measured; the reference's campaign). The ratios are each answer's\n",
		c.FixedWarmUp, c.RuntimeSeconds)
	p("maximum goodput over the best of the topology's grid (section 3's); `*` as there; `from fixed` is the largest\n")
	p("difference of the ramp's ratio from the fixed answer's at any threshold. Trials: the ramp's ramps and confirming\n")
	p("trial (its windows in brackets), the staircases' experiments. Simulated: what the simulator ran, warm-ups and settling\n")
	p("included, a refined trial only past the coarser one it went on from, as the ramp's windows are never simulated twice.\n")
	p("CPU is the campaign's own thread's, on one core %s.\n\n", besideOthers(rep))
	p("| topology | seed | critical (ramp / default / fixed) | saturation [users] | minJobs | allocation | ratio at %s s | from fixed [points] | trials | simulated [s] | ramp / default simulated | wall [s] | CPU [s] |\n", top)
	p("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rep.Ramps {
		p("%s\n", rampRowCells(r, slas))
	}
	s := summarizeRamps(rep.Ramps, slas)
	p("\n")
	for _, r := range rep.Ramps {
		for _, x := range []Campaign{r.Ramp, r.Default} {
			if x.Error != "" {
				p("%s seed %d, %s: %s\n\n", r.Topology, r.Seed, campaignName(x), x.Error)
			}
		}
	}
	p("The ramp answered on %d of %d. It names the fixed campaign's critical resource on %d of them and the default's on %d;\n",
		s.Answered, s.Rows, s.SameCriticalFixed, s.SameCriticalDefault)
	p("it recommends the fixed campaign's allocation on %d and the default's on %d. Its ratio is within 0.5 points of the\n", s.SameFixed, s.SameDefault)
	p("fixed answer's at every threshold (%s s) on %d of %d judged", strings.Join(slas, ", "), s.WithinHalf, s.Judged)
	if s.Judged > 0 {
		p("; the largest difference is %.2f points\n(%s), and the ramp's ratio is below the fixed one's by at most %.2f", s.MaxDiff, s.Where, s.MaxShortfall)
	}
	p(".\n")
	if s.Timed > 0 {
		p("Where both answered (%d rows) the ramps simulated %.0f s in all against the default campaigns' %.0f s (%.2f of it; %.0f s\n",
			s.Timed, s.RampSim, s.DefaultSim, s.RampSim/math.Max(s.DefaultSim, 1e-9), s.DefaultWhole)
		p("counting a refined trial whole) and the fixed ones' %.0f s; per row at most %.2f of the default's, half or less on %d of %d.\n",
			s.FixedSim, s.MaxSimRatio, s.AtMostHalf, s.Timed)
		p("CPU: %.1f s against %.1f s (%.2f of it) and %.1f s; wall: %.1f s against %.1f s and %.1f s.\n",
			s.RampCPU, s.DefaultCPU, s.RampCPU/math.Max(s.DefaultCPU, 1e-9), s.FixedCPU, s.RampWall, s.DefaultWall, s.FixedWall)
	}
	p("Issue 39's targets on the simulator: the same critical resource as the fixed campaign on every topology-seed (%d of %d),\n",
		s.SameCriticalFixed, s.Rows)
	p("every ramp answer within 0.5 points of the fixed answer's ratio (%d of %d), at most half the default campaign's simulated\n", s.WithinHalf, s.Rows)
	p("seconds (%.2f in all, %d of %d rows).\n", s.RampSim/math.Max(s.DefaultSim, 1e-9), s.AtMostHalf, s.Rows)
}

// rampRowCells is one row of the ramp table.
func rampRowCells(r RampRow, slas []string) string {
	top := slas[len(slas)-1]
	q := map[string]Quality{}
	for _, x := range r.Compared {
		q[x.Role] = x
	}
	cs := []Campaign{r.Ramp, r.Default, {Error: "none"}}
	if r.Fixed != nil {
		cs[2] = *r.Fixed
	}
	three := func(f func(c Campaign, role string) string) string {
		out := make([]string, 3)
		for i, role := range []string{roleRamp, roleDefault, roleFixed} {
			out[i] = "-"
			if cs[i].Error == "" {
				out[i] = f(cs[i], role)
			}
		}
		return strings.Join(out, " / ")
	}
	ratio := func(_ Campaign, role string) string {
		x, ok := q[role]
		if !ok {
			return "-"
		}
		cell := ratioCell(x.Ratio, top)
		if slices.Contains(x.Indistinguishable, top) {
			cell += "*"
		}
		return cell
	}
	from := "-"
	if d, _, _, ok := rampDiff(r, slas); ok {
		from = fmt.Sprintf("%.2f", d)
	}
	trials := three(func(c Campaign, role string) string {
		if role == roleRamp {
			return fmt.Sprintf("%d+%d (%d)", c.Ramps, c.Experiments-c.Ramps, c.Windows)
		}
		return fmt.Sprint(c.Experiments)
	})
	simRatio := "-"
	if r.Ramp.Error == "" && r.Default.Error == "" && r.Default.EngineSeconds > 0 {
		simRatio = fmt.Sprintf("%.2f", r.Ramp.EngineSeconds/r.Default.EngineSeconds)
	}
	return fmt.Sprintf("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |", r.Topology, r.Seed,
		three(func(c Campaign, _ string) string { return c.Critical }),
		three(func(c Campaign, _ string) string { return fmt.Sprint(c.Saturation) }),
		three(func(c Campaign, _ string) string { return fmt.Sprintf("%.1f", c.MinJobs) }),
		three(func(c Campaign, _ string) string { return c.Allocation }),
		three(ratio), from, trials,
		three(func(c Campaign, _ string) string { return fmt.Sprintf("%.0f", c.EngineSeconds) }), simRatio,
		three(func(c Campaign, _ string) string { return fmt.Sprintf("%.2f", c.WallSeconds) }),
		three(func(c Campaign, _ string) string { return fmt.Sprintf("%.2f", c.CPUSeconds) }))
}

// campaignName names a campaign of the ramp table.
func campaignName(c Campaign) string {
	if c.Mode == "ramp" {
		return "recommend --ramp"
	}
	return "the default campaign"
}
