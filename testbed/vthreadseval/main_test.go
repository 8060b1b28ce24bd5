package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The grid runs on a testbed of its own ports: every address of the
// deployment file moves by the offset, and the hook and workload are found
// from anywhere.
func TestShiftedDeploymentFile(t *testing.T) {
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	path, err := shifted(repo, t.TempDir(), "deployment-java-vthreads.yaml", 200)
	require.NoError(t, err)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	s := string(b)
	for _, port := range []string{"18280", "18290", "18317", "18282", "18304"} {
		assert.Contains(t, s, "127.0.0.1:"+port)
	}
	for _, port := range []string{"18080", "18090", "18117", "18082", "18104"} {
		assert.NotContains(t, s, "127.0.0.1:"+port)
	}
	assert.Contains(t, s, "workload: "+filepath.Join(repo, "testbed", "workload.yaml"))
	assert.Contains(t, s, filepath.Join(repo, "testbed", "testbed.sh")+", apply")
}

// trial is one row of a test report: the app's jobs and connections.
func trial(c string, rep, users int, good map[string]float64, errs int64, jobs float64, permits int, conns int) row {
	return row{Config: c, Rep: rep, Users: users, Throughput: 100 + float64(rep), Goodput: good, Errors: errs, ResponseTime: 0.05,
		Servers: []server{{Name: "app-1", CPU: 0.5, Pools: []pool{{Name: "threads", Size: permits, Busy: jobs}, {Name: "connections", Size: conns, Busy: min(jobs, float64(conns))}}}}}
}

// A cell is the mean of its repetitions, with their smallest and largest
// value; the shares are of the grid's best mean goodput at each threshold.
func TestCellsMeanAndSpreadAndSharesOfTheBest(t *testing.T) {
	r := report{Users: []int{80, 120}, SLAs: []string{"0.1"}, Runtime: "8s", Warm: "3 x 30s", Reps: 2,
		Configs: []config{{Name: "a", Role: rolePlatform, Threads: "platform"}, {Name: "b", Role: roleLimit, Threads: "virtual"}}}
	for _, x := range []struct {
		c      string
		rep, u int
		good   float64
	}{{"a", 1, 80, 40}, {"a", 1, 120, 70}, {"a", 2, 80, 60}, {"a", 2, 120, 90}, {"b", 1, 80, 30}, {"b", 1, 120, 10}, {"b", 2, 80, 50}, {"b", 2, 120, 30}} {
		r.Rows = append(r.Rows, trial(x.c, x.rep, x.u, map[string]float64{"0.1": x.good}, 0, 10, 19, 19))
	}
	cells := r.cells()
	require.Len(t, cells, 4)
	assert.Equal(t, 2, cells[0].N)
	assert.InDelta(t, 50, cells[0].Goodput["0.1"], 1e-9)
	assert.InDelta(t, 40, cells[0].GoodputMin["0.1"], 1e-9)
	assert.InDelta(t, 60, cells[0].GoodputMax["0.1"], 1e-9)
	assert.InDelta(t, 101.5, cells[0].Throughput, 1e-9)
	assert.InDelta(t, 102, cells[0].ThroughputMax, 1e-9)
	md := r.markdown()
	// a's best mean is 80 (at 120 users), b's 40 (at 80): 0.50 of the best.
	assert.Contains(t, md, "| a | 80.0 (1.00) |")
	assert.Contains(t, md, "| b | 40.0 (0.50) |")
	assert.Contains(t, md, "| a | 80 | 101.5 (101.0-102.0) | 50.0 (40.0-60.0) |")
	assert.Contains(t, md, "10.0 of 19")
	assert.Contains(t, md, "| 120 | 101.5; 80.0; 50 ms; 0 | 101.5; 20.0; 50 ms; 0 |", "side by side")
	assert.Contains(t, md, "0.1 s: softalloc's limit and pool 40.0 of the grid's best 80.0, **0.50** (0.95: not reached)")
	assert.Contains(t, md, "**The target is not met** in this run.")
}

