package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/testbed/jvmwarm"
)

// testdata/recommend-ramp.json is recommend --ramp --output json as the
// quick try printed it on the Go testbed (offset 300, 2026-12-01): one ramp
// of four windows, the answer on windows 2 and 3, one confirming trial.
func TestParseReadsRecommendsJSON(t *testing.T) {
	out, err := os.ReadFile(filepath.Join("testdata", "recommend-ramp.json"))
	require.NoError(t, err)
	var c Campaign
	require.NoError(t, c.parse(out))
	assert.Equal(t, "app cpu", c.Critical)
	assert.Equal(t, "app-1", c.Server)
	assert.Equal(t, 100, c.SaturationWorkload)
	assert.InDelta(t, 188.8, c.MaxThroughput, 1e-9)
	assert.InDelta(t, 3.769, c.MinJobs, 1e-3)
	assert.Equal(t, "100-4-4", c.Allocation)
	assert.Equal(t, 2, c.Experiments, "the ramp and its confirming trial")
	assert.Equal(t, 4, c.Windows)
	assert.Equal(t, 1, c.Ramps)
	assert.Equal(t, []int{2, 3}, c.Answer)
	require.Len(t, c.Warnings, 2)
	assert.Contains(t, c.Warnings[1], "below the reserve's window")

	// A staircase has no ramp.
	var s Campaign
	require.NoError(t, s.parse([]byte(`{"critical": {"tier": "app", "resource": "cpu", "saturationWorkload": 120}, "minJobs": 12.1, "experiments": 14, "allocation": "100-12-12", "warnings": []}`)))
	assert.Zero(t, s.Windows)
	assert.Equal(t, 14, s.Experiments)

	// What a failed campaign prints is no answer.
	assert.ErrorContains(t, new(Campaign).parse(nil), "recommend's JSON")
	assert.ErrorContains(t, new(Campaign).parse([]byte(`{"experiments": 2, "warnings": []}`)), "no allocation")
}

// Round 1 runs ramp, adaptive, fixed; round 2 the reverse; round 3 as 1.
func TestTheOrderAlternatesBetweenRounds(t *testing.T) {
	var got []string
	for _, p := range campaignOrder(3) {
		got = append(got, fmt.Sprintf("%s %d", p.kind, p.round))
	}
	assert.Equal(t, []string{"ramp 1", "adaptive 1", "fixed 1", "fixed 2", "adaptive 2", "ramp 2", "ramp 3", "adaptive 3", "fixed 3"}, got)
	assert.Equal(t, []int{2, 1, 0}, alternate(3, 2))
	assert.Equal(t, []int{0, 1, 2}, alternate(3, 3))
}

func argsOf(kind string, round int) []string {
	return []string{"recommend", "--journal", fmt.Sprintf("journal-%s-%d.jsonl", kind, round), kind}
}

// A rerun keeps the campaigns the file recorded as finished with the same
// arguments, and runs the rest: one that failed, one run with other flags,
// one cut off in the middle of its line by a crash.
func TestARerunSkipsTheRecordedCampaigns(t *testing.T) {
	file := filepath.Join(t.TempDir(), "campaigns.jsonl")
	require.NoError(t, appendJSONL(file, Campaign{Kind: "ramp", Round: 1, Args: strings.Join(argsOf("ramp", 1), " "), WallSeconds: 200, Allocation: "100-15-15"}))
	require.NoError(t, appendJSONL(file, Campaign{Kind: "adaptive", Round: 1, Args: strings.Join(argsOf("adaptive", 1), " "), Error: "softalloc recommend: exit status 1"}))
	require.NoError(t, appendJSONL(file, Campaign{Kind: "fixed", Round: 1, Args: "recommend --fixed --runtime 6s", WallSeconds: 300, Allocation: "100-12-12"}))
	f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"kind": "fixed", "round": 2, "args": "recommend --jour`)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	var ran []string
	run := func(kind string, round int, args []string) Campaign {
		ran = append(ran, fmt.Sprintf("%s %d", kind, round))
		return Campaign{Kind: kind, Round: round, Args: strings.Join(args, " "), WallSeconds: 100, Allocation: "100-16-16"}
	}
	got, err := runCampaigns(file, 2, argsOf, run)
	require.NoError(t, err)
	assert.Equal(t, []string{"adaptive 1", "fixed 1", "fixed 2", "adaptive 2", "ramp 2"}, ran)
	require.Len(t, got, 6)
	assert.InDelta(t, 200, got[0].WallSeconds, 1e-9, "ramp 1 as recorded")

	// Everything is recorded now: a third run measures nothing.
	ran = nil
	got, err = runCampaigns(file, 2, argsOf, run)
	require.NoError(t, err)
	assert.Empty(t, ran)
	assert.Len(t, got, 6)

	// An interrupted campaign is not recorded, and stops the run.
	_, err = runCampaigns(file, 3, argsOf, func(kind string, round int, args []string) Campaign {
		return Campaign{Kind: kind, Round: round, Args: strings.Join(args, " "), Error: errInterrupted + ": signal: terminated"}
	})
	require.ErrorContains(t, err, "interrupted during the ramp campaign of round 3")
	done, err := readJSONL[Campaign](file)
	require.NoError(t, err)
	for _, d := range done {
		assert.NotEqual(t, 3, d.Round)
	}
}

