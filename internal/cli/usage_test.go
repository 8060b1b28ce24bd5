package cli_test

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// usageCase is a command line that must be refused with exit 2 and one line
// on stderr holding msg, before any experiment: nothing on stdout, no journal.
type usageCase struct {
	name string
	args []string
	msg  string
}

func runUsageCases(t *testing.T, cases []usageCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := filepath.Join(t.TempDir(), "journal.jsonl")
			args := tc.args
			if !strings.HasPrefix(tc.name, "nojournal") {
				args = append(append([]string(nil), args...), "--journal", j)
			}
			stdout, stderr, code := run(t, "", args...)
			assert.Equal(t, 2, code, stderr)
			assert.Equal(t, 1, countLines(stderr), stderr)
			assert.Contains(t, stderr, tc.msg)
			assert.Empty(t, stdout)
			assert.NoFileExists(t, j, "refused before the journal opened")
		})
	}
}

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	return p
}

// check's exit 1 means capacity regressed: configuration it cannot read is
// a usage error, as in every other command.
func TestConfigurationErrorsAreUsageErrors(t *testing.T) {
	dir := t.TempDir()
	torn := writeFile(t, dir, "torn.jsonl", "{\"runner\": \"sim\"}\nnot json\n{}\n")
	// A reference's grids: a bad line is named; an adaptive evaluation's
	// grids are no ground truth.
	reference := func(name, precision, grids string) string {
		d := filepath.Join(dir, name)
		require.NoError(t, os.Mkdir(d, 0o755))
		writeFile(t, d, "evaluation-grids.jsonl", grids)
		return writeFile(t, d, "evaluation.json", `{"config":{"topologies":["1/2/1/2"],"seeds":[1],"runtimeSeconds":120,"warmUpSeconds":60,`+
			`"precision":`+precision+`,"slas":[0.2]},"results":[{"topology":"1/2/1/2","seed":1,"campaigns":[]}]}`)
	}
	line := `{"topology":"1/2/1/2","seed":1,"allocation":"%s","workloads":[5000],"slas":[0.2],"goodput":[[1]],"halfWidth":[[0]]}` + "\n"
	badGrid := reference("bad", "0", fmt.Sprintf(line, "400-15"))
	adaptiveGrid := reference("adaptive", "0.02", fmt.Sprintf(line, "400-15-15"))
	check := []string{"check", "--min-goodput", "1"}
	runUsageCases(t, []usageCase{
		{"runner", append(check, "--topology", "1/2/1/2", "--runner", "foo"), `runner "foo": want one of`},
		{"model", append(check, "--topology", "1/2/1/2", "--model", "/nonexist"), "/nonexist"},
		{"replay without campaign", append(check, "--topology", "1/2/1/2", "--runner", "replay"), "want --campaign FILE"},
		{"deployment file", append(check, "-f", "/nonexist"), `load deployment "/nonexist"`},
		{"nojournal from-journal", append(check, "--from-journal", "/nonexist.jsonl"), `--from-journal: journal "/nonexist.jsonl": open /nonexist.jsonl`},
		{"nojournal from-journal bad line", append(check, "--from-journal", torn), `--from-journal: journal "` + torn + `": line 1: experiment: want a topology`},
		{"recommend model", []string{"recommend", "--topology", "1/2/1/2", "--model", "/nonexist"}, "/nonexist"},
		{"nojournal evaluate model", []string{"evaluate", "--model", "/nonexist", "--out", dir}, "--model: runner sim: load model"},
		{"nojournal evaluate reference grids", []string{"evaluate", "--reference", badGrid, "--out", dir},
			"--reference: " + filepath.Join(dir, "bad", "evaluation-grids.jsonl") + " line 1: "},
		{"nojournal evaluate adaptive reference", []string{"evaluate", "--reference", adaptiveGrid, "--out", dir},
			"an adaptive evaluation; its grids are no ground truth"},
	})
}

func TestOutputPathsAreCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nonexist", "d")
	svgDir := filepath.Join(dir, "d.svg")
	require.NoError(t, os.Mkdir(svgDir, 0o755))
	sim := []string{"simulate", "--topology", "1/2/1/2", "--users", "100", "--ramp-up", "1s", "--runtime", "2s"}
	validate := []string{"validate", "--topology", "1/2/1/2", "--recommended", "400-15-15", "--users", "5000", "--ramp-up", "1s", "--runtime", "2s"}
	runUsageCases(t, []usageCase{
		{"plot extension", append(validate, "--plot", "x.txt"), `--plot "x.txt": want a .svg, .png or .pdf file`},
		{"plot directory missing", append(validate, "--plot", filepath.Join(missing, "x.svg")), `directory "` + missing + `" does not exist`},
		{"plot is a directory", append(validate, "--plot", svgDir), `--plot "` + svgDir + `": is a directory; want a file`},
		{"metrics file directory missing", append(sim, "--metrics-file", filepath.Join(missing, "x.prom")), `--metrics-file "` + filepath.Join(missing, "x.prom") + `": directory`},
		{"metrics file is a directory", append(sim, "--metrics-file", dir), "is a directory"},
		{"check metrics file", []string{"check", "--topology", "1/2/1/2", "--min-goodput", "1", "--metrics-file", filepath.Join(missing, "c.prom")}, "--metrics-file"},
		{"nojournal degradation plot", []string{"degradation", "--plot", "scheme.jpg"}, `--plot "scheme.jpg": want a .svg, .png or .pdf file`},
		{"nojournal evaluate out", []string{"evaluate", "--out", filepath.Join(missing, "eval")}, `--out "` + filepath.Join(missing, "eval") + `": directory "` + missing + `" does not exist`},
		// Issue 25: these failed at the end of the campaign, with exit 1.
		{"metrics file in /proc", append(sim, "--metrics-file", "/proc/x.prom"), `--metrics-file "/proc/x.prom": cannot create files in /proc`},
		{"metrics file is a device", append(sim, "--metrics-file", "/dev/null"), `--metrics-file "/dev/null": not a regular file (a device)`},
		{"pushgateway without a host", append(sim, "--pushgateway", "http://"), `--pushgateway "http://": want the Pushgateway's URL`},
		{"pushgateway not a URL", append(sim, "--pushgateway", "pushgateway:9091"), `--pushgateway "pushgateway:9091": want the Pushgateway's URL`},
		{"empty job", append(sim, "--pushgateway", "http://127.0.0.1:9091", "--job", " "), "--job: want a job name"},
	})
}

// Unwritable directories can only be tested by a user the kernel says no to.
func TestOutputDirectoryNotWritable(t *testing.T) {
	ro := filepath.Join(t.TempDir(), "ro")
	require.NoError(t, os.Mkdir(ro, 0o555))
	if f, err := os.Create(filepath.Join(ro, "probe")); err == nil {
		f.Close()
		t.Skip("SKIPPED: this user can write a 0555 directory (root); the not-writable check did not run")
	}
	runUsageCases(t, []usageCase{
		{"metrics file", []string{"simulate", "--topology", "1/2/1/2", "--users", "100", "--metrics-file", filepath.Join(ro, "x.prom")}, "is not writable"},
	})
}

func TestValidationNamesTheBadFlag(t *testing.T) {
	fc := []string{"find-critical", "--topology", "1/2/1/2", "--no-journal"}
	rec := []string{"recommend", "--topology", "1/2/1/2", "--no-journal"}
	for _, tc := range []struct {
		args []string
		line string
	}{
		{append(fc, "--step", "-500"), "--step: want a positive number of users, got -500"},
		{append(rec, "--small-step", "0"), "--small-step: want a positive number of users, got 0"},
		{append(fc, "--max-workload", "-1"), "--max-workload: want a number of users in 1..1000000, got -1"},
		{append(rec, "--scan-span", "0"), "--scan-span: want a positive number of users, got 0"},
		{append(fc, "--sla", "-1s"), "--sla: want a duration > 0, got -1s"},
		{append(rec, "--knee-threshold", "-1s"), "--knee-threshold: want a duration >= 0, got -1s"},
		{append(rec, "--knee-factor", "0"), "--knee-factor: want a number > 0, got 0"},
		// Issue 25: 2500000h ran, and timed out after -2374095h on the exec runner.
		{append(fc, "--runtime", "2500000h"), "--runtime 2500000h0m0s: want at most 24h0m0s for one phase of a trial"},
		{append(fc, "--ramp-up", "25h"), "--ramp-up 25h0m0s: want at most 24h0m0s for one phase of a trial"},
		{append(fc, "--ramp-down", "100h"), "--ramp-down 100h0m0s: want at most 24h0m0s for one phase of a trial"},
		{append(fc, "--max-workload", "10000000"), "--max-workload: want a number of users in 1..1000000, got 10000000"},
		{[]string{"simulate", "-t", "1/2/1/2", "--users", "10000000", "--no-journal"}, `--users "10000000": "10000000" is not a number of users in 1..1000000`},
		{append(fc, "--runtime", "0s"), "--runtime: want a duration > 0, got 0s"},
		{append(fc, "--ramp-up", "-1s"), "--ramp-up: want a duration >= 0, got -1s"},
		{append(fc, "--ramp-down", "-1s"), "--ramp-down: want a duration >= 0, got -1s"},
		{[]string{"evaluate", "--runtime", "-3s"}, "--runtime: want at least 1s on the simulator (shorter windows measure too few pages), got -3s"},
		{[]string{"evaluate", "--ramp-up", "-1s"}, "--ramp-up: want a duration >= 0, got -1s"},
	} {
		stdout, stderr, code := run(t, "", tc.args...)
		assert.Equal(t, 2, code, "%v", tc.args)
		assert.Equal(t, "softalloc: "+tc.line+"\n", stderr)
		assert.Empty(t, stdout)
	}
}