// The target: the limit's best reaches 0.95 of the grid's best at each
// threshold, and beats no limit in each cell where that timed out or queued
// (more pages in the app than connections); cells where no limit neither
// timed out nor queued are not duels.
func TestTargetAgainstNoLimitWhereItTimesOutOrQueues(t *testing.T) {
	r := report{Users: []int{40, 80, 120}, SLAs: []string{"0.05", "0.1"}, Reps: 1,
		Configs: []config{{Name: "nl", Role: roleNoLimit, Threads: "virtual"}, {Name: "lim", Role: roleLimit, Threads: "virtual"}}}
	g := func(a, b float64) map[string]float64 { return map[string]float64{"0.05": a, "0.1": b} }
	r.Rows = []row{
		trial("nl", 1, 40, g(30, 40), 0, 5, 10000, 10),  // neither: not a duel
		trial("nl", 1, 80, g(20, 60), 0, 48, 10000, 10), // queues
		trial("nl", 1, 120, g(10, 20), 7, 9, 10000, 10), // times out
		trial("lim", 1, 40, g(29, 39), 0, 5, 19, 19),
		trial("lim", 1, 80, g(25, 58), 0, 19, 19, 19),
		trial("lim", 1, 120, g(26, 50), 3, 19, 19, 19),
	}
	v := r.target()
	require.Len(t, v, 2)
	assert.InDelta(t, 29.0/30, v[0].Share, 1e-9)
	assert.True(t, v[0].Reached)
	require.Len(t, v[0].Against, 2)
	assert.Equal(t, 80, v[0].Against[0].Users)
	assert.Contains(t, v[0].Against[0].Why, "48 pages in the app for 10 connections")
	assert.Equal(t, "7 errors", v[0].Against[1].Why)
	assert.True(t, v[0].Against[0].LimitWon)
	assert.True(t, v[0].Against[1].LimitWon)
	assert.InDelta(t, 58.0/60, v[1].Share, 1e-9)
	assert.True(t, v[1].Reached)
	assert.False(t, v[1].Against[0].LimitWon, "58 against 60 at 80 users")
	md := r.markdown()
	assert.Contains(t, md, "higher in 2 of 2 cells")
	assert.Contains(t, md, "higher in 1 of 2 cells")
	assert.Contains(t, md, "**The target is not met** in this run.")

	r.Rows[4].Goodput["0.1"] = 61
	assert.Contains(t, r.markdown(), "**The target is met** in this run.")
}

// recommend's JSON gives the limit's permits, HikariCP's pool and the web
// threads; a deployment whose app tier has threads is the wrong one.
func TestParseRecommend(t *testing.T) {
	doc := `{"critical":{"tier":"app","resource":"cpu","saturationWorkload":120,"maxThroughput":210.5},"minJobs":16.2,"experiments":14,
"tiers":[{"name":"web","threadsPerServer":100,"connectionsPerServer":null},{"name":"app","threadsPerServer":17,"connectionsPerServer":16,"permits":true},
{"name":"db","threadsPerServer":0}],"evidence":{"reading":"throughput-peak","wlMin":160},"warnings":["w"]}`
	r, err := parseRecommend([]byte(doc), "permits")
	require.NoError(t, err)
	assert.Equal(t, recommendation{Web: 100, App: 17, Unit: "permits", Connections: 16, MinJobs: 16.2, Reading: "throughput-peak", WLmin: 160, CriticalTier: "app",
		CriticalResource: "cpu", SaturationWorkload: 120, MaxThroughput: 210.5, Experiments: 14, Warnings: []string{"w"}}, r)

	_, err = parseRecommend([]byte(strings.Replace(doc, `"permits":true`, `"permits":false`, 1)), "permits")
	assert.ErrorContains(t, err, "app tier has threads, not permits")
	_, err = parseRecommend([]byte(strings.Replace(doc, `"connectionsPerServer":16`, `"connectionsPerServer":null`, 1)), "permits")
	assert.ErrorContains(t, err, "app connections 0")
	_, err = parseRecommend([]byte(strings.Replace(doc, `"saturationWorkload":120`, `"saturationWorkload":0`, 1)), "permits")
	assert.ErrorContains(t, err, "saturation workload 0")
	_, err = parseRecommend([]byte("nope"), "permits")
	assert.ErrorContains(t, err, "recommend's JSON")
}