// The grid alternates its allocations' order and keeps what a run recorded
// whole.
func TestTheGridAlternatesAndResumes(t *testing.T) {
	file := filepath.Join(t.TempDir(), "grid.jsonl")
	allocs := []GridAllocation{{Allocation: "100-20-10"}, {Allocation: "100-15-15"}, {Allocation: "100-12-12"}}
	users := []int{90, 120}
	cells := []Cell{{Users: 90}, {Users: 120}}
	require.NoError(t, appendJSONL(file, GridRun{Round: 1, Allocation: "100-20-10", Users: users, Trial: "t", Cells: cells}))
	require.NoError(t, appendJSONL(file, GridRun{Round: 1, Allocation: "100-15-15", Users: users, Trial: "t", Cells: cells[:1]}))
	require.NoError(t, appendJSONL(file, GridRun{Round: 2, Allocation: "100-12-12", Users: users, Trial: "other", Cells: cells}))
	var ran []string
	got, err := runGrid(file, allocs, users, 2, "t", func(round int, a string) GridRun {
		ran = append(ran, fmt.Sprintf("%d %s", round, a))
		return GridRun{Round: round, Allocation: a, Users: users, Trial: "t", Cells: cells}
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"1 100-15-15", "1 100-12-12", "2 100-12-12", "2 100-15-15", "2 100-20-10"}, ran)
	assert.Len(t, got, 6)
}

func TestTheGridsWorkloadsAndAllocations(t *testing.T) {
	cs := []Campaign{
		{Kind: "ramp", Round: 1, SaturationWorkload: 110, Allocation: "100-15-15"},
		{Kind: "adaptive", Round: 1, SaturationWorkload: 120, Allocation: "100-20-10"},
		{Kind: "fixed", Round: 1, SaturationWorkload: 140, Allocation: "100-15-15"},
		{Kind: "ramp", Round: 2, SaturationWorkload: 20, Error: "failed"},
	}
	assert.Equal(t, []int{90, 120, 150, 180}, gridUsers(cs, []float64{0.75, 1, 1.25, 1.5}), "around the median 120; the failed one left out")
	assert.Equal(t, []int{120}, gridUsers(cs, []float64{1, 1.001}), "a workload once")
	assert.Nil(t, gridUsers(cs[3:], []float64{1}))
	assert.Equal(t, []GridAllocation{{"100-20-10", []string{"initial", "adaptive 1"}}, {"100-15-15", []string{"ramp 1", "fixed 1"}}},
		gridAllocations("100-20-10", cs))
}

func run2(alloc string, round int, good ...float64) GridRun {
	g := GridRun{Round: round, Allocation: alloc, Users: make([]int, len(good))}
	for i, x := range good {
		g.Users[i] = 100 + 10*i
		g.Cells = append(g.Cells, Cell{Users: g.Users[i], Goodput: map[string]float64{"0.25": x}})
	}
	return g
}