func TestCheckRefusesCriticalAndBaselineUpFront(t *testing.T) {
	dir := t.TempDir()
	base := writeFile(t, dir, "capacity.json", `{"capacity": {"topology": "1/4/1/4", "runner": "sim", "slaSeconds": 2, "maxGoodput": 800, "maxThroughput": 900}}`)
	// A wrong type inside check's whole output once read as zeros from the outer object.
	mistyped := writeFile(t, dir, "mistyped.json", `{"capacity": {"topology": "1/2/1/2", "slaSeconds": 2, "maxGoodput": "x", "maxThroughput": 900}, "ok": true}`)
	check := []string{"check", "--topology", "1/2/1/2"}
	runUsageCases(t, []usageCase{
		{"unknown tier", append(check, "--critical", "foo/bar"), `--critical "foo/bar": deployment "1/2/1/2" has no tier "foo"; its tiers are web, app, cluster, db`},
		{"no resource", append(check, "--critical", "app/"), `--critical "app/": want TIER/RESOURCE`},
		{"no tier", append(check, "--critical", "/cpu"), `--critical "/cpu": want TIER/RESOURCE`},
		{"two slashes", append(check, "--critical", "app/cpu/0"), `want TIER/RESOURCE`},
		{"baseline of another topology", append(check, "--baseline", base, "--max-regression", "5%"),
			`--baseline "` + base + `" was measured on deployment 1/4/1/4, this check runs on 1/2/1/2`},
		{"mistyped baseline", append(check, "--baseline", mistyped, "--max-regression", "5%"),
			`--baseline "` + mistyped + `": maxGoodput: want a number, got a JSON string`},
		{"baseline at another SLA", append(check, "--baseline", base, "--max-regression", "5%", "--topology", "1/4/1/4", "--sla", "1s"),
			"measured at an SLA of 2 s, this check at 1 s"},
	})
}

// The simulator's chain rules are checked before the first experiment, and
// the error names the deployment file and where the pools came from.
func TestDeploymentCheckedBeforeTheFirstExperiment(t *testing.T) {
	dir := t.TempDir()
	const web = "  - {name: web, role: web, replicas: 1, pools: {threads: 400}}\n"
	const app = "  - {name: app, role: app, replicas: 2, pools: {threads: 10, connections: 5}}\n"
	const db = "  - {name: db, role: db, replicas: 2}\n"
	noPools := writeFile(t, dir, "nopools.yaml", "name: np\ntiers:\n"+web+"  - {name: app, role: app, replicas: 2}\n"+db)
	order := writeFile(t, dir, "order.yaml", "name: o\ntiers:\n"+app+web+db)
	noApp := writeFile(t, dir, "noapp.yaml", "name: na\ntiers:\n"+web+db)
	twoApps := writeFile(t, dir, "twoapps.yaml", "name: ta\ntiers:\n"+web+app+strings.Replace(app, "name: app", "name: app2", 1)+db)
	fromFile := func(f string) string {
		return `deployment file "` + f + `" (allocation: the file's pools) cannot run on the sim runner: `
	}
	runUsageCases(t, []usageCase{
		{"app without pools", []string{"find-critical", "-f", noPools}, fromFile(noPools) + `allocation["app"].threads: want a pool size >= 1, got 0`},
		{"wrong order", []string{"recommend", "-f", order}, fromFile(order) + `deployment.tiers[1] ("web"): role "web" after "app"`},
		{"no app tier", []string{"check", "--min-goodput", "1", "-f", noApp}, fromFile(noApp) + `deployment "na": no tier of role "app"`},
		{"two app tiers", []string{"validate", "-f", twoApps}, fromFile(twoApps) + `deployment.tiers[2] ("app2"): a second tier of role "app"`},
		{"simulate", []string{"simulate", "-f", noPools, "--users", "100"}, fromFile(noPools)},
		// --alloc cannot give a pool the file's tier lacks; the error names the file.
		{"alloc for a tier without pools", []string{"find-critical", "-f", noPools, "--alloc", "400-150-60"},
			`deployment file "` + noPools + `": allocation "400-150-60": tier "app": threads: set to 150, but the tier has no such pool`},
	})
}

