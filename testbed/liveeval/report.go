package main

import (
	"encoding/json"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/softalloc/softalloc/internal/report"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Report is docs/live-evaluation.json; the Markdown and the plots are drawn from it.
type Report struct {
	Generated     string             `json:"generated"`
	Deployment    string             `json:"deployment"`
	Caps          map[string]float64 `json:"caps"`
	SLAs          []float64          `json:"slas"`
	WarmUpSeconds float64            `json:"warmUpSeconds"`
	// WarmUp are the 30 s trials at 100 users that warmed the JVM before
	// the campaign; RestartWarmUp the same after the last restart.
	WarmUp        []Trial `json:"warmUp"`
	RestartWarmUp []Trial `json:"restartWarmUp"`
	Step          int     `json:"step"`
	GridRuntime   string  `json:"gridRuntime"`
	TotalSeconds  float64 `json:"totalSeconds"`

	Critical        Critical         `json:"critical"`
	FindCritical    Approach         `json:"findCritical"`
	Recommendations []Recommendation `json:"recommendations"`
	Campaign        []Trial          `json:"campaign"`

	Apply        []ApplyTrial          `json:"apply"`
	ApplySummary map[string]ApplyStats `json:"applySummary"`

	GridAllocations []GridAllocation `json:"gridAllocations"`
	GridUsers       []int            `json:"gridUsers"`
	Grid            []GridRow        `json:"grid"`
	GridApproach    Approach         `json:"gridApproach"`
	// Scores per allocation: its best goodput over the grid's workloads at
	// each SLA, and the share of the grid's best.
	Scores []Score `json:"scores"`
	// RecommendApproach is find-critical and both recommends together.
	RecommendApproach Approach `json:"recommendApproach"`
	PastKnee          []Effect `json:"pastKnee"`

	Twin TwinResult `json:"twin"`
}

type Critical struct {
	Tier               string  `json:"tier"`
	Resource           string  `json:"resource"`
	Utilization        float64 `json:"utilization"`
	SaturationWorkload int     `json:"saturationWorkload"`
	MaxThroughput      float64 `json:"maxThroughput"`
}

type Approach struct {
	Experiments int     `json:"experiments"`
	Seconds     float64 `json:"seconds"`
	Reused      int     `json:"reused,omitempty"`
}

type Recommendation struct {
	MinJobsAt  string   `json:"minJobsAt"`
	Allocation string   `json:"allocation"`
	MinJobs    float64  `json:"minJobs"`
	Warnings   []string `json:"warnings,omitempty"`
	Notes      []string `json:"notes,omitempty"`
	Evidence   struct {
		Reading string `json:"reading"`
		WLmin   int    `json:"wlMin"`
	} `json:"evidence"`
	// Experiments is the command's own count, find-critical's included.
	Experiments int `json:"experiments"`
}

// Trial is one measured trial, reduced to what the report shows.
type Trial struct {
	Allocation      string  `json:"allocation"`
	Users           int     `json:"users"`
	Throughput      float64 `json:"throughput"`
	ResponseTime    float64 `json:"responseTime"`
	AppCPU          float64 `json:"appCpu"`
	CPUPerPageMS    float64 `json:"cpuPerPageMs"`
	GCShare         float64 `json:"gcShare"`
	Throttled       float64 `json:"throttled"`
	BusyThreads     float64 `json:"busyThreads"`
	BusyConnections float64 `json:"busyConnections"`
	Errors          int     `json:"errors"`
	Seconds         float64 `json:"seconds,omitempty"`
}

type ApplyTrial struct {
	Mode         string  `json:"mode"`
	Allocation   string  `json:"allocation"`
	Users        int     `json:"users"`
	ApplySeconds float64 `json:"applySeconds"`
	Trial        Trial   `json:"trial"`
}

type ApplyStats struct {
	Applies int `json:"applies"`
	// Unread counts trials whose app throughput read 0 (no CPU per page):
	// they are left out of CPUPerPageMS.
	Unread       int     `json:"unread,omitempty"`
	ApplySeconds float64 `json:"applySeconds"`
	Throughput   float64 `json:"throughput"`
	ResponseTime float64 `json:"responseTime"`
	CPUPerPageMS float64 `json:"cpuPerPageMs"`
}

type GridAllocation struct {
	Allocation string `json:"allocation"`
	Role       string `json:"role"`
}

type GridRow struct {
	Allocation   string             `json:"allocation"`
	Users        int                `json:"users"`
	Throughput   float64            `json:"throughput"`
	Goodput      map[string]float64 `json:"goodput"`
	ResponseTime float64            `json:"responseTime"`
	AppCPU       float64            `json:"appCpu"`
	CPUPerPageMS float64            `json:"cpuPerPageMs"`
	GCShare      float64            `json:"gcShare"`
	Errors       int                `json:"errors"`
}

type Score struct {
	Allocation string             `json:"allocation"`
	Role       string             `json:"role"`
	MaxGoodput map[string]float64 `json:"maxGoodput"`
	OfBest     map[string]float64 `json:"ofBest"`
}

// Effect compares an allocation past the knee with the recommendation at the
// grid's highest workload.
type Effect struct {
	Allocation string             `json:"allocation"`
	Users      int                `json:"users"`
	Goodput    map[string]float64 `json:"goodput"`
	Change     map[string]float64 `json:"change"` // relative to the recommendation's goodput
	GCShare    float64            `json:"gcShare"`
	CPUPerPage float64            `json:"cpuPerPageMs"`
}

type TwinResult struct {
	CalibrationUsers int      `json:"calibrationUsers"`
	Predicted        Critical `json:"predicted"`
	// Error is (predicted - measured) / measured saturation workload.
	Error float64 `json:"error"`
}

// Analyse derives the summaries from the measurements.
func (r *Report) Analyse() {
	r.ApplySummary = map[string]ApplyStats{}
	for _, a := range r.Apply {
		s := r.ApplySummary[a.Mode]
		s.Applies++
		s.ApplySeconds += a.ApplySeconds
		s.Throughput += a.Trial.Throughput
		s.ResponseTime += a.Trial.ResponseTime
		s.CPUPerPageMS += a.Trial.CPUPerPageMS
		if a.Trial.CPUPerPageMS <= 0 {
			s.Unread++
		}
		r.ApplySummary[a.Mode] = s
	}
	for m, s := range r.ApplySummary {
		n := float64(s.Applies)
		s.ApplySeconds, s.Throughput, s.ResponseTime = s.ApplySeconds/n, s.Throughput/n, s.ResponseTime/n
		if s.Applies > s.Unread {
			s.CPUPerPageMS /= float64(s.Applies - s.Unread)
		}
		r.ApplySummary[m] = s
	}

	best := map[string]float64{}
	r.Scores = nil
	for _, a := range r.GridAllocations {
		sc := Score{Allocation: a.Allocation, Role: a.Role, MaxGoodput: map[string]float64{}, OfBest: map[string]float64{}}
		for _, g := range r.Grid {
			if g.Allocation != a.Allocation {
				continue
			}
			for k, v := range g.Goodput {
				sc.MaxGoodput[k] = math.Max(sc.MaxGoodput[k], v)
			}
		}
		for k, v := range sc.MaxGoodput {
			best[k] = math.Max(best[k], v)
		}
		r.Scores = append(r.Scores, sc)
	}
	for i := range r.Scores {
		for k, v := range r.Scores[i].MaxGoodput {
			if best[k] > 0 {
				r.Scores[i].OfBest[k] = v / best[k]
			}
		}
	}
	// Every distinct trial of find-critical and both recommends.
	r.RecommendApproach = Approach{Experiments: len(r.Campaign)}
	for _, t := range r.Campaign {
		r.RecommendApproach.Seconds += t.Seconds
	}

	// The paper's effect: goodput at the highest workload as the app's pools
	// grow past the recommendation.
	r.PastKnee = nil
	if len(r.GridUsers) == 0 || len(r.Recommendations) == 0 {
		return
	}
	top := r.GridUsers[len(r.GridUsers)-1]
	row := func(a string) (GridRow, bool) {
		for _, g := range r.Grid {
			if g.Allocation == a && g.Users == top {
				return g, true
			}
		}
		return GridRow{}, false
	}
	rec, ok := row(r.Recommendations[0].Allocation)
	if !ok {
		return
	}
	_, t0, c0 := parseAlloc(rec.Allocation)
	for _, a := range r.GridAllocations {
		_, t, c := parseAlloc(a.Allocation)
		if t < t0 || c < c0 || (t == t0 && c == c0) {
			continue
		}
		g, ok := row(a.Allocation)
		if !ok {
			continue
		}
		e := Effect{Allocation: a.Allocation, Users: top, Goodput: g.Goodput, Change: map[string]float64{}, GCShare: g.GCShare, CPUPerPage: g.CPUPerPageMS}
		for k, v := range g.Goodput {
			if rec.Goodput[k] > 0 {
				e.Change[k] = v/rec.Goodput[k] - 1
			}
		}
		r.PastKnee = append(r.PastKnee, e)
	}
	r.PastKnee = append([]Effect{{Allocation: rec.Allocation, Users: top, Goodput: rec.Goodput, Change: map[string]float64{}, GCShare: rec.GCShare, CPUPerPage: rec.CPUPerPageMS}}, r.PastKnee...)
}

// Write writes the JSON, the Markdown and the plots into dir.
func (r *Report) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "live-evaluation.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	if err := r.plotGoodput(filepath.Join(dir, "live-evaluation-goodput.svg")); err != nil {
		return err
	}
	if err := r.plotCost(filepath.Join(dir, "live-evaluation-cost.svg")); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "live-evaluation.md"), []byte(r.Markdown()), 0o644)
}