// The platform deployment's recommendation is Tomcat's threads; the
// virtual-thread deployment's answer is not taken for it.
func TestParseRecommendOfThePlatformDeployment(t *testing.T) {
	doc := `{"critical":{"tier":"app","resource":"cpu","saturationWorkload":70,"maxThroughput":120},"minJobs":9.1,"experiments":20,
"tiers":[{"name":"web","threadsPerServer":100},{"name":"app","threadsPerServer":10,"connectionsPerServer":10},{"name":"db","threadsPerServer":0}],
"evidence":{"reading":"saturation","wlMin":70}}`
	r, err := parseRecommend([]byte(doc), "threads")
	require.NoError(t, err)
	assert.Equal(t, 10, r.App)
	assert.Equal(t, "threads", r.Unit)
	_, err = parseRecommend([]byte(strings.Replace(doc, `"threadsPerServer":10,`, `"threadsPerServer":10,"permits":true,`, 1)), "threads")
	assert.ErrorContains(t, err, "app tier has permits, not threads")
}

// The SLA thresholds are multiples of the low-load response time, to two
// significant figures, as simulate's --sla takes them.
func TestSLAsFromLowLoad(t *testing.T) {
	s, err := slasFromLowLoad(0.0174, []float64{2, 5, 10})
	require.NoError(t, err)
	assert.Equal(t, []string{"0.035", "0.087", "0.17"}, s)
	s, err = slasFromLowLoad(0.25, []float64{2, 5, 10})
	require.NoError(t, err)
	assert.Equal(t, []string{"0.5", "1.3", "2.5"}, s)
	_, err = slasFromLowLoad(0, []float64{2})
	assert.ErrorContains(t, err, "low-load response time 0 s")
}

// The workloads are fractions of the saturation workload, in order, once each.
func TestWorkloadsAroundTheKnee(t *testing.T) {
	assert.Equal(t, []int{60, 96, 120, 180}, workloads(120, []float64{0.5, 0.8, 1, 1.5}))
	assert.Equal(t, []int{1, 2}, workloads(2, []float64{0.1, 0.5, 1}))
}

// javaWant is what stack.sh's java_variant_want chooses under env: the java
// binary and the variant.
func javaWant(t *testing.T, env ...string) (string, error) {
	t.Helper()
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	cmd := exec.Command("bash", "-c", `set -euo pipefail; REPO=$1; . "$REPO/testbed/core.sh"; . "$REPO/testbed/stacks/java/stack.sh"
java_variant_want; echo "$JAVA_WANT_THREADS $JAVA_WANT_BIN"`, "bash", repo)
	cmd.Env = append(os.Environ(), "SOFTALLOC_TESTBED_DIR="+t.TempDir())
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// The evaluation runs both variants on one JDK: SOFTALLOC_TESTBED_JAVA_HOME
// chooses the platform variant's JDK too, whose default stays the java of
// PATH (OpenJDK 17).
func TestJavaHomeChoosesEitherVariantsJDK(t *testing.T) {
	home := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(home, "bin"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(home, "bin", "java"), []byte("#!/bin/sh\n"), 0o755))
	for _, v := range []string{"platform", "virtual"} {
		out, err := javaWant(t, "SOFTALLOC_TESTBED_JAVA_THREADS="+v, "SOFTALLOC_TESTBED_JAVA_HOME="+home)
		require.NoError(t, err, out)
		assert.Equal(t, v+" "+filepath.Join(home, "bin", "java"), out)
	}
	out, err := javaWant(t, "SOFTALLOC_TESTBED_JAVA_THREADS=platform", "SOFTALLOC_TESTBED_JAVA_HOME=")
	require.NoError(t, err, out)
	assert.Equal(t, "platform java", out, "the platform stack's default JDK is the java of PATH")
	out, err = javaWant(t, "SOFTALLOC_TESTBED_JAVA_THREADS=platform", "SOFTALLOC_TESTBED_JAVA_HOME="+filepath.Join(home, "none"))
	require.Error(t, err)
	assert.Contains(t, out, "SOFTALLOC_TESTBED_JAVA_HOME="+filepath.Join(home, "none")+": no java at "+filepath.Join(home, "none", "bin", "java"))
}