func TestParallelIsValidatedEverywhere(t *testing.T) {
	for _, cmd := range [][]string{
		{"simulate", "--topology", "1/2/1/2", "--users", "100"},
		{"validate", "--topology", "1/2/1/2"},
		{"evaluate"},
		{"degradation"},
	} {
		for _, n := range []string{"0", "-3"} {
			stdout, stderr, code := run(t, "", append(cmd, "--parallel", n)...)
			assert.Equal(t, 2, code, "%v --parallel %s", cmd, n)
			assert.Equal(t, "softalloc: --parallel: want at least 1 trial at once, got "+n+"\n", stderr)
			assert.Empty(t, stdout)
		}
	}
}

func TestFlagNits(t *testing.T) {
	runUsageCases(t, []usageCase{
		{"nojournal seed", []string{"find-critical", "--topology", "1/2/1/2", "--seed", "abc"}, `softalloc: --seed: want a non-negative integer, got "abc"`},
		{"nojournal negative seed", []string{"simulate", "--seed", "-1"}, `--seed: want a non-negative integer, got "-1"`},
		{"nojournal duration", []string{"find-critical", "--runtime", "soon"}, `--runtime: want a duration such as 30s or 2m, got "soon"`},
		{"nojournal fresh and no-journal", []string{"find-critical", "--topology", "1/2/1/2", "--fresh", "--no-journal"}, "--fresh and --no-journal contradict"},
		{"nojournal pool 0", []string{"degradation", "--pool", "0"}, "--pool: want a pool size >= 1 (leave --pool out for the workload's), got 0"},
		{"nojournal duration 0", []string{"degradation", "--runtime", "0s"}, "--runtime: want a time > 0 (leave --runtime out for the workload's), got 0s"},
		{"runtime too short", []string{"simulate", "--topology", "1/2/1/2", "--users", "100", "--runtime", "1ns"}, "--runtime: want at least 1s on the simulator"},
		{"runtime just short", []string{"recommend", "--topology", "1/2/1/2", "--runtime", "999ms"}, "got 999ms"},
		{"topology as an argument", []string{"find-critical", "1/2/1/2"}, `softalloc: unexpected argument "1/2/1/2"; did you mean --topology 1/2/1/2?`},
		{"nojournal topologies as an argument", []string{"evaluate", "1/2/1/2"}, `did you mean --topologies 1/2/1/2?`},
		{"nojournal other argument", []string{"size", "measured.yaml"}, `unexpected argument "measured.yaml": softalloc size takes flags only`},
		// NaN fails every comparison, so it passed each bound: check
		// --min-goodput NaN checked nothing and exited 0.
		{"min-goodput NaN", []string{"check", "--topology", "1/2/1/2", "--min-goodput", "NaN"}, `--min-goodput: want a finite number, got "NaN"`},
		{"demand-drift NaN", []string{"recommend", "--topology", "1/2/1/2", "--demand-drift=NaN"}, `--demand-drift: want a finite number, got "NaN"`},
		{"max-regression without its sign", []string{"check", "--topology", "1/2/1/2", "--baseline", "b.json", "--max-regression", "0.05"},
			`--max-regression "0.05": want a percentage in [0,100) with its % sign, e.g. 5%`},
		{"nojournal journal and no-journal", []string{"simulate", "--topology", "1/2/1/2", "--users", "100", "--no-journal", "--journal", "x.jsonl"},
			"--journal x.jsonl and --no-journal contradict"},
		{"nojournal empty topologies", []string{"evaluate", "--topologies", ""}, `--topologies "": want comma-separated topologies`},
		{"nojournal empty seeds", []string{"evaluate", "--seeds", " "}, `--seeds " ": want comma-separated seeds`},
		{"nojournal min-windows 0", []string{"advise", "--topology", "1/2/1/2", "--observations", "x.jsonl", "--min-windows", "0"},
			"--min-windows 0: want at least 3"},
		{"nojournal topology with a workload", []string{"recommend", "--workload", "w.yaml", "--topology", "1/4/1/4"},
			"--topology does not apply with --workload (the workload file describes the server)"},
		{"knee-factor Inf", []string{"validate", "--topology", "1/2/1/2", "--knee-factor", "+Inf"}, `--knee-factor: want a finite number, got "+Inf"`},
		{"nojournal min-utilization -inf", []string{"advise", "--topology", "1/2/1/2", "--min-utilization", "-inf"}, `--min-utilization: want a finite number, got "-inf"`},
	})

	// The floor lets a one-second window run.
	_, stderr, code := run(t, "", "simulate", "--topology", "1/2/1/2", "--users", "100", "--ramp-up", "1s", "--runtime", "1s", "--no-journal")
	assert.Equal(t, 0, code, stderr)

	// check with nothing to check but --output json: "checks" is a list.
	out, stderr, code := run(t, "", "check", "--topology", "1/2/1/2", "--ramp-up", "1s", "--runtime", "2s", "--max-workload", "1000", "--no-journal", "--output", "json")
	require.Equal(t, 0, code, stderr)
	var doc map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.Equal(t, "[]", string(doc["checks"]))
}

