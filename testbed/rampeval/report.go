package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"gonum.org/v1/gonum/stat"

	"github.com/softalloc/softalloc/testbed/gridnoise"
	"github.com/softalloc/softalloc/testbed/jvmwarm"
)

// Report is live-evaluation-ramp.json.
type Report struct {
	// Generated and Finished are when the run started and ended (a resumed
	// run: the last start).
	Generated string `json:"generated"`
	Finished  string `json:"finished"`
	// Head is the tree's commit (git rev-parse HEAD); Command the run's
	// command line with the testbed's environment.
	Head string `json:"head"`
	// Dirty is git status's list of the tracked files changed in the tree
	// the run built from, if any.
	Dirty        string            `json:"dirty,omitempty"`
	Command      string            `json:"command"`
	Stack        string            `json:"stack"`
	Deployment   string            `json:"deployment"`
	PortOffset   int               `json:"portOffset"`
	Caps         string            `json:"caps"`
	Rounds       int               `json:"rounds"`
	Steps        string            `json:"steps"`
	Trials       map[string]string `json:"trials"`
	SLAs         []string          `json:"slas"`
	GridTrial    string            `json:"gridTrial"`
	GridFactors  []float64         `json:"gridFactors"`
	Initial      string            `json:"initial"`
	Quick        bool              `json:"quick,omitempty"`
	UptimeBefore string            `json:"uptimeBefore"`
	UptimeAfter  string            `json:"uptimeAfter"`
	Notes        []string          `json:"notes,omitempty"`
	// WarmUp is the trials run before the first campaign, if any.
	WarmUp *WarmUp `json:"warmUp,omitempty"`

	Campaigns       []Campaign       `json:"campaigns"`
	GridUsers       []int            `json:"gridUsers"`
	GridAllocations []GridAllocation `json:"gridAllocations"`
	Grid            []GridRun        `json:"grid"`

	// What the page shows, derived by analyse.
	Kinds        []KindSummary `json:"kinds"`
	SameCritical bool          `json:"sameCritical"`
	Scores       []Score       `json:"scores"`
	VsFixed      []Versus      `json:"vsFixed"`
}

// WarmUp is the warm-up before the first campaign: on the Java stack a
// trial with the app's cap lifted, then trials at Users of Trial's runtime
// on the initial allocation until the app's CPU per page is flat.
type WarmUp = jvmwarm.Record

// Campaign is one recommend campaign, a line of campaigns.jsonl.
type Campaign struct {
	Kind    string `json:"kind"`
	Round   int    `json:"round"`
	Started string `json:"started"`
	// Args are recommend's arguments: a rerun keeps a campaign only if it
	// would run the same.
	Args               string   `json:"args"`
	WallSeconds        float64  `json:"wallSeconds"`
	Experiments        int      `json:"experiments"`
	Critical           string   `json:"critical"`
	Server             string   `json:"server,omitempty"`
	SaturationWorkload int      `json:"saturationWorkload"`
	MaxThroughput      float64  `json:"maxThroughput"`
	MinJobs            float64  `json:"minJobs"`
	Allocation         string   `json:"allocation"`
	Warnings           []string `json:"warnings,omitempty"`
	// The ramp's windows, ramps and the windows the answer rests on.
	Windows int    `json:"windows,omitempty"`
	Ramps   int    `json:"ramps,omitempty"`
	Answer  []int  `json:"answer,omitempty"`
	Error   string `json:"error,omitempty"`
}

// GridAllocation is an allocation of the grid and the campaigns that gave
// it ("ramp 1", "initial").
type GridAllocation struct {
	Allocation string   `json:"allocation"`
	From       []string `json:"from"`
}

// GridRun is one allocation at every workload in one round, a line of
// grid.jsonl.
type GridRun struct {
	Round      int     `json:"round"`
	Allocation string  `json:"allocation"`
	Users      []int   `json:"users"`
	Trial      string  `json:"trial"`
	Seconds    float64 `json:"seconds"`
	Cells      []Cell  `json:"cells"`
	Error      string  `json:"error,omitempty"`
}