// The page's arithmetic: medians of the wall times and their ratio to the
// fixed staircase's, one critical resource, the grid's sums, shares,
// spreads and pooled noise, and the pairs the noise cannot tell apart.
func TestTheReportsArithmetic(t *testing.T) {
	r := &Report{Stack: "go", SLAs: []string{"0.25"}, Trials: map[string]string{"ramp": "--ramp"}, Rounds: 3,
		Campaigns: []Campaign{
			{Kind: "ramp", Round: 1, WallSeconds: 200, Experiments: 3, Critical: "app cpu", Allocation: "100-15-15"},
			{Kind: "adaptive", Round: 1, WallSeconds: 600, Experiments: 13, Critical: "app cpu", Allocation: "100-16-16"},
			{Kind: "fixed", Round: 1, WallSeconds: 1200, Experiments: 14, Critical: "app cpu", Allocation: "100-12-12"},
			{Kind: "fixed", Round: 2, WallSeconds: 1300, Experiments: 14, Critical: "app cpu", Allocation: "100-12-12"},
			{Kind: "adaptive", Round: 2, WallSeconds: 400, Experiments: 11, Critical: "app cpu", Allocation: "100-16-16"},
			{Kind: "ramp", Round: 2, WallSeconds: 240, Experiments: 4, Critical: "app cpu", Allocation: "100-3-3"},
			{Kind: "ramp", Round: 3, WallSeconds: 260, Critical: "", Error: "softalloc recommend: exit status 1: no window saturated"},
		},
		GridAllocations: []GridAllocation{{"100-15-15", []string{"ramp 1"}}, {"100-16-16", []string{"adaptive 1", "adaptive 2"}},
			{"100-12-12", []string{"fixed 1", "fixed 2"}}, {"100-3-3", []string{"ramp 2"}}},
		Grid: []GridRun{
			run2("100-15-15", 1, 100, 200), run2("100-15-15", 2, 100, 196), // 300 and 296: 298, spread 4
			run2("100-16-16", 1, 100, 210), run2("100-16-16", 2, 100, 202), // 310 and 302: 306, spread 8
			run2("100-12-12", 1, 100, 205), run2("100-12-12", 2, 100, 205), // 305 twice
			run2("100-3-3", 1, 60, 100), run2("100-3-3", 2, 60, 100), // 160 twice
			{Round: 3, Allocation: "100-3-3", Users: []int{100, 110}, Cells: []Cell{{Users: 100}}}, // a round cut short: left out
		}}
	r.analyse()
	ramp, adaptive, fixed := r.kind("ramp"), r.kind("adaptive"), r.kind("fixed")
	assert.InDelta(t, 220, ramp.MedianWall, 1e-9, "the median of 200 and 240; the failed one left out")
	assert.Equal(t, 1, ramp.Failed)
	assert.InDelta(t, 500, adaptive.MedianWall, 1e-9)
	assert.InDelta(t, 1250, fixed.MedianWall, 1e-9)
	assert.InDelta(t, 1250.0/220, ramp.Shorter, 1e-9)
	assert.InDelta(t, 2.5, adaptive.Shorter, 1e-9)
	assert.InDelta(t, 1, fixed.Shorter, 1e-9)
	assert.True(t, r.SameCritical)
	assert.Equal(t, []string{"100-15-15", "100-3-3"}, ramp.Allocations)

	s := r.score("100-16-16", "0.25")
	require.NotNil(t, s)
	assert.InDelta(t, 306, s.Goodput, 1e-9)
	assert.InDelta(t, 8, s.Spread, 1e-9)
	assert.InDelta(t, 1, s.Share, 1e-9, "the grid's best")
	assert.InDelta(t, 298.0/306, r.score("100-15-15", "0.25").Share, 1e-9)
	assert.Equal(t, 2, r.score("100-3-3", "0.25").Rounds, "the cut round left out")
	// Variances 8, 32, 0 and 0 over one degree of freedom each: sqrt(40/4).
	assert.InDelta(t, 3.1623, s.Noise, 1e-4)
	// 2 x 3.16 x sqrt(1/2 + 1/2) = 6.32: 298 against 305 is told apart
	// (7), 306 against 305 not, and 160 is.
	var ramps, adaptives Versus
	for _, v := range r.VsFixed {
		switch v.Kind {
		case "ramp":
			ramps = v
		case "adaptive":
			adaptives = v
		}
	}
	assert.Equal(t, Versus{Kind: "ramp", SLA: "0.25", Pairs: 2, Within: 0, Largest: 160.0/306 - 305.0/306}, ramps)
	assert.Equal(t, 1, adaptives.Within)
	assert.Equal(t, 1, adaptives.Pairs)

	md := r.markdown()
	assert.Contains(t, md, "| ramp | 1 | 200 | 3 | app cpu | 0 | 0.0 | 100-15-15 |")
	assert.Contains(t, md, "| ramp | 3 | 260 | failed: softalloc recommend: exit status 1: no window saturated |")
	assert.Contains(t, md, "| ramp | 3 (1 failed) | 220 | 5.68x | 4 | app cpu | 100-15-15, 100-3-3 |")
	assert.Contains(t, md, "| adaptive | 2 | 500 | 2.50x | 12 | app cpu | 100-16-16 |")
	assert.Contains(t, md, "named the same critical resource: app cpu.")
	assert.Contains(t, md, "| 100-16-16 | adaptive 1, adaptive 2 | 306.0 (8.0) | 1.000 |")
	assert.Contains(t, md, "The noise, a round's standard deviation of the sum: 3.2 at 0.25 s.")
	assert.Contains(t, md, "- adaptive: median 500 s against the fixed staircase's 1250 s: the fixed staircase took 2.50x as long (the issue's target: at least 5x). The grid cannot tell its allocations from the fixed staircase's")
	assert.Contains(t, md, "- ramp: median 220 s against the fixed staircase's 1250 s: the fixed staircase took 5.68x as long (the issue's target: at least 5x). The grid tells some of its allocations from the fixed staircase's; within the noise: 0 of 2 pairs at 0.25 s (largest gap -0.474 of the best).")

	r.Campaigns[0].Critical = "db cpu"
	r.analyse()
	assert.False(t, r.SameCritical)
	assert.Contains(t, r.markdown(), "did not all name the same critical resource: db cpu; app cpu.")
}

