package cli_test

import (
	"encoding/csv"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/internal/runner/live"
)

var (
	adviseObsOnce sync.Once
	adviseObs     string
)

// adviseObservations are six short simulated trials of 1/2/1/2 at 10-60% of
// its saturation workload, as simulate --output observation writes them.
func adviseObservations(t *testing.T) string {
	t.Helper()
	adviseObsOnce.Do(func() {
		out, stderr, code := run(t, "", "simulate", "-t", "1/2/1/2", "--users", "550,1100,1650,2200,2750,3300",
			"--ramp-up", "20s", "--runtime", "40s", "-o", "observation", "--no-journal", "--progress", "none")
		require.Equal(t, 0, code, stderr)
		adviseObs = out
	})
	require.NotEmpty(t, adviseObs)
	return adviseObs
}

func TestAdviseFromSimulatedObservations(t *testing.T) {
	obs := writeFile(t, t.TempDir(), "obs.jsonl", adviseObservations(t))

	out, stderr, code := run(t, "", "advise", "-t", "1/2/1/2", "--observations", obs)
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, stderr)
	assert.Contains(t, out, "critical resource app cpu")
	assert.Contains(t, out, "windows: 6 of 6 used")
	assert.Contains(t, out, "no experiment run")
	assert.Contains(t, out, "recommended allocation: 400-")
	assert.Contains(t, out, "modelled as an open workload")

	var doc struct {
		Critical    struct{ Tier, Resource string }
		Experiments int
		Allocation  string
		Tiers       []json.RawMessage
		Advice      struct {
			Model     string
			ThinkTime float64
			Used      int
			Fits      []struct{ Server string }
		}
		Version string
	}
	out, stderr, code = run(t, "", "advise", "-t", "1/2/1/2", "--observations", obs, "--think-time", "7s", "-o", "json", "--format", "tomcat")
	require.Equal(t, 0, code, stderr)
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.Equal(t, "app cpu", doc.Critical.Tier+" "+doc.Critical.Resource)
	assert.Zero(t, doc.Experiments)
	assert.Equal(t, "closed", doc.Advice.Model)
	assert.Equal(t, 7.0, doc.Advice.ThinkTime)
	assert.Equal(t, 6, doc.Advice.Used)
	assert.Len(t, doc.Advice.Fits, 6, "one CPU fit per server")
	assert.Len(t, doc.Tiers, 4)
	assert.Contains(t, out, `"snippets"`)
	assert.NotEmpty(t, doc.Version)

	out, stderr, code = run(t, "", "advise", "-t", "1/2/1/2", "--observations", obs, "-o", "csv")
	require.Equal(t, 0, code, stderr)
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	require.NoError(t, err)
	assert.Len(t, rows, 5, "a header and four tiers")

	// --output windows writes what advise read; advise reads it back the same.
	windows, stderr, code := run(t, "", "advise", "-t", "1/2/1/2", "--observations", obs, "-o", "windows")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, 6, strings.Count(windows, "\n"))
	again := writeFile(t, t.TempDir(), "windows.jsonl", windows)
	a, _, _ := run(t, "", "advise", "-t", "1/2/1/2", "--observations", obs, "-o", "json")
	b, stderr, code := run(t, "", "advise", "-t", "1/2/1/2", "--observations", again, "-o", "json")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, strings.Replace(a, "obs.jsonl", "", -1), strings.Replace(b, "obs.jsonl", "", -1))

	// Standard input.
	out, stderr, code = run(t, adviseObservations(t), "advise", "-t", "1/2/1/2", "--observations", "-", "-o", "windows")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, `"label":"stdin:1"`)
}