// The warm-up stops on the app's CPU per page: its CPU is a share of the
// 0.1-core cap.
func TestCPUPerPage(t *testing.T) {
	r := row{Throughput: 50, Servers: []server{{Name: "web-1", CPU: 0.9}, {Name: "app-1", CPU: 0.5}}}
	assert.InDelta(t, 1.0, cpuPerPage(r), 1e-9)
	assert.Zero(t, cpuPerPage(row{}))
}

// The report shows recommend's flags after the deployment file, which it
// names itself.
func TestRecommendArgs(t *testing.T) {
	args, shown := recommendArgs("/w/deployment-java-vthreads.yaml", "/w/recommend.jsonl", 10)
	assert.Equal(t, []string{"recommend", "--runner", "live", "-f", "/w/deployment-java-vthreads.yaml", "--journal", "/w/recommend.jsonl",
		"--output", "json", "--quiet", "--step", "10"}, args)
	assert.Equal(t, "--journal /w/recommend.jsonl --output json --quiet --step 10", shown)
	args, _ = recommendArgs("d.yaml", "j", 0)
	assert.NotContains(t, args, "--step", "0: recommend derives its step")
}

// The warm-up's stop: the app's CPU per page is flat when each of the last
// three trials is within 5% of their mean and they do not fall by more than
// 5% from the first to the last; one pair within 5% is not enough.
func TestFlatCPUPerPage(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		flat bool
		why  string
	}{
		{[]float64{7.40, 3.96, 3.19, 2.50, 1.85}, false, "the last session's recommend warm-up, still falling"},
		{[]float64{6.46, 4.58, 3.98, 2.98, 2.98}, false, "one pair within 5% while the trend fell"},
		{[]float64{2.0, 1.95, 1.9}, false, "each within 5% of the mean but 5.1% down from the first to the last"},
		{[]float64{2.0, 1.98, 2.01}, true, "flat"},
		{[]float64{3.1, 2.1, 1.95, 2.05}, true, "noise around 2 after a fall"},
		{[]float64{2.0, 2.0}, false, "fewer than three trials"},
		{[]float64{2.0, 0, 2.0}, false, "a trial without pages"},
		{nil, false, "none"},
	} {
		assert.Equal(t, c.flat, flat(c.xs), "%v: %s", c.xs, c.why)
	}
}