// The page is drawn again from its twin with the same figures and a note.
func TestRenderRedrawsFromTheJSON(t *testing.T) {
	dir := t.TempDir()
	r := &Report{Stack: "go", SLAs: []string{"0.25"}, Head: "abc123", Command: "go run ./testbed/rampeval -rounds 3",
		Campaigns: []Campaign{{Kind: "fixed", Round: 1, WallSeconds: 1219, Experiments: 14, Critical: "app cpu", Allocation: "100-12-12"}}}
	require.NoError(t, r.write(dir))
	first, err := os.ReadFile(filepath.Join(dir, "live-evaluation-ramp.md"))
	require.NoError(t, err)
	assert.Contains(t, string(first), "on tree abc123")
	assert.Contains(t, string(first), "    go run ./testbed/rampeval -rounds 3\n")
	require.NoError(t, rerender(filepath.Join(dir, "live-evaluation-ramp.json"), dir, []string{"a note"}))
	again, err := os.ReadFile(filepath.Join(dir, "live-evaluation-ramp.md"))
	require.NoError(t, err)
	assert.Equal(t, strings.Replace(string(again), "- a note\n\n", "", 1), string(first))

	// Another stack's page has its own name: the Go stack's stays.
	r.Stack = "java"
	require.NoError(t, r.write(dir))
	java, err := os.ReadFile(filepath.Join(dir, "live-evaluation-ramp-java.md"))
	require.NoError(t, err)
	assert.Contains(t, string(java), "on the java testbed")
	assert.Contains(t, string(java), "[live-evaluation-ramp-java.json](live-evaluation-ramp-java.json); `go run ./testbed/rampeval -render docs/live-evaluation-ramp-java.json`")
	kept, err := os.ReadFile(filepath.Join(dir, "live-evaluation-ramp.md"))
	require.NoError(t, err)
	assert.Equal(t, string(again), string(kept))
}