// Cell is one trial of the grid, as simulate --output json gives it.
type Cell struct {
	Users        int                `json:"users"`
	Throughput   float64            `json:"throughput"`
	Goodput      map[string]float64 `json:"goodput"`
	ResponseTime float64            `json:"responseTime"`
	Errors       int                `json:"errors"`
}

// KindSummary is one kind's campaigns.
type KindSummary struct {
	Kind       string  `json:"kind"`
	Campaigns  int     `json:"campaigns"`
	Failed     int     `json:"failed"`
	MedianWall float64 `json:"medianWallSeconds"`
	// Shorter is the fixed staircase's median wall time over this kind's.
	Shorter           float64  `json:"shorterThanFixed"`
	MedianExperiments float64  `json:"medianExperiments"`
	Criticals         []string `json:"criticals"`
	Allocations       []string `json:"allocations"`
}

// Score is one allocation's goodput at one SLA: summed over the workloads,
// the rounds' mean.
type Score struct {
	Allocation string  `json:"allocation"`
	SLA        string  `json:"sla"`
	Goodput    float64 `json:"goodput"`
	// Spread is the range of the rounds' sums, SD their standard deviation.
	Spread float64 `json:"spread"`
	SD     float64 `json:"sd"`
	Share  float64 `json:"share"`
	// Noise is a round's standard deviation, pooled over the grid's
	// allocations at this SLA; Rounds how many rounds the mean is of.
	Noise  float64 `json:"noise"`
	Rounds int     `json:"rounds"`
}

// Versus compares a kind's allocations with the fixed staircase's at one
// SLA: every pair of one of each.
type Versus struct {
	Kind  string `json:"kind"`
	SLA   string `json:"sla"`
	Pairs int    `json:"pairs"`
	// Within is how many pairs differ by no more than two standard errors
	// of the difference of their means; Largest the largest gap in shares
	// of the grid's best (kind's minus fixed's).
	Within  int     `json:"within"`
	Largest float64 `json:"largestGap"`
}

// analyse derives the page's figures from the campaigns and the grid.
func (r *Report) analyse() {
	r.Kinds = nil
	var fixed float64
	for _, k := range kinds {
		s := KindSummary{Kind: k}
		var wall, exps []float64
		for _, c := range r.Campaigns {
			if c.Kind != k {
				continue
			}
			s.Campaigns++
			if c.Error != "" {
				s.Failed++
				continue
			}
			wall, exps = append(wall, c.WallSeconds), append(exps, float64(c.Experiments))
			if !slices.Contains(s.Criticals, c.Critical) {
				s.Criticals = append(s.Criticals, c.Critical)
			}
			if !slices.Contains(s.Allocations, c.Allocation) {
				s.Allocations = append(s.Allocations, c.Allocation)
			}
		}
		if len(wall) > 0 {
			s.MedianWall, s.MedianExperiments = median(wall), median(exps)
		}
		if k == "fixed" {
			fixed = s.MedianWall
		}
		r.Kinds = append(r.Kinds, s)
	}
	var crit []string
	for i := range r.Kinds {
		if r.Kinds[i].MedianWall > 0 && fixed > 0 {
			r.Kinds[i].Shorter = fixed / r.Kinds[i].MedianWall
		}
		for _, c := range r.Kinds[i].Criticals {
			if !slices.Contains(crit, c) {
				crit = append(crit, c)
			}
		}
	}
	r.SameCritical = len(crit) == 1
	r.Scores = scores(r.Grid, r.GridAllocations, r.SLAs)
	r.VsFixed = nil
	for _, k := range kinds[:2] {
		for _, sla := range r.SLAs {
			v := Versus{Kind: k, SLA: sla, Largest: math.NaN()}
			for _, a := range r.kind(k).Allocations {
				for _, f := range r.kind("fixed").Allocations {
					sa, sf := r.score(a, sla), r.score(f, sla)
					if sa == nil || sf == nil {
						continue
					}
					v.Pairs++
					if !resolvedGap(*sa, *sf) {
						v.Within++
					}
					if gap := sa.Share - sf.Share; math.IsNaN(v.Largest) || math.Abs(gap) > math.Abs(v.Largest) {
						v.Largest = gap
					}
				}
			}
			if math.IsNaN(v.Largest) {
				v.Largest = 0
			}
			r.VsFixed = append(r.VsFixed, v)
		}
	}
}