// Issue 25: every input read whole ran out of memory on /dev/zero. Each is
// bounded, and a device is refused by name.
func TestUnboundedInputsAreRefused(t *testing.T) {
	sim := []string{"simulate", "--topology", "1/2/1/2", "--users", "100", "--runtime", "2s"}
	runUsageCases(t, []usageCase{
		{"nojournal size", []string{"size", "-m", "/dev/zero"}, `size: not a regular file (a device)`},
		{"model", append(sim, "--model", "/dev/zero"), `load model "/dev/zero": not a regular file (a device)`},
		{"campaign", append(sim, "--runner", "replay", "--campaign", "/dev/zero"), `replay campaign "/dev/zero": not a regular file`},
		{"nojournal journal", append(sim, "--journal", "/dev/zero"), `journal "/dev/zero": not a regular file (a device)`},
		{"nojournal classes", []string{"recommend", "--workload", "/dev/zero"}, `load workload "/dev/zero": not a regular file (a device)`},
		{"nojournal degradation workload", []string{"degradation", "--workload", "/dev/zero"}, `load workload "/dev/zero": not a regular file (a device)`},
		{"baseline", []string{"check", "--topology", "1/2/1/2", "--baseline", "/dev/zero", "--max-regression", "5%"}, `--baseline: not a regular file (a device)`},
		{"nojournal from-journal", []string{"check", "--from-journal", "/dev/zero", "--min-goodput", "1"}, `journal "/dev/zero": not a regular file (a device)`},
		{"deployment", append([]string{"simulate", "--users", "100"}, "-f", "/dev/zero"), `/dev/zero`},
	})
	// Standard input is a pipe: bounded, not refused.
	stdout, stderr, code := run(t, strings.Repeat("y\n", 1<<20), "size", "-m", "-")
	assert.Equal(t, 2, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "larger than the 1024 KiB limit")
	_, err := os.Stat("/dev/zero.lock")
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// Issue 24: one name, one meaning; a flag a command ignores is not offered.
// (find-critical reads --small-step as the ramp's rise, and refuses it
// without --ramp: TestFindCriticalSmallStepNeedsTheRamp.)
func TestOneCommandLine(t *testing.T) {
	for _, f := range []string{"--minjobs-at", "--scan-span", "--knee-factor", "--demand-drift"} {
		_, stderr, code := run(t, "", "find-critical", "--topology", "1/2/1/2", "--no-journal", f, "1")
		assert.Equal(t, 2, code, f)
		assert.Contains(t, stderr, "unknown flag: "+f, "find-critical does not read %s", f)
	}
	_, stderr, code := run(t, "", "check", "--topology", "1/2/1/2", "--no-journal", "--min-goodput", "1", "--mode", "paper")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "unknown flag: --mode", "check never doubles a pool")

	// --sla takes 2 and 2s alike, everywhere.
	for _, args := range [][]string{
		{"simulate", "--topology", "1/2/1/2", "--users", "100", "--runtime", "2s", "--no-journal", "-q", "-o", "json"},
		{"check", "--topology", "1/2/1/2", "--runtime", "2s", "--step", "2000", "--no-journal", "-q", "-o", "json"},
	} {
		var outs []string
		for _, sla := range []string{"2", "2s", "2000ms"} {
			stdout, stderr, code := run(t, "", append(append([]string(nil), args...), "--sla", sla)...)
			require.Equal(t, 0, code, "%s --sla %s: %s", args[0], sla, stderr)
			outs = append(outs, stdout)
		}
		assert.Equal(t, outs[0], outs[1], args[0])
		assert.Equal(t, outs[0], outs[2], args[0])
	}
	_, stderr, code = run(t, "", "find-critical", "--topology", "1/2/1/2", "--no-journal", "--sla", "soon")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `--sla: want seconds such as 2, 0.5 or 500ms, got "soon"`)
}