// The deployment moves to the testbed's ports, its hook and workload found
// from anywhere, and its pools are the campaigns' start.
func TestShiftedDeploymentAndItsInitialAllocation(t *testing.T) {
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	path, err := shifted(repo, t.TempDir(), filepath.Join(repo, "testbed", "deployment.yaml"), 300)
	require.NoError(t, err)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	s := string(b)
	for _, port := range []string{"18380", "18390", "18417", "18381", "18404"} {
		assert.Contains(t, s, "127.0.0.1:"+port)
	}
	assert.NotContains(t, s, "127.0.0.1:180")
	assert.Contains(t, s, "workload: "+filepath.Join(repo, "testbed", "workload.yaml"))
	assert.Contains(t, s, filepath.Join(repo, "testbed", "testbed.sh")+", apply")
	a, err := initialAllocation(path)
	require.NoError(t, err)
	assert.Equal(t, "100-20-10", a)
	_, err = initialAllocation(filepath.Join(repo, "testbed", "deployment-wordpress.yaml"))
	assert.ErrorContains(t, err, "want web.threads, app.threads and app.connections")
}

// The warm-up trial runs on the testbed's deployment through the live
// runner: without them softalloc refused it (want --topology or
// --deployment), and the Java stack's first run stopped there.
func TestWarmUpRunsOnTheTestbed(t *testing.T) {
	e := &evaluator{c: config{warmUsers: 100, warmUp: 2 * time.Minute}, dep: "/w/deployment.yaml"}
	args := strings.Join(e.warmUpArgs("100-20-10"), " ")
	assert.Contains(t, args, "simulate --runner live -f /w/deployment.yaml --alloc 100-20-10 --users 100 ")
	assert.Contains(t, args, "--runtime 2m0s")
}

// fakeWarmTestbed is a testbed.sh in a directory of its own that logs
// every call to calls; caps does nothing more, and exec-client takes the
// first line of answers ("CPU pages/s") and prints simulate's JSON with the
// app's CPU. The run directory holds caps web 0.5, app 0.1, db 0.6.
func fakeWarmTestbed(t *testing.T, answers string) (string, *evaluator) {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "answers")
	require.NoError(t, os.WriteFile(file, []byte(answers), 0o644))
	tb := filepath.Join(dir, "testbed.sh")
	require.NoError(t, os.WriteFile(tb, []byte(`#!/bin/sh
echo "$@" >> `+filepath.Join(dir, "calls")+`
[ "$1" = caps ] && exit 0
read cpu pages < `+file+`
sed -i 1d `+file+`
printf '[{"users": 100, "throughput": %s, "servers": [{"name": "web-1", "tier": "web", "cpu": 0.3}, {"name": "app-1", "tier": "app", "cpu": %s}]}]\n' "$pages" "$cpu"
`), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "run"), 0o755))
	for tier, c := range map[string]string{"web": "0.5", "app": "0.1", "db": "0.6"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "run", "cap-"+tier), []byte(c+"\n"), 0o644))
	}
	t.Setenv("SOFTALLOC_TESTBED_DIR", dir)
	return dir, &evaluator{c: config{testbed: tb, bin: "softalloc", warmUsers: 100, warmUp: 20 * time.Second, warmTrials: 10},
		dep: "d.yaml", ctx: context.Background()}
}