func (r *Report) kind(k string) KindSummary {
	for _, s := range r.Kinds {
		if s.Kind == k {
			return s
		}
	}
	return KindSummary{Kind: k}
}

func (r *Report) score(alloc, sla string) *Score {
	for i := range r.Scores {
		if r.Scores[i].Allocation == alloc && r.Scores[i].SLA == sla {
			return &r.Scores[i]
		}
	}
	return nil
}

// scores sums each allocation's goodput over the workloads, per round, and
// compares the rounds' mean with the grid's best. A round with a workload
// missing (failed, killed) is left out of the allocation's mean; an
// allocation with no whole round has no score.
func scores(runs []GridRun, allocs []GridAllocation, slas []string) []Score {
	var out []Score
	for _, sla := range slas {
		var ss []Score
		var sums [][]float64
		for _, a := range allocs {
			var sum []float64
			for _, g := range runs {
				if g.Allocation != a.Allocation || g.Error != "" || len(g.Cells) < len(g.Users) {
					continue
				}
				s := 0.0
				for _, c := range g.Cells {
					s += c.Goodput[sla]
				}
				sum = append(sum, s)
			}
			if len(sum) == 0 {
				continue
			}
			sums = append(sums, sum)
			sc := Score{Allocation: a.Allocation, SLA: sla, Goodput: stat.Mean(sum, nil), Spread: slices.Max(sum) - slices.Min(sum), Rounds: len(sum)}
			if len(sum) > 1 {
				sc.SD = stat.StdDev(sum, nil)
			}
			ss = append(ss, sc)
		}
		noise, best := gridnoise.Pooled(sums), 0.0
		for _, s := range ss {
			best = max(best, s.Goodput)
		}
		for i := range ss {
			ss[i].Noise = noise
			if best > 0 {
				ss[i].Share = ss[i].Goodput / best
			}
		}
		out = append(out, ss...)
	}
	return out
}

// resolvedGap: gridnoise's rule on two scores (their noise is the grid's).
func resolvedGap(a, b Score) bool {
	return gridnoise.Resolved(a.Goodput, b.Goodput, a.Rounds, b.Rounds, a.Noise)
}