// Issue 24: -f was --file in size and --deployment elsewhere; --runtime was
// --duration in degradation; --users and --classes meant other things there.
func TestRenamedFlags(t *testing.T) {
	table := "../../testdata/table1/1212.yaml"
	_, stderr, code := run(t, "", "size", "-f", table)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "size: -f is --deployment now, as in every command; give the measurements with --measurements "+table+" (-m)")

	want, _, code := run(t, "", "size", "-m", table, "-o", "json")
	require.Equal(t, 0, code)
	got, stderr, code := run(t, "", "size", "--file", table, "-o", "json")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, want, got, "the old name still works")
	assert.Contains(t, stderr, "softalloc: warning: --file is now --measurements")

	// The hardware from the command line instead of the file.
	got, stderr, code = run(t, "", "size", "-m", table, "--topology", "1/4/1/4")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, got, "topology 1/4/1/4")
	assert.Regexp(t, `app +critical +26\.0 .* 26 +7 +7\n`, got, "26 jobs over 1/4/1/4's four app servers, not the file's two")

	_, stderr, code = run(t, "", "degradation", "--classes", "light,heavy", "--heavy", "0", "--duration", "1s")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "softalloc: warning: --duration is now --runtime")
}

// Issue 24: CSV wherever there is a table.
func TestSlowCSVWhereverThereIsATable(t *testing.T) {
	short := []string{"--runtime", "10s", "--ramp-up", "5s", "--no-journal", "-q", "-o", "csv"}
	for name, args := range map[string][]string{
		"find-critical":  append([]string{"find-critical", "-t", "1/2/1/2"}, short...),
		"recommend":      append([]string{"recommend", "-t", "1/2/1/2"}, short...),
		"validate":       append([]string{"validate", "-t", "1/2/1/2", "--recommended", "400-13-13", "--users", "5000,6000", "--grid-threads", "13", "--grid-connections", "13"}, short...),
		"check":          append([]string{"check", "-t", "1/2/1/2", "--min-goodput", "1", "--step", "2500"}, short...),
		"check capacity": append([]string{"check", "-t", "1/2/1/2", "--step", "2500"}, short...), // no threshold: the capacity row
		"simulate":       append([]string{"simulate", "-t", "1/2/1/2", "--users", "100"}, short...),
		"size":           {"size", "-m", "../../testdata/table1/1414.yaml", "-o", "csv"},
		"degradation":    {"degradation", "--classes", "light,heavy", "--heavy", "0,10", "--runtime", "5s", "-o", "csv"},
		"trial":          {"degradation", "--trial", "--workload", "../../internal/sim/classes/testdata/seed002-steady.yaml", "--runtime", "5s", "-o", "csv"},
		"classes":        {"recommend", "--workload", "../../internal/sim/classes/testdata/seed000-linux.yaml", "-o", "csv"},
	} {
		t.Run(name, func(t *testing.T) {
			stdout, stderr, code := run(t, "", args...)
			require.Equal(t, 0, code, stderr)
			recs, err := csv.NewReader(strings.NewReader(stdout)).ReadAll()
			require.NoError(t, err, stdout)
			require.GreaterOrEqual(t, len(recs), 2, "a header and rows")
			for _, h := range recs[0] {
				assert.Regexp(t, `^[a-z][a-z0-9_.@]*$`, h, "a header a script can name")
			}
			if name == "size" {
				// The critical tier and those behind it have no ratios: empty, as the JSON leaves them out, not 0.
				col := map[string]int{}
				for i, h := range recs[0] {
					col[h] = i
				}
				for _, r := range recs[1:] {
					if r[col["position"]] != "front" {
						assert.Empty(t, r[col["reqratio"]]+r[col["rttratio"]], "%v", r)
					}
				}
			}
		})
	}
}