// The warm-up runs trials until the app's CPU per page is flat and
// records each one's: a fake testbed.sh answers simulate with the app's
// CPU at a 0.1-core cap and the pages/s, 2.5, 2.0, 1.98 and 2.01 ms.
func TestWarmUpStopsWhenTheCPUPerPageIsFlat(t *testing.T) {
	dir, e := fakeWarmTestbed(t, "1 40\n0.8 40\n0.792 40\n0.804 40\n0.8 40\n")
	answers := filepath.Join(dir, "answers")
	w, err := e.warmUpUntilFlat("100-20-10")
	require.NoError(t, err)
	assert.True(t, w.Settled)
	require.Len(t, w.CPUPerPage, 4, "2.5, then 2.0, 1.98 and 2.01: flat")
	assert.InDelta(t, 2.5, w.CPUPerPage[0], 1e-9)
	assert.InDelta(t, 2.01, w.CPUPerPage[3], 1e-9)
	calls, err := os.ReadFile(filepath.Join(dir, "calls"))
	require.NoError(t, err)
	assert.Equal(t, 4, strings.Count(string(calls), "exec-client softalloc simulate --runner live -f d.yaml --alloc 100-20-10 --users 100 "))

	// At most -warm-trials, and the page says the JVM was not flat.
	require.NoError(t, os.WriteFile(answers, []byte("1 40\n0.8 40\n0.6 40\n"), 0o644))
	e.c.warmTrials = 3
	w, err = e.warmUpUntilFlat("100-20-10")
	require.NoError(t, err)
	assert.False(t, w.Settled)
	assert.Len(t, w.CPUPerPage, 3)
	r := &Report{Stack: "java", Initial: "100-20-10", WarmUp: w}
	r.analyse()
	assert.Contains(t, r.markdown(), "the app's CPU per page (ms) 2.50, 2.00, 1.50: **not flat**")

	// A lifted cap gives no CPU per page to compare: refused before any trial.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "run", "cap-app"), []byte("max\n"), 0o644))
	_, err = e.warmUpUntilFlat("100-20-10")
	assert.ErrorContains(t, err, `the app's cap "max": want cores`)
}

// On the Java stack the warm-up first runs one trial with the app's cap
// lifted on generous pools (ten trials under the cap alone still fell
// from 2.78 to 0.54 ms a page), puts the testbed's caps back, then runs
// the trials under the cap; the page says so.
func TestWarmUpLiftsTheAppsCapFirst(t *testing.T) {
	dir, e := fakeWarmTestbed(t, "0.5 300\n0.8 40\n0.792 40\n0.804 40\n")
	e.c.hot, e.c.hotUsers, e.c.hotCap = 75*time.Second, 150, "max"
	w, err := e.warmUpUntilFlat("100-20-10")
	require.NoError(t, err)
	calls, err := os.ReadFile(filepath.Join(dir, "calls"))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(calls)), "\n")
	require.Len(t, lines, 6, "%q", lines)
	assert.Equal(t, "caps web=0.5 app=max db=0.6", lines[0])
	assert.Contains(t, lines[1], "simulate --runner live -f d.yaml --alloc "+jvmwarm.HotAlloc["platform"]+" --users 150 ")
	assert.Contains(t, lines[1], "--runtime 1m15s")
	assert.Equal(t, "caps web=0.5 app=0.1 db=0.6", lines[2], "the caps back before any trial under the cap")
	for _, l := range lines[3:] {
		assert.Contains(t, l, "--alloc 100-20-10 --users 100 ")
	}
	assert.InDelta(t, 300, w.HotThroughput, 1e-9)
	assert.Equal(t, "web=0.5 app=0.1 db=0.6", w.Caps)
	assert.True(t, w.Settled)
	require.Len(t, w.CPUPerPage, 3)
	r := &Report{Stack: "java", Initial: "100-20-10", WarmUp: w}
	r.analyse()
	assert.Contains(t, r.markdown(), "a trial of 75 s at 150 users on "+jvmwarm.HotAlloc["platform"]+" with the app's cap at max (300.0 pages/s; then the caps web=0.5 app=0.1 db=0.6 again), then trials of 20s")
}

func TestAppCPUPerPageNamesWhatItLacks(t *testing.T) {
	one := []byte(`[{"throughput": 50, "servers": [{"tier": "app", "cpu": 0.5}]}]`)
	ms, err := appCPUPerPage(one, 0.1)
	require.NoError(t, err)
	assert.InDelta(t, 1.0, ms, 1e-9)
	_, err = appCPUPerPage([]byte(`[{"throughput": 50, "servers": [{"tier": "web", "cpu": 0.5}]}]`), 0.1)
	assert.ErrorContains(t, err, "no app server")
	_, err = appCPUPerPage([]byte(`[]`), 0.1)
	assert.ErrorContains(t, err, "want one trial")
}