// fakeTestbed writes a testbed.sh and a softalloc that log their arguments,
// in order, to one file; the softalloc answers simulate with the rows of
// answers in turn (the app's CPU at a 0.1-core cap and the pages/s), or
// fails where an answer is "fail". The run directory holds the caps up set.
func fakeTestbed(t *testing.T, answers ...string) (o options, log string) {
	t.Helper()
	dir := t.TempDir()
	log = filepath.Join(dir, "log")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "tb", "run"), 0o755))
	for tier, c := range map[string]string{"web": "0.5", "app": "0.1", "db": "0.6"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "tb", "run", "cap-"+tier), []byte(c+"\n"), 0o644))
	}
	var rows []string
	for _, a := range answers {
		if a == "fail" {
			rows = append(rows, a)
			continue
		}
		var cpu, tput float64
		_, err := fmt.Sscanf(a, "%g %g", &cpu, &tput)
		require.NoError(t, err)
		rows = append(rows, fmt.Sprintf(`[{"users":1,"throughput":%g,"servers":[{"name":"app-1","cpu":%g}]}]`, tput, cpu))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "answers"), []byte(strings.Join(rows, "\n")+"\n"), 0o644))
	tb := filepath.Join(dir, "testbed.sh")
	require.NoError(t, os.WriteFile(tb, []byte(fmt.Sprintf("#!/bin/sh\necho \"testbed.sh $*\" >>%s\n", log)), 0o755))
	bin := filepath.Join(dir, "softalloc")
	require.NoError(t, os.WriteFile(bin, []byte(fmt.Sprintf(`#!/bin/sh
echo "softalloc $1 $*" >>%[1]s
n=$(( $(cat %[2]s/count 2>/dev/null || echo 0) + 1 ))
echo $n >%[2]s/count
a=$(sed -n "${n}p" %[2]s/answers)
if [ "$a" = fail ] || [ -z "$a" ]; then echo "a trial failed" >&2; exit 1; fi
echo "$a"
`, log, dir)), 0o755))
	return options{bin: bin, testbed: tb, tbDir: filepath.Join(dir, "tb"), hot: 90 * time.Second, hotUsers: 150, hotCap: "max",
		warm: 20 * time.Second, warmTrials: 6}, log
}

func logLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// The warm-up lifts the app tier's cap for one trial at a high load (the
// JIT compiles with a full core), puts back the caps the testbed had, then
// runs trials under the cap until the CPU per page is flat.
func TestWarmUpLiftsTheAppsCapThenWaitsForAFlatCPUPerPage(t *testing.T) {
	// CPU per page: 1000 * 0.1 * cpu / pages/s: 2.5, 2.0, 1.98, 2.01 ms.
	o, log := fakeTestbed(t, "0.5 200", "1 40", "0.8 40", "0.792 40", "0.804 40", "0.8 40")
	c := config{Name: "probe", Deployment: "d.yaml", Alloc: "web.threads=100,app.permits=20,app.connections=10"}
	w, err := o.warmUp("virtual, before recommend", c, 40)
	require.NoError(t, err)
	lines := logLines(t, log)
	require.Len(t, lines, 7, "%q", lines)
	assert.Equal(t, "testbed.sh caps web=0.5 app=max db=0.6", lines[0])
	assert.Contains(t, lines[1], "softalloc simulate")
	assert.Contains(t, lines[1], "--users 150")
	assert.Contains(t, lines[1], "--runtime 1m30s")
	assert.Equal(t, "testbed.sh caps web=0.5 app=0.1 db=0.6", lines[2], "the testbed's own caps back before any trial under the cap")
	for _, l := range lines[3:] {
		assert.Contains(t, l, "--users 40")
		assert.Contains(t, l, "--runtime 20s")
	}
	assert.Equal(t, "virtual, before recommend", w.JVM)
	assert.Equal(t, "web=0.5 app=0.1 db=0.6", w.Caps)
	assert.Equal(t, 150, w.HotUsers)
	assert.Equal(t, 90.0, w.HotSeconds)
	assert.InDelta(t, 200, w.HotThroughput, 1e-9)
	assert.Equal(t, 40, w.Users)
	require.Len(t, w.CPUPerPage, 4, "stops at the first three flat trials")
	assert.InDelta(t, 2.5, w.CPUPerPage[0], 1e-9)
	assert.InDelta(t, 2.01, w.CPUPerPage[3], 1e-9)
	assert.True(t, w.Settled)
	assert.Positive(t, w.Seconds)
}