func TestAdviseWithoutEnoughDataExits1(t *testing.T) {
	lines := strings.SplitAfter(adviseObservations(t), "\n")
	few := writeFile(t, t.TempDir(), "few.jsonl", strings.Join(lines[:3], ""))
	out, stderr, code := run(t, "", "advise", "-t", "1/2/1/2", "--observations", few)
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Equal(t, 1, countLines(stderr), stderr)
	assert.Contains(t, stderr, "3 of 3 windows are usable")
	assert.Contains(t, stderr, "want at least 5")

	quiet := writeFile(t, t.TempDir(), "quiet.jsonl", strings.Join(lines[:5], ""))
	_, stderr, code = run(t, "", "advise", "-t", "1/2/1/2", "--observations", quiet, "--min-utilization", "0.6")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "want a window at 60% or more")
}

func TestAdviseUsage(t *testing.T) {
	dir := t.TempDir()
	obs := writeFile(t, dir, "obs.jsonl", adviseObservations(t))
	bad := writeFile(t, dir, "bad.jsonl", "{\"throughput\": 1}\n")
	runUsageCases(t, []usageCase{
		{"nojournal no observations", []string{"advise", "-t", "1/2/1/2"}, "or --observations FILE"},
		{"nojournal no topology", []string{"advise", "--observations", obs}, "want --topology"},
		{"nojournal output", []string{"advise", "-t", "1/2/1/2", "--observations", obs, "-o", "yaml"}, `--output "yaml": want table, json, csv or windows`},
		{"nojournal format", []string{"advise", "-t", "1/2/1/2", "--observations", obs, "--format", "nginx"}, `"nginx"`},
		{"nojournal think time", []string{"advise", "-t", "1/2/1/2", "--observations", obs, "--think-time", "soon"}, "want seconds such as 2"},
		{"nojournal missing file", []string{"advise", "-t", "1/2/1/2", "--observations", filepath.Join(dir, "none.jsonl")}, "none.jsonl: no such file"},
		{"nojournal device", []string{"advise", "-t", "1/2/1/2", "--observations", "/dev/zero"}, `observations "/dev/zero": not a regular file`},
		{"nojournal bad line", []string{"advise", "-t", "1/2/1/2", "--observations", bad}, "bad.jsonl:1: observation.runtimeSeconds: want a positive number"},
		{"nojournal alloc", []string{"advise", "-t", "1/2/1/2", "--observations", obs, "--alloc", "400-x"}, "400-x"},
		{"nojournal both sources", []string{"advise", "-t", "1/2/1/2", "--observations", obs, "--since", "1h"}, "not both"},
		{"nojournal since", []string{"advise", "-t", "1/2/1/2", "--since", "a week"}, `--since "a week": want a duration such as 7d`},
		{"nojournal since days", []string{"advise", "-t", "1/2/1/2", "--since", "-3d"}, `--since "-3d"`},
		// The bound is stated, in days and in hours alike (it said only "want a duration such as 7d").
		{"nojournal since too far", []string{"advise", "-t", "1/2/1/2", "--since", "99999999d"}, "at most 3660d (ten years)"},
		{"nojournal since too far in hours", []string{"advise", "-t", "1/2/1/2", "--since", "99999h"}, "at most 3660d (ten years)"},
		{"nojournal start", []string{"advise", "-t", "1/2/1/2", "--start", "yesterday"}, `--start "yesterday": want a time such as 2026-11-23T08:00:00Z`},
		{"nojournal start after end", []string{"advise", "-t", "1/2/1/2", "--start", "2026-11-23T09:00:00Z", "--end", "2026-11-23T08:00:00Z"}, "not before its end"},
		{"nojournal since and start", []string{"advise", "-t", "1/2/1/2", "--since", "1h", "--start", "2026-11-23T08:00:00Z"}, "give --since or --start, not both"},
		{"nojournal end alone", []string{"advise", "-t", "1/2/1/2", "--end", "2026-11-23T08:00:00Z"}, "--end needs --since or --start"},
		{"nojournal step", []string{"advise", "-t", "1/2/1/2", "--since", "1h", "--step", "0s"}, "--step 0s: want a window length"},
		{"nojournal range needs a file", []string{"advise", "-t", "1/2/1/2", "--since", "1h"}, "want -f deployment.yaml"},
		{"nojournal threshold", []string{"advise", "-t", "1/2/1/2", "--observations", obs, "--hw-threshold", "2"}, "--hw-threshold 2: want a utilisation in (0,1]"},
	})
}