func (r *Report) slaKeys() []string {
	keys := make([]string, len(r.SLAs))
	for i, s := range r.SLAs {
		keys[i] = slaKey(s)
	}
	return keys
}

func pct(x float64) string {
	s := fmt.Sprintf("%+.1f%%", 100*x)
	if s == "-0.0%" || s == "+0.0%" {
		return "0.0%"
	}
	return s
}

// Markdown is docs/live-evaluation.md.
func (r *Report) Markdown() string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	keys := r.slaKeys()
	p("# softalloc on a real JVM: the testbed's Java stack\n\n")
	p("Generated by `make live-evaluate` (`go run ./testbed/liveeval -out docs`) on %s, in %.0f minutes, from\n", r.Generated, r.TotalSeconds/60)
	p("`%s`: Apache httpd -> embedded Tomcat 11 with HikariCP 7 and the MariaDB JDBC driver\n", r.Deployment)
	p("on OpenJDK 17 (-Xmx256m) -> MariaDB, each tier under a CPU cap (cores: web %.1f, app %.1f, db %.1f)\n", r.Caps["web"], r.Caps["app"], r.Caps["db"])
	p("on one 2-core machine shared with other work. Trials: 3 s ramp-up, 6 s runtime (grid: %s), 1 s ramp-down;\n", r.GridRuntime)
	p("the RUBBoS browse-only mix with 0.5 s think time. Warm-up trials (100 users, 30 s each, %.0f s in all) ran first,\n", r.WarmUpSeconds)
	p("until the app's CPU per page changed by less than 5%% from one to the next: under its cap the JVM compiles\n")
	p("its hot code for minutes. App CPU per page in each: %s.\n\n", warmUpSeries(r.WarmUp))

	p("## Find the critical resource, recommend\n\n")
	c := r.Critical
	p("find-critical (step %d users): **%s %s** saturated (%.1f%%) at **%d users**, %.1f pages/s; %d experiments, %.0f s of trials.\n\n",
		r.Step, c.Tier, c.Resource, 100*c.Utilization, c.SaturationWorkload, c.MaxThroughput, r.FindCritical.Experiments, r.FindCritical.Seconds)
	p("recommend, efficient mode, on find-critical's journal (`--small-step 10 --scan-span 40`):\n\n")
	p("| minJobs read at | allocation | minJobs | read | experiments (find-critical's included) |\n|---|---|---|---|---|\n")
	for _, rec := range r.Recommendations {
		p("| %s | **%s** | %.1f | %s, %d users | %d |\n", rec.MinJobsAt, rec.Allocation, rec.MinJobs, rec.Evidence.Reading, rec.Evidence.WLmin, rec.Experiments)
	}
	for _, rec := range r.Recommendations {
		for _, w := range append(rec.Warnings, rec.Notes...) {
			p("\n- %s: %s", rec.MinJobsAt, oneLine(w))
		}
	}
	p("\n\nThe campaign's trials (allocation 100-20-10, pools doubled when one saturated), with the app's CPU per page and GC share:\n\n")
	p("| users | allocation | pages/s | mean response time | app CPU | CPU per page | GC share | busy threads | busy connections |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, t := range r.Campaign {
		p("| %d | %s | %.1f | %.0f ms | %.2f | %.2f ms | %.2f%% | %.1f | %.1f |\n", t.Users, t.Allocation, t.Throughput, 1000*t.ResponseTime, t.AppCPU, t.CPUPerPageMS, 100*t.GCShare, t.BusyThreads, t.BusyConnections)
	}

	p("\n## Applying an allocation: restart the JVM, or resize its pools at run time\n\n")
	if len(r.Apply) > 0 {
		p("Each apply below (the sequence 100-20-10 -> 100-40-20 -> 100-10-5 -> 100-20-10, twice) was followed at once by a trial at %d users.\n\n", r.Apply[0].Users)
		p("| mode | applies | mean apply time | mean pages/s | mean response time | mean app CPU per page |\n|---|---|---|---|---|---|\n")
		for _, m := range []string{"runtime", "restart"} {
			s := r.ApplySummary[m]
			unread := ""
			if s.Unread > 0 {
				unread = fmt.Sprintf(" (the mean of %d trials: in %d the app's throughput read 0)", s.Applies-s.Unread, s.Unread)
			}
			p("| %s | %d | %.2f s | %.1f | %.0f ms | %.2f ms%s |\n", m, s.Applies, s.ApplySeconds, s.Throughput, 1000*s.ResponseTime, s.CPUPerPageMS, unread)
		}
		p("\n| mode | allocation | apply time | pages/s | response time | app CPU per page | GC share |\n|---|---|---|---|---|---|---|\n")
		for _, a := range r.Apply {
			p("| %s | %s | %.2f s | %.1f | %.0f ms | %.2f ms | %.2f%% |\n", a.Mode, a.Allocation, a.ApplySeconds, a.Trial.Throughput, 1000*a.Trial.ResponseTime, a.Trial.CPUPerPageMS, 100*a.Trial.GCShare)
		}
		rt, rs := r.ApplySummary["runtime"], r.ApplySummary["restart"]
		if rt.Applies > 0 && rs.Applies > 0 {
			p("\nA restart cost %.1f s per apply against %.2f s at run time, and the trial after it measured %.1fx the CPU per page, %.0fx the response time\n",
				rs.ApplySeconds, rt.ApplySeconds, rs.CPUPerPageMS/rt.CPUPerPageMS, rs.ResponseTime/rt.ResponseTime)
			p("and %.2fx the throughput", rs.Throughput/rt.Throughput)
			p(" (the new JVM runs its first minutes partly interpreted). After the last restart, 30 s trials at 100 users measured\n")
			p("%s of app CPU per page. Run-time resizing is the testbed's default (`SOFTALLOC_TESTBED_APPLY=runtime`).\n", warmUpSeries(r.RestartWarmUp))
		}
	}

	p("\n## The grid: the recommendation against the allocations people use\n\n")
	p("Workloads %s users (around the saturation workload), %d allocations, %d trials in %.0f s",
		joinInts(r.GridUsers), len(r.GridAllocations), r.GridApproach.Experiments, r.GridApproach.Seconds)
	if r.GridApproach.Reused > 0 {
		p(" (%d reused from an earlier run's journal)", r.GridApproach.Reused)
	}
	p(". Goodput counts pages answered within the SLA threshold; each allocation's best over the workloads, and its share of the grid's best:\n\n")
	p("| allocation | role |")
	for _, k := range keys {
		p(" goodput at %s s |", k)
	}
	p("\n|---|---|")
	for range keys {
		p("---|")
	}
	p("\n")
	for _, s := range r.Scores {
		p("| %s | %s |", s.Allocation, s.Role)
		for _, k := range keys {
			p(" %.1f (%.2f) |", s.MaxGoodput[k], s.OfBest[k])
		}
		p("\n")
	}
	p("\nExperiments: find-critical and both recommends took %d trials in %.0f s of trials; the grid %d trials in %.0f s (%.1fx as many).\n",
		r.RecommendApproach.Experiments, r.RecommendApproach.Seconds, r.GridApproach.Experiments, r.GridApproach.Seconds,
		float64(r.GridApproach.Experiments)/math.Max(1, float64(r.RecommendApproach.Experiments)))

	p("\nEvery grid trial (goodput at %s s):\n\n", keys[len(keys)/2])
	p("| allocation | users | pages/s | goodput | response time | app CPU | CPU per page | GC share | errors |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, g := range r.Grid {
		p("| %s | %d | %.1f | %.1f | %.0f ms | %.2f | %.2f ms | %.2f%% | %d |\n", g.Allocation, g.Users, g.Throughput, g.Goodput[keys[len(keys)/2]], 1000*g.ResponseTime, g.AppCPU, g.CPUPerPageMS, 100*g.GCShare, g.Errors)
	}
	p("\n![goodput against workload](live-evaluation-goodput.svg)\n\n![CPU per page and GC share against workload](live-evaluation-cost.svg)\n")

	p("\n## Past the knee: does goodput fall when the pools grow?\n\n")
	if len(r.PastKnee) > 0 {
		p("At %d users, the recommendation's pools against larger ones (change of goodput from the recommendation's):\n\n| allocation |", r.PastKnee[0].Users)
		for _, k := range keys {
			p(" goodput at %s s |", k)
		}
		p(" GC share | app CPU per page |\n|---|")
		for range keys {
			p("---|")
		}
		p("---|---|\n")
		for _, e := range r.PastKnee {
			p("| %s |", e.Allocation)
			for _, k := range keys {
				if ch, ok := e.Change[k]; ok {
					p(" %.1f (%s) |", e.Goodput[k], pct(ch))
				} else {
					p(" %.1f |", e.Goodput[k])
				}
			}
			p(" %.2f%% | %.2f ms |\n", 100*e.GCShare, e.CPUPerPage)
		}
	}

	p("\n## The twin\n\n")
	tw := r.Twin
	p("testbed/twin calibrated from one 15 s trial at %d users predicts %s %s saturated at **%d users** (%.1f pages/s) against %d measured: **%s**.\n",
		tw.CalibrationUsers, tw.Predicted.Tier, tw.Predicted.Resource, tw.Predicted.SaturationWorkload, tw.Predicted.MaxThroughput, r.Critical.SaturationWorkload, pct(tw.Error))

	p("\n## The issue's targets\n\n")
	for i, rec := range r.Recommendations {
		p("- The recommendation (minJobs at %s, %s) reaches %s of the grid's best.\n", rec.MinJobsAt, rec.Allocation, r.scoreOf(rec.Allocation))
		_ = i
	}
	p("- Experiments: %d for find-critical and both recommends against %d for this grid (%.1fx fewer; the target is 10x: this grid,\n",
		r.RecommendApproach.Experiments, r.GridApproach.Experiments, float64(r.GridApproach.Experiments)/math.Max(1, float64(r.RecommendApproach.Experiments)))
	p("  14 allocations at 4 workloads, is far smaller than an exhaustive one such as docs/evaluation.md's 474).\n")
	p("- The twin's saturation workload is %s off find-critical's reading (target: within 20%%).\n", pct(tw.Error))
	p("\nEvery figure is one trial of seconds on a machine shared with other work, and neighbouring workloads of one\n")
	p("allocation went up and down by 10-30%% (100-20-10 at 160, 170 and 180 users in the campaign; 100-1000-200 at 170\n")
	p("users): differences of a few percent are noise. The drops past the knee with many more threads than connections\n")
	p("recur at 170 and 220 users and across four such allocations.\n")

	p("\n## Beside the simulator and the Go testbed\n\n")
	p("The simulator's and the Go testbed's figures are quoted from docs/evaluation.md (1/1/1/1, seed 1) and testbed/README.md.\n\n")
	p("| | simulator (RUBBoS model) | Go testbed | Java stack (this run) |\n|---|---|---|---|\n")
	p("| critical resource, saturation | app CPU, 3000 users | app CPU, 70-80 users, 135-155 pages/s | %s %s, %d users, %.0f pages/s |\n", c.Tier, c.Resource, c.SaturationWorkload, c.MaxThroughput)
	p("| experiments: find-critical and recommend / grid | 7 / 474 | 5-7 trials and 111 s / 7 allocations at one workload | %d / %d |\n", r.RecommendApproach.Experiments, r.GridApproach.Experiments)
	rec := r.score(r.Recommendations, 0)
	p("| recommendation, share of the grid's best | 400-22-22: 0.98-1.00 | 100-12-12: 1.00 (2 s SLA) | %s |\n", rec)
	p("| practitioners' 400-150-60 | 0.88-0.99 | 0.99 | %s |\n", r.scoreOf("400-150-60"))
	p("| twin's saturation workload | (is the model) | 70 users, exact | %d users, %s |\n", tw.Predicted.SaturationWorkload, pct(tw.Error))
	return b.String()
}