// median of xs (the mean of the middle two for an even count).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	sort.Float64s(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// write writes the JSON twin and the page.
func (r *Report) write(out string) error {
	r.analyse()
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	name := pageName(r.Stack)
	if err := os.WriteFile(filepath.Join(out, name+".json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, name+".md"), []byte(r.markdown()), 0o644)
}

// pageName is the page's file name without its extension: the Go stack's
// is live-evaluation-ramp, another stack's carries its name, so that one
// stack's run never overwrites another's page.
func pageName(stack string) string {
	if stack == "" || stack == "go" {
		return "live-evaluation-ramp"
	}
	return "live-evaluation-ramp-" + stack
}

// rerender draws the page again from its JSON twin, with notes added.
func rerender(path, out string, notes []string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	r.Notes = append(r.Notes, notes...)
	return r.write(out)
}

// markdown is docs/live-evaluation-ramp.md.
func (r *Report) markdown() string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("# The ramp campaign against the staircases on the %s testbed (generated)\n\n", r.Stack)
	if r.Quick {
		p("**A quick try (-quick): one round of short trials, not the evaluation.**\n\n")
	}
	dirty := ""
	if r.Dirty != "" {
		dirty = " with changes to tracked files (" + r.Dirty + ")"
	}
	p("Generated by testbed/rampeval from %s to %s, on tree %s%s, on a testbed of its own (port offset %d), caps %s cores:\n\n",
		r.Generated, r.Finished, r.Head, dirty, r.PortOffset, r.Caps)
	p("    %s\n\n", r.Command)
	name := pageName(r.Stack)
	p("Its JSON twin is [%[1]s.json](%[1]s.json); `go run ./testbed/rampeval -render docs/%[1]s.json` draws this page again from it.\n", name)
	p("Load average before: `%s`; after: `%s`.\n\n", r.UptimeBefore, r.UptimeAfter)
	if w := r.WarmUp; w != nil {
		ms := make([]string, len(w.CPUPerPage))
		for i, x := range w.CPUPerPage {
			ms[i] = fmt.Sprintf("%.2f", x)
		}
		settled := "flat"
		if !w.Settled {
			settled = "**not flat**: the campaigns began on a JVM still warming"
		}
		hot := ""
		if w.HotSeconds > 0 {
			hot = fmt.Sprintf("a trial of %.0f s at %d users on %s with the app's cap at %s (%.1f pages/s; then the caps %s again), then ",
				w.HotSeconds, w.HotUsers, jvmwarm.HotAlloc["platform"], w.HotCap, w.HotThroughput, w.Caps)
		}
		if len(w.CPUPerPage) == 0 {
			p("Warm-up before the first campaign (%.0f s), measured by none: %sno trial under the cap.\n\n", w.Seconds, hot)
		} else {
			p("Warm-up before the first campaign (%.0f s), measured by none: %strials of %s at %d users on %s, the app's CPU per page (ms) %s: %s.\n\n",
				w.Seconds, hot, w.Trial, w.Users, r.Initial, strings.Join(ms, ", "), settled)
		}
	}
	for _, n := range r.Notes {
		p("- %s\n", n)
	}
	if len(r.Notes) > 0 {
		p("\n")
	}
	p("Issue 39's measure: `softalloc recommend --runner live -f %s` as one continuous ramp (`ramp`), as the adaptive staircase (`adaptive`)\n", r.Deployment)
	p("and as the fixed staircase (`fixed`), rounds of one of each (%d), every round in the opposite order of the one before, each campaign on\n", r.Rounds)
	p("a journal of its own from the deployment's allocation %s. Every campaign: `%s`; then\n\n", r.Initial, r.Steps)
	for _, k := range kinds {
		p("- %s: `%s`\n", k, r.Trials[k])
	}
	p("\nThe testbed's deployment files say `precision: 0` (fixed trials of 3 s + 6 s + 1 s, as testbed/e2e runs them), so the adaptive\n")
	p("staircase and the ramp are given their precision and longest window here.")
	if r.Trials["fixed"] == defaultFixed {
		p(" The fixed staircase's trials are docs/commands.md's (the paper's scaled by the think time), the\n")
		p("staircase of its 1,219 s and 14 experiments, whose half-widths are about those of adaptive trials at 5%%.")
	}
	p("\n")
	p("\n## The campaigns\n\n")
	p("| kind | round | wall s | experiments | critical | saturation (users) | minJobs | allocation |\n|---|---|---|---|---|---|---|---|\n")
	for _, c := range r.Campaigns {
		if c.Error != "" {
			p("| %s | %d | %.0f | failed: %s | | | | |\n", c.Kind, c.Round, c.WallSeconds, oneLine(c.Error))
			continue
		}
		exps := fmt.Sprint(c.Experiments)
		if c.Windows > 0 {
			exps += fmt.Sprintf(" (%d windows in %d ramps)", c.Windows, c.Ramps)
		}
		p("| %s | %d | %.0f | %s | %s | %d | %.1f | %s |\n", c.Kind, c.Round, c.WallSeconds, exps, c.Critical, c.SaturationWorkload, c.MinJobs, c.Allocation)
	}
	p("\n")
	for _, c := range r.Campaigns {
		for _, w := range c.Warnings {
			p("- %s %d: %s\n", c.Kind, c.Round, oneLine(w))
		}
	}
	p("\n| kind | campaigns | median wall s | fixed's median over it | median experiments | critical | allocations |\n|---|---|---|---|---|---|---|\n")
	for _, k := range r.Kinds {
		failed := ""
		if k.Failed > 0 {
			failed = fmt.Sprintf(" (%d failed)", k.Failed)
		}
		p("| %s | %d%s | %.0f | %.2fx | %.0f | %s | %s |\n", k.Kind, k.Campaigns, failed, k.MedianWall, k.Shorter, k.MedianExperiments,
			strings.Join(k.Criticals, ", "), strings.Join(k.Allocations, ", "))
	}
	var crit []string
	for _, k := range r.Kinds {
		for _, c := range k.Criticals {
			if !slices.Contains(crit, c) {
				crit = append(crit, c)
			}
		}
	}
	if r.SameCritical {
		p("\nEvery campaign that answered named the same critical resource: %s.\n", crit[0])
	} else {
		p("\nThe campaigns did not all name the same critical resource: %s.\n", strings.Join(crit, "; "))
	}

	p("\n## The grid\n\n")
	n := 0
	secs := 0.0
	for _, g := range r.Grid {
		n += len(g.Cells)
		secs += g.Seconds
	}
	p("Every allocation the campaigns gave and the initial one at %s users (%s x the campaigns' median saturation workload),\n", joinInts(r.GridUsers), joinFloats(r.GridFactors))
	p("`softalloc simulate --runner live` with `%s`, %d rounds, every second one in the opposite order (allocations and\n", r.GridTrial, r.gridRounds())
	p("workloads): %d trials in %.0f s. Goodput is summed over the workloads; a score is the rounds' mean, its spread the range of the\n", n, secs)
	p("rounds' sums, its share of the grid's best mean. The noise is a round's standard deviation, each allocation's variance over its rounds\n")
	p("pooled; two means of n1 and n2 rounds cannot be told apart when they differ by at most 2 x noise x sqrt(1/n1 + 1/n2) (testbed/wpeval's rule).\n\n")
	for _, g := range r.Grid {
		if g.Error != "" {
			p("- round %d, %s: %s\n", g.Round, g.Allocation, oneLine(g.Error))
		}
	}
	p("| allocation | from |")
	for _, s := range r.SLAs {
		p(" goodput@%s s (spread) | share |", s)
	}
	p("\n|---|---|")
	for range r.SLAs {
		p("---|---|")
	}
	p("\n")
	for _, a := range r.GridAllocations {
		p("| %s | %s |", a.Allocation, strings.Join(a.From, ", "))
		for _, sla := range r.SLAs {
			if s := r.score(a.Allocation, sla); s != nil {
				p(" %.1f (%.1f) | %.3f |", s.Goodput, s.Spread, s.Share)
			} else {
				p(" - | - |")
			}
		}
		p("\n")
	}
	// Every score at an SLA carries its pooled noise.
	var noise []string
	for _, s := range r.Scores {
		if !slices.ContainsFunc(noise, func(n string) bool { return strings.HasSuffix(n, " at "+s.SLA+" s") }) {
			noise = append(noise, fmt.Sprintf("%.1f at %s s", s.Noise, s.SLA))
		}
	}
	if len(noise) > 0 {
		p("\nThe noise, a round's standard deviation of the sum: %s.\n", strings.Join(noise, ", "))
	}
	p("\n## Against the fixed staircase\n\n")
	for _, k := range r.Kinds[:2] {
		var parts []string
		all := true
		for _, v := range r.VsFixed {
			if v.Kind != k.Kind || v.Pairs == 0 {
				continue
			}
			parts = append(parts, fmt.Sprintf("%d of %d pairs at %s s (largest gap %+.3f of the best)", v.Within, v.Pairs, v.SLA, v.Largest))
			all = all && v.Within == v.Pairs
		}
		p("- %s: median %.0f s against the fixed staircase's %.0f s: the fixed staircase took %.2fx as long (the issue's target: at least 5x).",
			k.Kind, k.MedianWall, r.kind("fixed").MedianWall, k.Shorter)
		switch {
		case len(parts) == 0:
			p(" No allocation of it and the fixed staircase's in the grid to compare.\n")
		case all:
			p(" The grid cannot tell its allocations from the fixed staircase's: within the noise, %s.\n", strings.Join(parts, "; "))
		default:
			p(" The grid tells some of its allocations from the fixed staircase's; within the noise: %s.\n", strings.Join(parts, "; "))
		}
	}
	return b.String()
}

// gridRounds is how many rounds the grid ran.
func (r *Report) gridRounds() int {
	n := 0
	for _, g := range r.Grid {
		n = max(n, g.Round)
	}
	return n
}

func joinFloats(xs []float64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return strings.ReplaceAll(s, "|", "\\|")
}