// A trial that fails with the cap lifted still puts the caps back: the
// measurement must not go on (or the testbed stay) with the app uncapped.
func TestWarmUpRestoresTheCapWhenTheLiftedTrialFails(t *testing.T) {
	o, log := fakeTestbed(t, "fail")
	_, err := o.warmUp("platform", config{Deployment: "d.yaml", Alloc: "100-19-19"}, 40)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "with the app's cap lifted")
	lines := logLines(t, log)
	require.Len(t, lines, 3, "%q", lines)
	assert.Equal(t, "testbed.sh caps web=0.5 app=max db=0.6", lines[0])
	assert.Equal(t, "testbed.sh caps web=0.5 app=0.1 db=0.6", lines[2])
}

// Without the testbed's caps (not up, or another directory) nothing is
// lifted, and the error names the file.
func TestWarmUpNeedsTheTestbedsCaps(t *testing.T) {
	o, log := fakeTestbed(t, "0.5 200")
	require.NoError(t, os.Remove(filepath.Join(o.tbDir, "run", "cap-app")))
	_, err := o.warmUp("platform", config{}, 40)
	require.Error(t, err)
	assert.Contains(t, err.Error(), filepath.Join(o.tbDir, "run", "cap-app"))
	_, statErr := os.Stat(log)
	assert.True(t, os.IsNotExist(statErr), "neither the caps nor a trial ran")
}

// A CPU per page that keeps falling under the cap is reported as such after
// -warm-trials, not taken as warm.
func TestWarmUpSaysWhenTheCPUPerPageDidNotSettle(t *testing.T) {
	o, _ := fakeTestbed(t, "0.5 200", "1 40", "0.9 40", "0.8 40", "0.7 40", "0.6 40", "0.5 40")
	w, err := o.warmUp("virtual", config{}, 40)
	require.NoError(t, err)
	assert.Len(t, w.CPUPerPage, 6)
	assert.False(t, w.Settled)
}

// A failing trial under the cap is an error, after the caps were put back.
func TestWarmUpFailsOnATrialUnderTheCap(t *testing.T) {
	o, log := fakeTestbed(t, "0.5 200", "1 40", "fail")
	_, err := o.warmUp("virtual", config{}, 40)
	require.Error(t, err)
	lines := logLines(t, log)
	assert.Equal(t, "testbed.sh caps web=0.5 app=0.1 db=0.6", lines[2])
	assert.NotContains(t, lines[len(lines)-1], "caps", "no caps after the lifted trial's restore")
}

// The repetitions run in opposite orders (configurations and workloads), the
// first starting with the JVM that is up (its variant and HikariCP's
// connectionTimeout), so that a JVM is started and warmed only where the
// next configuration needs another.
func TestRunOrderAlternatesStartingWithTheRunningJVM(t *testing.T) {
	cs := []config{{Name: "p", Threads: "platform", ConnTO: "30s"}, {Name: "v10", Threads: "virtual", ConnTO: "30s"},
		{Name: "vN", Threads: "virtual", ConnTO: "30s"}, {Name: "lim", Threads: "virtual", ConnTO: "2s"}}
	assert.Equal(t, "virtual threads, connectionTimeout 2s", cs[3].jvm())
	got := runOrder(cs, []int{30, 60, 90}, 2, cs[3].jvm())
	want := []step{{3, 1, []int{90, 60, 30}}, {2, 1, []int{90, 60, 30}}, {1, 1, []int{90, 60, 30}}, {0, 1, []int{90, 60, 30}},
		{0, 2, []int{30, 60, 90}}, {1, 2, []int{30, 60, 90}}, {2, 2, []int{30, 60, 90}}, {3, 2, []int{30, 60, 90}}}
	assert.Equal(t, want, got)
	got = runOrder(cs, []int{30, 60}, 3, cs[0].jvm())
	require.Len(t, got, 12)
	assert.Equal(t, step{0, 1, []int{30, 60}}, got[0])
	assert.Equal(t, step{3, 2, []int{60, 30}}, got[4])
	assert.Equal(t, step{0, 3, []int{30, 60}}, got[8])
}