// score describes the i-th recommendation's share of the grid's best at each SLA.
func (r *Report) score(recs []Recommendation, i int) string {
	if i >= len(recs) {
		return ""
	}
	return recs[i].Allocation + ": " + r.scoreOf(recs[i].Allocation)
}

// scoreOf is an allocation's share of the grid's best at each SLA, as "0.97 / 1.00 / 1.00".
func (r *Report) scoreOf(alloc string) string {
	for _, s := range r.Scores {
		if s.Allocation == alloc {
			var parts []string
			for _, k := range r.slaKeys() {
				parts = append(parts, fmt.Sprintf("%.2f", s.OfBest[k]))
			}
			return strings.Join(parts, " / ") + " (SLAs " + strings.Join(r.slaKeys(), ", ") + " s)"
		}
	}
	return "not measured"
}

func warmUpSeries(ts []Trial) string {
	var parts []string
	for _, t := range ts {
		parts = append(parts, fmt.Sprintf("%.2f ms (%.0f pages/s)", t.CPUPerPageMS, t.Throughput))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// plotGoodput draws goodput at the middle SLA against workload, one line per allocation.
func (r *Report) plotGoodput(path string) error {
	keys := r.slaKeys()
	k := keys[len(keys)/2]
	p := report.NewPlot(fmt.Sprintf("Java stack: goodput (SLA %s s) against workload", k), "users", "goodput, pages/s")
	var lines []any
	for _, a := range r.GridAllocations {
		var pts plotter.XYs
		for _, g := range r.Grid {
			if g.Allocation == a.Allocation {
				pts = append(pts, plotter.XY{X: float64(g.Users), Y: g.Goodput[k]})
			}
		}
		sort.Slice(pts, func(i, j int) bool { return pts[i].X < pts[j].X })
		if len(pts) > 0 {
			lines = append(lines, a.Allocation, pts)
		}
	}
	if err := plotutil.AddLinePoints(p, lines...); err != nil {
		return err
	}
	return report.SaveFigure(path, p, report.PlotWidth, report.PlotHeight)
}

// plotCost draws the app's CPU per page and GC share against workload for the
// campaign's trials and the grid's recommended and over-allocated pools.
func (r *Report) plotCost(path string) error {
	p := report.NewPlot("Java stack: app CPU per page (ms) and GC share (%) against workload", "users",
		"ms of CPU per page; % of wall time in GC pauses")
	series := map[string][]Trial{"campaign (find-critical, recommend)": r.Campaign}
	if len(r.GridAllocations) > 0 {
		for _, a := range r.GridAllocations {
			if strings.HasPrefix(a.Role, "recommended") || strings.HasPrefix(a.Role, "over") {
				for _, g := range r.Grid {
					if g.Allocation == a.Allocation {
						series["grid "+a.Allocation] = append(series["grid "+a.Allocation], Trial{Users: g.Users, CPUPerPageMS: g.CPUPerPageMS, GCShare: g.GCShare})
					}
				}
			}
		}
	}
	i := 0
	for _, name := range sortedKeys(series) {
		ts := append([]Trial(nil), series[name]...)
		sort.SliceStable(ts, func(a, b int) bool { return ts[a].Users < ts[b].Users })
		var cpu, gc plotter.XYs
		for _, t := range ts {
			cpu = append(cpu, plotter.XY{X: float64(t.Users), Y: t.CPUPerPageMS})
			gc = append(gc, plotter.XY{X: float64(t.Users), Y: 100 * t.GCShare})
		}
		for j, xy := range []plotter.XYs{cpu, gc} {
			l, pts, err := plotter.NewLinePoints(xy)
			if err != nil {
				return err
			}
			col := plotutil.Color(i)
			l.Color, pts.Color = col, col
			pts.Shape = plotutil.Shape(i)
			if j == 1 {
				l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
				l.Color = fade(col)
			}
			p.Add(l, pts)
			label := name + ": CPU per page"
			if j == 1 {
				label = name + ": GC share"
			}
			p.Legend.Add(label, l, pts)
		}
		i++
	}
	return report.SaveFigure(path, p, report.PlotWidth, report.PlotHeight)
}

func fade(c color.Color) color.Color {
	r, g, b, _ := c.RGBA()
	return color.RGBA{R: uint8(r >> 9), G: uint8(g >> 9), B: uint8(b >> 9), A: 255}
}