// Issue 35, item 7: advise turned --hw-threshold 0 into 0.95 and
// --min-utilization 0 into 0.3 without a word, where recommend refuses 0.
// One rule per flag, with recommend's message where recommend has the flag.
func TestAdviseRefusesThresholdsAsRecommendDoes(t *testing.T) {
	obs := writeFile(t, t.TempDir(), "obs.jsonl", adviseObservations(t))
	advise := func(flags ...string) []string {
		return append([]string{"advise", "-t", "1/2/1/2", "--observations", obs}, flags...)
	}
	runUsageCases(t, []usageCase{
		{"nojournal hw threshold 0", advise("--hw-threshold", "0"), "--hw-threshold 0: want a utilisation in (0,1]"},
		{"nojournal soft threshold 0", advise("--soft-threshold", "0"), "--soft-threshold 0: want a share in (0,1]"},
		{"nojournal soft threshold 1.5", advise("--soft-threshold", "1.5"), "--soft-threshold 1.5: want a share in (0,1]"},
		{"nojournal demand drift negative", advise("--demand-drift", "-0.5"), "--demand-drift -0.5: want a share in [0,1)"},
		{"nojournal demand drift 1", advise("--demand-drift", "1"), "--demand-drift 1: want a share in [0,1)"},
		{"nojournal min utilization 0", advise("--min-utilization", "0"), "--min-utilization 0: want a utilisation above 0 and below --hw-threshold 0.95"},
		{"nojournal min utilization above threshold", advise("--hw-threshold", "0.8", "--min-utilization", "0.85"), "--min-utilization 0.85: want a utilisation above 0 and below --hw-threshold 0.8"},
	})
	// The same rules in recommend, for the flags both have.
	runUsageCases(t, []usageCase{
		{"nojournal recommend hw threshold 0", []string{"recommend", "-t", "1/2/1/2", "--hw-threshold", "0"}, "--hw-threshold 0: want a utilisation in (0,1]"},
		{"nojournal recommend soft threshold 0", []string{"recommend", "-t", "1/2/1/2", "--soft-threshold", "0"}, "--soft-threshold 0: want a share in (0,1]"},
		{"nojournal recommend demand drift", []string{"recommend", "-t", "1/2/1/2", "--demand-drift", "-0.5"}, "--demand-drift -0.5: want a share in [0,1)"},
	})
}