// Issue 24: help lines within 100 columns.
func TestHelpFits100Columns(t *testing.T) {
	for _, c := range []string{"", "find-critical", "recommend", "simulate", "validate", "check", "size", "evaluate", "degradation"} {
		stdout, _, code := run(t, "", strings.Fields(c+" --help")...)
		require.Equal(t, 0, code)
		for i, line := range strings.Split(stdout, "\n") {
			assert.LessOrEqual(t, len([]rune(line)), 100, "softalloc %s --help, line %d: %q", c, i+1, line)
		}
	}
}

// A file of this repository that an example names exists: evaluate's once
// pointed to a reference file that had moved.
func TestExamplesNameFilesThatExist(t *testing.T) {
	path := regexp.MustCompile(`(?:^|[\s=])((?:docs|examples|testbed|internal)/[\w./-]+\.\w+)`)
	named := 0
	for _, c := range []string{"advise", "check", "degradation", "evaluate", "find-critical", "recommend", "simulate", "size", "validate"} {
		stdout, _, code := run(t, "", c, "--help")
		require.Equal(t, 0, code)
		_, examples, _ := strings.Cut(stdout, "Examples:")
		examples, _, _ = strings.Cut(examples, "Flags:")
		for _, m := range path.FindAllStringSubmatch(examples, -1) {
			named++
			assert.FileExists(t, filepath.Join("..", "..", m[1]), "softalloc %s --help names %s", c, m[1])
		}
	}
	assert.Positive(t, named, "the examples name repository files")
}

// Issue 24: comparing seeds needed a journal per seed. They share one; a
// check from it measures one seed, never a mixture.
func TestSeedsShareAJournal(t *testing.T) {
	j := filepath.Join(t.TempDir(), "journal.jsonl")
	sim := []string{"simulate", "-t", "1/2/1/2", "--users", "6000", "--runtime", "1m", "--journal", j, "-q", "-o", "json"}
	one, stderr, code := run(t, "", append(sim, "--seed", "1")...)
	require.Equal(t, 0, code, stderr)
	two, stderr, code := run(t, "", append(sim, "--seed", "2")...)
	require.Equal(t, 0, code, stderr)
	assert.NotEqual(t, one, two, "seed 2 ran, seed 1's record was not reused")
	again, stderr, code := run(t, "", append(sim, "--seed", "1")...)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, one, again)
	assert.Len(t, journalKeys(t, j), 2)

	_, stderr, code = run(t, "", "check", "--from-journal", j, "--min-goodput", "1")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "want exactly one topology, allocation and runner to check, found 2 matching")
	_, stderr, code = run(t, "", "check", "--from-journal", j, "--min-goodput", "1", "--seed", "2")
	assert.Equal(t, 0, code, stderr)
}

// A bad setting from the environment is named by its variable: the user
// wrote no --pushgateway to look for.
func TestBadEnvironmentSettingIsNamed(t *testing.T) {
	t.Setenv("SOFTALLOC_PUSHGATEWAY", "::bad")
	args := []string{"simulate", "--topology", "1/2/1/2", "--users", "100", "--runtime", "5s", "--no-journal", "-q"}
	_, stderr, code := run(t, "", args...)
	assert.Equal(t, 2, code)
	assert.Equal(t, `softalloc: SOFTALLOC_PUSHGATEWAY "::bad": want the Pushgateway's URL, such as http://pushgateway:9091`+"\n", stderr)
	_, stderr, code = run(t, "", append(args, "--pushgateway", "::x")...)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `--pushgateway "::x"`, "the command line wins, and is named")
}