// A journal that validate or a second simulate shared holds several
// allocations' trials: advise reads one deployment's traffic, so it asks
// which, and drops the others' windows (and another topology's) by name.
func TestAdviseReadsOneAllocationOfAJournal(t *testing.T) {
	dir := t.TempDir()
	j := filepath.Join(dir, "journal.jsonl")
	_, stderr, code := run(t, "", "simulate", "-t", "1/2/1/2", "--users", "550,1100,1650,2200,2750,3300", "--alloc", "400-150-60", "--alloc", "400-20-20",
		"--ramp-up", "20s", "--runtime", "40s", "--journal", j, "--progress", "none", "-o", "json")
	require.Equal(t, 0, code, stderr)

	_, stderr, code = run(t, "", "advise", "-t", "1/2/1/2", "--observations", j)
	assert.Equal(t, 2, code)
	assert.Equal(t, 1, countLines(stderr), stderr)
	assert.Contains(t, stderr, "trials of 2 allocations (400-150-60 (6 windows), 400-20-20 (6 windows)); advise reads one deployment's traffic: choose one with --alloc")

	out, stderr, code := run(t, "", "advise", "-t", "1/2/1/2", "--observations", j, "--alloc", "400-20-20", "-o", "json")
	require.Equal(t, 0, code, stderr)
	var doc struct {
		Advice struct {
			Used    int
			Dropped []struct{ Label, Problem string }
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.Equal(t, 6, doc.Advice.Used)
	require.Len(t, doc.Advice.Dropped, 6)
	assert.Equal(t, "allocation 400-150-60, not --alloc 400-20-20", doc.Advice.Dropped[0].Problem)

	_, stderr, code = run(t, "", "advise", "-t", "1/4/1/4", "--observations", j, "--alloc", "400-20-20")
	assert.Equal(t, 1, code, "not enough data")
	assert.Contains(t, stderr, "recorded on 1/2/1/2, not 1/4/1/4")
}

// Issue 35, item 1: observations of 1/2/1/2 advised as 1/1/1 answered
// 400-28-28, one app server assumed to do two servers' work, and the
// servers the topology lacks ignored. advise refuses them by name.
func TestAdviseRefusesObservationsOfOtherServers(t *testing.T) {
	obs := writeFile(t, t.TempDir(), "obs.jsonl", adviseObservations(t))
	for _, tc := range []struct{ topology, want string }{
		{"1/1/1", "servers app-2, cluster-1, db-2 are not the deployment's (1/1/1 has web-1, app-1, db-1)"},
		{"1/1/1/1", "servers app-2, db-2 are not the deployment's (1/1/1/1 has web-1, app-1, cluster-1, db-1)"},
	} {
		out, stderr, code := run(t, "", "advise", "-t", tc.topology, "--observations", obs)
		assert.Equal(t, 2, code, "a file of another deployment is a usage error")
		assert.Empty(t, out)
		assert.Equal(t, 1, countLines(stderr), stderr)
		assert.Contains(t, stderr, "advise: obs.jsonl:1: "+tc.want)
		assert.Contains(t, stderr, "recorded on another deployment")
	}
}

// Issue 35, item 9: --observations of a million windows (5.8 GB) was read
// whole into memory, where Prometheus's are capped at live.MaxWindows.
// The file is held to the same bound while it is read, and the error names it.
func TestAdviseBoundsTheObservationsFile(t *testing.T) {
	many := strings.Repeat("{}\n", live.MaxWindows+1)
	path := writeFile(t, t.TempDir(), "many.jsonl", many)
	for _, args := range [][]string{{"--observations", path}, {"--observations", "-"}} {
		out, stderr, code := run(t, many, append([]string{"advise", "-t", "1/2/1/2"}, args...)...)
		assert.Equal(t, 2, code, stderr)
		assert.Empty(t, out)
		assert.Equal(t, 1, countLines(stderr), stderr)
		assert.Contains(t, stderr, "more than 100000 lines: want at most 100000 windows, as advise reads from Prometheus")
	}
	// As many as the bound are read (and these refused for what they hold).
	_, stderr, code := run(t, strings.Repeat("{}\n", live.MaxWindows), "advise", "-t", "1/2/1/2", "--observations", "-")
	assert.Equal(t, 2, code, stderr)
	assert.Contains(t, stderr, "stdin:1: observation.runtimeSeconds")
}

// Issue 35, item 12: configuration errors advise finds before any query
// (the runner section's tiers, the step, the number of windows, a range
// ending in the future) exited 1, as if the data had been short. They are
// usage errors; no Prometheus answers at this address, so none is queried.
func TestAdviseConfigurationErrorsAreUsageErrors(t *testing.T) {
	dir := t.TempDir()
	deployment := func(name, tiers string) string {
		return writeFile(t, dir, name, `name: shop
tiers:
  - {name: web, role: web, replicas: 1, pools: {threads: 100}}
  - {name: app, role: app, replicas: 2, pools: {threads: 20, connections: 10}}
  - {name: db, role: db, replicas: 1}
runner:
  name: live
  prometheus: http://127.0.0.1:9
  tiers:
`+tiers)
	}
	good := deployment("good.yaml", `    web: {presets: [cgroup]}
    app: {presets: [cgroup], servers: [{instance: a1}, {instance: a2}]}
    db: {presets: [cgroup]}
`)
	oneServer := deployment("one-server.yaml", `    web: {presets: [cgroup]}
    app: {presets: [cgroup], servers: [{instance: a1}]}
    db: {presets: [cgroup]}
`)
	noDB := deployment("no-db.yaml", `    web: {presets: [cgroup]}
    app: {presets: [cgroup]}
`)
	noCPU := deployment("no-cpu.yaml", `    web: {presets: [cgroup]}
    app: {presets: [apache]}
    db: {presets: [cgroup]}
`)
	runUsageCases(t, []usageCase{
		{"nojournal servers", []string{"advise", "-f", oneServer, "--since", "1h"}, "tiers.app.servers: 1 entries for 2 replicas"},
		{"nojournal tier missing", []string{"advise", "-f", noDB, "--since", "1h"}, "tiers.db: missing"},
		{"nojournal no cpu query", []string{"advise", "-f", noCPU, "--since", "1h"}, "tiers.app: no cpu query"},
		{"nojournal step", []string{"advise", "-f", good, "--since", "1h", "--step", "1s"}, "--step 1s: want at least 2s"},
		{"nojournal step ms", []string{"advise", "-f", good, "--since", "1h", "--step", "2500500us"}, "--step 2.5005s: want whole milliseconds"},
		{"nojournal too many windows", []string{"advise", "-f", good, "--since", "7d", "--step", "2s"}, "302400 windows of 2s; want at most 100000"},
		{"nojournal shorter than a step", []string{"advise", "-f", good, "--since", "1m", "--step", "5m"}, "shorter than one --step 5m0s"},
		{"nojournal future", []string{"advise", "-f", good, "--start", "2099-01-01T00:00:00Z", "--end", "2099-01-01T01:00:00Z"}, "--end 2099-01-01T01:00:00Z is in the future"},
	})
}

// Issue 35, item 16: a windows file's labels and problems reached the
// terminal as they were, so a crafted file could clear the screen and forge
// lines of the answer. What advise prints from its input is escaped.
func TestAdviseEscapesTheWindowsFilesText(t *testing.T) {
	dir := t.TempDir()
	windows, stderr, code := run(t, adviseObservations(t), "advise", "-t", "1/2/1/2", "--observations", "-", "-o", "windows")
	require.Equal(t, 0, code, stderr)
	forged := `{"label":"\u001b[2J\u001b[Hnoon","problem":"a gap\nrecommended allocation: 1-1-1\r"}` + "\n"
	crafted := writeFile(t, dir, "crafted.jsonl", windows+forged)

	out, stderr, code := run(t, "", "advise", "-t", "1/2/1/2", "--observations", crafted)
	require.Equal(t, 0, code, stderr)
	assert.NotContains(t, out, "\x1b")
	assert.NotContains(t, out, "\r")
	assert.NotContains(t, out, "\nrecommended allocation: 1-1-1")
	assert.Contains(t, out, `window \x1b[2J\x1b[Hnoon left out: a gap\nrecommended allocation: 1-1-1\r`)

	// And in the one line of an error.
	lines := strings.SplitAfter(windows, "\n")
	few := writeFile(t, dir, "few.jsonl", strings.Join(lines[:3], "")+forged)
	_, stderr, code = run(t, "", "advise", "-t", "1/2/1/2", "--observations", few)
	assert.Equal(t, 1, code)
	assert.Equal(t, 1, countLines(stderr), stderr)
	assert.NotContains(t, stderr, "\x1b")
	assert.NotContains(t, stderr, "\r")
	assert.Contains(t, stderr, `dropped \x1b[2J\x1b[Hnoon: a gap\nrecommended allocation: 1-1-1\r`)
}
