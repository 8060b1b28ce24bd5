// Package e2e runs softalloc's live runner against the real testbed
// (testbed/testbed.sh): Apache, the bulletin-board app and MariaDB on
// loopback, CPU-capped with cgroups, measured by Prometheus.
//
// The tests start the testbed when it is not up, and stop it afterwards
// only if they started it. Outside CI they skip, with a message, when the
// servers are not installed; in CI (CI=true) they must run.
package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat"

	"github.com/softalloc/softalloc/testbed/gridnoise"
)

// The caps of the two scenarios, in cores. appCritical makes the app tier
// saturate first (testbed.sh's default); dbCritical moves the tightest cap to
// the database and lifts the app's.
const (
	appCritical = "web=0.5 app=0.2 db=0.6"
	dbCritical  = "web=0.5 app=max db=0.2"
	// step is the find-critical workload step, users.
	step = 10
)

var (
	repo     string // repository root
	binary   string // the softalloc binary under test
	started  bool   // this run started the testbed, and stops it
	initial  string // the stack (go, java) that was up before this run, which gets it back
	setupErr error
)

// Tests run in the order of their files' names: the Go stack's (e2e_test.go,
// go_locust_test.go, go_replicas_test.go) before the Java and WordPress
// stacks', so that the Go stack, its data generated, comes up once (with
// the Java stack between, Locust's up took 20 s to bring it back).
func TestMain(m *testing.M) {
	if end := os.Getenv("SOFTALLOC_WATCHDOG_CHILD"); end != "" {
		os.Exit(watchdogChild(end))
	}
	code := func() int {
		wd, err := os.Getwd()
		if err != nil {
			setupErr = err
			return m.Run()
		}
		repo = filepath.Clean(filepath.Join(wd, "..", ".."))
		dir, err := os.MkdirTemp("", "softalloc-e2e-")
		if err != nil {
			setupErr = err
			return m.Run()
		}
		defer os.RemoveAll(dir)
		binary = filepath.Join(dir, "softalloc")
		code := m.Run()
		defer teardownWatchdog.disarm()
		if args, env := teardown(); args != nil {
			cmd := exec.Command(args[0], args[1:]...)
			cmd.Env = append(os.Environ(), env...)
			if out, err := cmd.CombinedOutput(); err != nil {
				fmt.Fprintf(os.Stderr, "%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
				return 1
			}
		}
		return code
	}()
	os.Exit(code)
}

// teardown is the command that leaves the machine as this run found it: the
// testbed stopped if this run started it, else the stack that was up.
func teardown() (args, env []string) {
	tb := filepath.Join(repo, "testbed", "testbed.sh")
	switch {
	case started:
		return []string{tb, "down"}, nil
	case initial != "":
		// up is a no-op when that stack still runs and answers.
		return []string{tb, "up"}, []string{"STACK=" + initial}
	}
	return nil, nil
}

// teardownWatchdog runs the teardown if this process dies without running it.
var teardownWatchdog *watchdog

// requireTestbed skips (outside CI) or fails (in CI) when the servers are
// absent, then builds softalloc and brings the testbed up.
func requireTestbed(t *testing.T) {
	t.Helper()
	prepare(t, nil, "")
	up := exec.Command(filepath.Join(repo, "testbed", "testbed.sh"), append([]string{"up"}, strings.Fields(appCritical)...)...)
	up.Env = append(os.Environ(), "STACK=go")
	run(t, up)
}

// prepare skips (outside CI) or fails (in CI) when the servers or the extra
// programs are absent (apt names the packages that hold the extra ones), then
// takes the testbed's lock and builds softalloc.
func prepare(t *testing.T, extra []string, apt string) {
	t.Helper()
	require.NoError(t, setupErr)
	var missing []string
	for _, b := range append([]string{"apache2", "mariadbd", "mariadb-install-db", "prometheus", "prometheus-apache-exporter", "prometheus-mysqld-exporter"}, extra...) {
		if _, err := exec.LookPath(b); err != nil {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		msg := fmt.Sprintf("testbed servers absent (%s): apt-get install apache2 mariadb-server prometheus prometheus-apache-exporter prometheus-mysqld-exporter%s",
			strings.Join(missing, ", "), apt)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + "; in CI the end-to-end tests must run")
		}
		t.Skip("SKIPPED: " + msg)
	}
	if lockFile != nil {
		return // an earlier test of this run prepared the testbed
	}
	lockTestbed(t)
	if _, err := os.Stat(binary); err != nil {
		run(t, exec.Command("go", "build", "-o", binary, "./cmd/softalloc"))
	}
	if initial = runningStack(); initial == "" {
		started = true
	}
	if args, env := teardown(); args != nil {
		var err error
		teardownWatchdog, err = armWatchdog(args, env, lockFile.Name(), filepath.Join(os.TempDir(), "softalloc-e2e-teardown.log"))
		require.NoError(t, err)
	}
}

// lockTestbed keeps two test runs on one machine (two checkouts) from
// measuring, capping and stopping the same servers at once. In CI the run
// waits its turn; elsewhere it skips rather than wait minutes.
func lockTestbed(t *testing.T) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "softalloc-testbed.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	require.NoError(t, err)
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if os.Getenv("CI") != "true" {
			f.Close()
			t.Skip("SKIPPED: another test run is using the testbed (" + f.Name() + " is locked)")
		}
		t.Log("waiting for another test run to release the testbed")
		require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX))
	}
	// Held until the process exits, after TestMain's teardown.
	lockFile = f
}

var lockFile *os.File

func healthy() bool {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://127.0.0.1:18080/rubbos/health")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// run runs cmd from the repository root and returns its stdout; stderr goes
// to the test log.
func run(t *testing.T, cmd *exec.Cmd) []byte {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Dir, cmd.Stdout, cmd.Stderr = repo, &out, &errb
	start := time.Now()
	err := cmd.Run()
	t.Logf("%s (%.0f s)\n%s", strings.Join(cmd.Args, " "), time.Since(start).Seconds(), errb.String())
	require.NoError(t, err, "%s", strings.Join(cmd.Args, " "))
	return out.Bytes()
}

// softalloc runs the CLI inside the testbed's client cgroup, so that the
// load generator is neither capped nor crowded out by other work.
func softalloc(t *testing.T, args ...string) []byte {
	t.Helper()
	argv := append([]string{"exec-client", binary}, args...)
	return run(t, exec.Command(filepath.Join(repo, "testbed", "testbed.sh"), argv...))
}

func setCaps(t *testing.T, caps string) {
	t.Helper()
	run(t, exec.Command(filepath.Join(repo, "testbed", "testbed.sh"), append([]string{"caps"}, strings.Fields(caps)...)...))
}

// serverReading is one server's CPU and throttled share in one trial.
type serverReading struct {
	CPU       float64 `json:"cpu"`
	Throttled float64 `json:"throttled"`
}

// trial is one record of a journal: its users, when it finished and how
// long it took (seconds), and its servers' readings.
type trial struct {
	Users    int
	Finished time.Time
	Seconds  float64
	Servers  []trialServer
	// Observation is the record's observation as written.
	Observation json.RawMessage
}

// trialServer is one server's readings in a trial.
type trialServer struct {
	Name string `json:"name"`
	serverReading
	appObservation
}

// readJournal returns the journal's trial records, in the order written
// (the journal's own reader would hide which trial ran when).
func readJournal(t *testing.T, data []byte) []trial {
	t.Helper()
	var out []trial
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var rec struct {
			Finished   time.Time `json:"finished"`
			Seconds    float64   `json:"seconds"`
			Experiment struct {
				Workload struct {
					Users int `json:"users"`
				} `json:"workload"`
			} `json:"experiment"`
			Observation json.RawMessage `json:"observation"`
		}
		require.NoError(t, json.Unmarshal(line, &rec), "%s", line)
		var o struct {
			Servers []trialServer `json:"servers"`
		}
		require.NoError(t, json.Unmarshal(rec.Observation, &o), "%s", line)
		out = append(out, trial{Users: rec.Experiment.Workload.Users, Finished: rec.Finished, Seconds: rec.Seconds, Servers: o.Servers, Observation: rec.Observation})
	}
	return out
}

// readJournalFile is readJournal of the journal at path.
func readJournalFile(t *testing.T, path string) []trial {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return readJournal(t, data)
}

// serverReadings returns server's readings in the journal's trials, by
// users (the last trial of each workload).
func serverReadings(t *testing.T, journal, server string) map[int]serverReading {
	t.Helper()
	return readingsOf(readJournalFile(t, journal), server)
}

// readingsOf is server's readings in trials, by users (the last trial of
// each workload).
func readingsOf(trials []trial, server string) map[int]serverReading {
	out := map[int]serverReading{}
	for _, tr := range trials {
		for _, s := range tr.Servers {
			if s.Name == server {
				out[tr.Users] = s.serverReading
			}
		}
	}
	return out
}

type critical struct {
	Tier               string  `json:"tier"`
	Resource           string  `json:"resource"`
	Utilization        float64 `json:"utilization"`
	SaturationWorkload int     `json:"saturationWorkload"`
	MaxThroughput      float64 `json:"maxThroughput"`
	// Reserve is the allocation the campaign ended with (the output's
	// top-level reserve): a pool it doubled leaves the start's trials short.
	Reserve string `json:"-"`
}

// trialsSpan is when a journal's trials below the given workload ran: the
// first one's start to the last one's end.
func trialsSpan(t *testing.T, journal []byte, below int) [2]time.Time {
	t.Helper()
	var span [2]time.Time
	for _, tr := range readJournal(t, journal) {
		if tr.Users >= below {
			continue
		}
		if begun := tr.Finished.Add(-time.Duration(tr.Seconds * float64(time.Second))); span[0].IsZero() || begun.Before(span[0]) {
			span[0] = begun
		}
		if tr.Finished.After(span[1]) {
			span[1] = tr.Finished
		}
	}
	return span
}

func findCritical(t *testing.T, args ...string) critical {
	t.Helper()
	var doc struct {
		Critical critical `json:"critical"`
		Reserve  string   `json:"reserve"`
	}
	out := softalloc(t, append([]string{"find-critical", "--output", "json", "--quiet", "--step", strconv.Itoa(step)}, args...)...)
	require.NoError(t, json.Unmarshal(out, &doc), "%s", out)
	doc.Critical.Reserve = doc.Reserve
	return doc.Critical
}

// cgroupCPUSeconds reads a testbed group's CPU time from the kernel's
// accounting (cgroup v2's cpu.stat, v1's cpuacct.usage): an exporter's
// answer is late by a scheduling delay on a machine this busy.
func cgroupCPUSeconds(t *testing.T, group string) float64 {
	t.Helper()
	if data, err := os.ReadFile("/sys/fs/cgroup/softalloc-testbed/" + group + "/cpu.stat"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
				us, err := strconv.ParseFloat(v, 64)
				require.NoError(t, err, line)
				return us / 1e6
			}
		}
	}
	mounts, err := os.ReadFile("/proc/mounts")
	require.NoError(t, err)
	for _, line := range strings.Split(string(mounts), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || f[2] != "cgroup" || !slices.Contains(strings.Split(f[3], ","), "cpuacct") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(f[1], "softalloc-testbed", group, "cpuacct.usage"))
		require.NoError(t, err)
		ns, err := strconv.ParseFloat(strings.TrimSpace(string(data)), 64)
		require.NoError(t, err)
		return ns / 1e9
	}
	t.Fatalf("no cgroup accounting of the testbed's %s group", group)
	return 0
}

// TestTestbedHoldsItsCapsBesideOtherWork: a capped tier gets its whole
// quota while many CPU-bound processes outside the testbed run. The
// testbed's groups outweighed each other, but their parent had the default
// weight, one CPU-bound process's: beside a busy machine's load (9 to 35) a
// capped database read 0.91 of its quota and no resource was named, and
// exporters and Prometheus starved into broken readings.
func TestTestbedHoldsItsCapsBesideOtherWork(t *testing.T) {
	requireTestbed(t)
	setCaps(t, appCritical)
	spin := func(argv ...string) *exec.Cmd {
		cmd := exec.Command(argv[0], append(argv[1:], "sh", "-c", "while :; do :; done")...)
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	// Four CPU-bound processes a core, outside the testbed. Measured with
	// the parent's default weight: 0.26-0.35 of the db's 0.6 cores beside
	// two to four a core (four shell runs), 0.284 in this test; with the
	// testbed's weight 0.598-0.600 (four runs) and 0.597-0.603 here. At
	// eight a core the scheduler lets through less (0.25-0.52, four runs).
	hogs := 4 * runtime.NumCPU()
	for i := 0; i < hogs; i++ {
		spin("nice", "-n", "0")
	}
	inside := spin(filepath.Join(repo, "testbed", "testbed.sh"), "exec-in", "db")
	// Let the scheduler settle, then measure the db group over three seconds.
	time.Sleep(time.Second)
	before, start := cgroupCPUSeconds(t, "db"), time.Now()
	time.Sleep(3 * time.Second)
	cores := (cgroupCPUSeconds(t, "db") - before) / time.Since(start).Seconds()
	_ = inside.Process.Kill()
	const capCores = 0.6 // appCritical's db
	t.Logf("the db group used %.3f cores of its %.1f-core cap beside %d CPU-bound processes", cores, capCores, hogs)
	assert.GreaterOrEqual(t, cores, 0.9*capCores, "a capped tier starved by work outside the testbed")
	assert.LessOrEqual(t, cores, 1.05*capCores, "the cap holds")
}

// TestLiveTestbed is one campaign on the testbed, in order: the subtests
// share the servers and reuse each other's experiments through the journal.
func TestLiveTestbed(t *testing.T) {
	requireTestbed(t)
	dir := t.TempDir()
	deployment := filepath.Join("testbed", "deployment.yaml")
	journalA := filepath.Join(dir, "app-critical.jsonl")
	journalB := filepath.Join(dir, "db-critical.jsonl")
	t.Cleanup(func() { setCaps(t, appCritical) })

	var measured critical
	var recommended string
	var belowSaturation [2]time.Time // find-critical's trials below its saturation workload
	// Issue 40's target: init on the running stack writes the hand-written
	// file's shape, so the find-critical below is init's answer too.
	t.Run("init writes the hand-written deployment and doctor passes it", func(t *testing.T) {
		initAgreesWithHandWritten(t, deployment)
	})

	t.Run("find-critical names the capped tier", func(t *testing.T) {
		setCaps(t, appCritical)
		measured = findCritical(t, "--runner", "live", "-f", deployment, "--journal", journalA)
		t.Logf("app-critical caps (%s): %+v", appCritical, measured)
		// The Locust test compares with them.
		trials, err := os.ReadFile(journalA)
		require.NoError(t, err)
		liveCritical, liveTrials = measured, trials
		assert.Equal(t, "app", measured.Tier)
		assert.Equal(t, "cpu", measured.Resource)
		belowSaturation = trialsSpan(t, trials, measured.SaturationWorkload)
	})

	t.Run("check and metrics read the live campaign's journal", func(t *testing.T) {
		require.NotZero(t, measured.SaturationWorkload, "needs the find-critical subtest")
		prom := filepath.Join(dir, "capacity.prom")
		// The allocation find-critical ended with: on a busy machine its
		// start's connections filled before the CPU saturated, were
		// doubled, and the start's trials end at that pool (check said
		// app/connections, twice at load average 18-24).
		require.NotEmpty(t, measured.Reserve)
		base := []string{"check", "--from-journal", journalA, "--runner", "live", "-f", deployment, "--alloc", measured.Reserve, "--quiet"}
		floor := fmt.Sprintf("%.0f", measured.MaxThroughput/2)
		var doc struct {
			Capacity struct {
				Critical      string  `json:"critical"`
				MaxThroughput float64 `json:"maxThroughput"`
				Experiments   int     `json:"experiments"`
			} `json:"capacity"`
			OK bool `json:"ok"`
		}
		out := run(t, exec.Command(binary, append(base, "--critical", "app/cpu", "--min-goodput", floor,
			"--metrics-file", prom, "--output", "json")...))
		require.NoError(t, json.Unmarshal(out, &doc), "%s", out)
		assert.True(t, doc.OK)
		assert.Equal(t, "app/cpu", doc.Capacity.Critical)
		// The same trials: no new experiment.
		assert.LessOrEqual(t, doc.Capacity.MaxThroughput, measured.MaxThroughput+1e-9)
		assert.Greater(t, doc.Capacity.MaxThroughput, measured.MaxThroughput/2)
		text, err := os.ReadFile(prom)
		require.NoError(t, err)
		assert.Contains(t, string(text), `softalloc_critical_resource_info{command="check",resource="cpu",runner="live",tier="app",topology="1/1/1"} 1`)
		assert.Contains(t, string(text), `softalloc_check_passed{check="min-goodput",command="check",runner="live",topology="1/1/1"} 1`)

		// The wrong critical resource fails the check: exit status 1.
		cmd := exec.Command(binary, append(base, "--critical", "db/cpu")...)
		cmd.Dir = repo
		msg, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "%s", msg)
		assert.Equal(t, 1, exit.ExitCode())
		assert.Contains(t, string(msg), "expected db/cpu")
	})

	t.Run("moving the cap moves the answer", func(t *testing.T) {
		setCaps(t, dbCritical)
		// Twice the step: the db saturates near 70 users, and the subtest
		// asks which tier, not where (four trials rather than seven).
		c := findCritical(t, "--runner", "live", "-f", deployment, "--journal", journalB, "--step", strconv.Itoa(2*step))
		t.Logf("db-critical caps (%s): %+v", dbCritical, c)
		assert.Equal(t, "db", c.Tier)
		assert.Equal(t, "cpu", c.Resource)
		setCaps(t, appCritical)
		// The cgroup preset reads the real exporter's throttling counters:
		// a capped tier that saturates its quota is throttled in most periods.
		r, ok := serverReadings(t, journalB, "db-1")[c.SaturationWorkload]
		require.True(t, ok, "no trial at %d users in %s", c.SaturationWorkload, journalB)
		cpu, throttled := r.CPU, r.Throttled
		t.Logf("db-1 at %d users: cpu %.3f, throttled in %.3f of its quota periods", c.SaturationWorkload, cpu, throttled)
		assert.Greater(t, throttled, 0.5)
		assert.GreaterOrEqual(t, max(cpu, throttled), 0.95)
	})

	t.Run("recommend beats under-allocation and is near the grid's best", func(t *testing.T) {
		require.NotZero(t, measured.SaturationWorkload, "needs the find-critical subtest")
		// The same journal: recommend reuses find-critical's experiments.
		common := []string{"--runner", "live", "-f", deployment, "--journal", journalA, "--quiet", "--step", strconv.Itoa(step)}
		var rec struct {
			Allocation string   `json:"allocation"`
			MinJobs    float64  `json:"minJobs"`
			Warnings   []string `json:"warnings"`
			Evidence   struct {
				Reading string `json:"reading"`
				WLmin   int    `json:"wlMin"`
			} `json:"evidence"`
		}
		// Steps of twice the find-critical step in the peak scan: the app's
		// CPU per request falls with load, so recommend reads minJobs where
		// throughput peaks, over a plateau flat within the trials' noise.
		// recommend took 179 s with steps of 5 and 124 s with 10 (one run
		// each), then 289 s with 10 in the make test of 3499572, whose
		// scan climbed from 90 to 340 users (the peak at 310), and make
		// test went past its 25 minutes (1,535 s).
		out := softalloc(t, append([]string{"recommend", "--output", "json", "--small-step", strconv.Itoa(2 * step), "--scan-span", "20"}, common...)...)
		require.NoError(t, json.Unmarshal(out, &rec), "%s", out)
		recommended = rec.Allocation
		t.Logf("recommendation %s (minJobs %.1f, read at the %s, %d users); warnings: %q",
			rec.Allocation, rec.MinJobs, rec.Evidence.Reading, rec.Evidence.WLmin, rec.Warnings)
		require.Len(t, strings.Split(rec.Allocation, "-"), 3)
		// Past saturation, where the allocations differ.
		users := measured.SaturationWorkload + measured.SaturationWorkload/4
		var val struct {
			Recommended struct {
				Allocation string  `json:"allocation"`
				MaxGoodput float64 `json:"maxGoodput"`
			} `json:"recommended"`
			Best struct {
				Allocation string  `json:"allocation"`
				MaxGoodput float64 `json:"maxGoodput"`
			} `json:"best"`
			Grid []struct {
				Allocation string  `json:"allocation"`
				MaxGoodput float64 `json:"maxGoodput"`
			} `json:"grid"`
		}
		// Trials twice the campaign's: the ratio compares single trials. The
		// grid is the under-allocated app pool 1 beside validate's named
		// baselines, whose generous 400-150-60 was the best of the runs
		// quoted below; twice the recommended threads, in the grid until
		// then, never was (244 and 163.7 pages/s against 261 and 165.4).
		out = softalloc(t, append([]string{"validate", "--output", "json", "--parallel", "1", "--runtime", "12s", "--recommended", rec.Allocation,
			"--users", strconv.Itoa(users), "--grid-threads", "1", "--grid-connections", "1"}, common...)...)
		require.NoError(t, json.Unmarshal(out, &val), "%s", out)
		under := -1.0
		for _, g := range val.Grid {
			t.Logf("grid %-12s goodput %.1f pages/s", g.Allocation, g.MaxGoodput)
			if strings.HasSuffix(g.Allocation, "-1-1") {
				under = g.MaxGoodput
			}
		}
		require.GreaterOrEqual(t, under, 0.0, "the grid holds the under-allocated app pool 1")
		assert.Greater(t, val.Recommended.MaxGoodput, under, "the recommendation beats app pool 1")
		ratio := val.Recommended.MaxGoodput / val.Best.MaxGoodput
		t.Logf("recommendation %s: %.3f of the grid's best %s at %d users", val.Recommended.Allocation, ratio, val.Best.Allocation, users)
		// At least 0.85, not 0.9: the app's CPU per page falls with load, so
		// minJobs is read where throughput peaks, and the peak of a flat,
		// noisy plateau moves the reading. CI on 2026-11-27 read 100-8-8 at
		// 140 users, 0.886 of 400-150-60 (231 against 261 pages/s; 100-16-8
		// and 100-200-8 gave 244 and 240); an earlier run gave 100-10-10,
		// 1.000, and the testbed's own runs 100-12-12 to 100-19-19. An
		// under-allocated pool falls below: 100-3-3 reached 0.77 (testbed/README.md).
		assert.GreaterOrEqual(t, ratio, 0.85, "the recommendation %s against the grid's best %s at %d users",
			val.Recommended.Allocation, val.Best.Allocation, users)
	})

	t.Run("advise from Prometheus alone agrees with recommend", func(t *testing.T) {
		require.NotZero(t, measured.SaturationWorkload, "needs the find-critical subtest")
		require.NotEmpty(t, recommended, "needs the recommend subtest")
		// The staircase of load find-critical ran below saturation is in
		// Prometheus as a deployment's own traffic would be; advise reads
		// only Prometheus over it. (Over trials from 10 to 60 or to 70
		// users, saturation at 80, on a quiet machine it read minJobs 10.7
		// and 10.8, 100-11-11; its own 72 s of traffic at 10-60% of
		// saturation, which this replaces, cost 90-130 s.)
		start, end := belowSaturation[0].Truncate(time.Second), belowSaturation[1].Truncate(time.Second)
		require.False(t, start.IsZero(), "needs find-critical's trials below saturation")
		// Windows of 5 s, or a sixth of a shorter span (advise wants five
		// usable windows; each of 2 s or more spans two 1 s scrapes): a warm
		// start that jumped from 10 users to 60 left 22 s below saturation,
		// four windows of 5 s, and advise refused them (make test, 22:23).
		step := 5 * time.Second
		if span := end.Sub(start); span < 6*step {
			step = max(2*time.Second, (span / 6).Truncate(time.Second))
		}
		var adv struct {
			Critical   critical `json:"critical"`
			Allocation string   `json:"allocation"`
			MinJobs    float64  `json:"minJobs"`
			Warnings   []string `json:"warnings"`
			Advice     struct {
				Model   string `json:"model"`
				Windows int    `json:"windows"`
				Used    int    `json:"used"`
				Dropped []struct {
					Label, Problem string
				} `json:"dropped"`
				LoadRange            [2]float64 `json:"loadRange"`
				SaturationThroughput float64    `json:"saturationThroughput"`
			} `json:"advice"`
		}
		out := run(t, exec.Command(binary, "advise", "-f", deployment, "--start", start.Format(time.RFC3339),
			"--end", end.Format(time.RFC3339), "--step", step.String(), "--output", "json"))
		require.NoError(t, json.Unmarshal(out, &adv), "%s", out)
		t.Logf("advise: %s %s, %s, minJobs %.1f, predicted to reach 95%% at %.1f pages/s; %d of %d windows (%.1f-%.1f pages/s), %s model; notes %q",
			adv.Critical.Tier, adv.Critical.Resource, adv.Allocation, adv.MinJobs, adv.Advice.SaturationThroughput,
			adv.Advice.Used, adv.Advice.Windows, adv.Advice.LoadRange[0], adv.Advice.LoadRange[1], adv.Advice.Model, adv.Warnings)
		for _, d := range adv.Advice.Dropped {
			t.Logf("dropped %s: %s", d.Label, d.Problem)
		}
		// The same windows as an operator reads them (the README quotes it).
		t.Logf("%s", run(t, exec.Command(binary, "advise", "-f", deployment, "--start", start.Format(time.RFC3339),
			"--end", end.Format(time.RFC3339), "--step", step.String())))
		assert.Equal(t, measured.Tier+" "+measured.Resource, adv.Critical.Tier+" "+adv.Critical.Resource, "the critical resource")
		if adv.Allocation == recommended {
			t.Logf("advise and recommend both give %s", recommended)
			return
		}
		// Both allocations past saturation, where pool sizes matter, in the
		// order A B B A so that a drift of the machine falls on both. One
		// 12 s trial each read ratios from 0.84 to 1.04 over five runs (100-15-15
		// against 100-13-13 gave 238 and 201 pages/s in one), and single
		// 20 s trials of one allocation at 180 users read 211-300 pages/s:
		// the rounds' own spread says what a gap means.
		goodput := map[string][]float64{}
		for _, order := range [][2]string{{recommended, adv.Allocation}, {adv.Allocation, recommended}} {
			var rows []struct {
				Allocation string             `json:"allocation"`
				Goodput    map[string]float64 `json:"goodput"`
			}
			out = softalloc(t, "simulate", "--runner", "live", "-f", deployment, "--no-journal", "--parallel", "1", "--quiet",
				"--alloc", order[0], "--alloc", order[1], "--users", strconv.Itoa(measured.SaturationWorkload*5/4),
				"--runtime", "12s", "--sla", "2", "--output", "json")
			require.NoError(t, json.Unmarshal(out, &rows), "%s", out)
			require.Len(t, rows, 2)
			for i, r := range rows {
				require.Contains(t, r.Goodput, "2", "%s", out)
				goodput[order[i]] = append(goodput[order[i]], r.Goodput["2"])
			}
		}
		rec, advised := goodput[recommended], goodput[adv.Allocation]
		noise := gridnoise.Pooled([][]float64{rec, advised})
		mean := func(v []float64) float64 { return stat.Mean(v, nil) }
		ratio := mean(advised) / mean(rec)
		t.Logf("goodput at 2 s: recommend %s %.1f pages/s, advise %s %.1f (each of A B B A); ratio of means %.3f, one trial's noise %.1f",
			recommended, rec, adv.Allocation, advised, ratio, noise)
		// Worse than 0.95 of recommend's only where the rounds resolve it:
		// two standard deviations of the difference, as the grids judge.
		if ratio < 0.95 {
			assert.False(t, gridnoise.Resolved(mean(advised), 0.95*mean(rec), len(advised), len(rec), noise),
				"advise's %s served %.3f of recommend's %s, past the rounds' noise", adv.Allocation, ratio, recommended)
		}
	})

	t.Run("a twin calibrated at low load predicts the saturation workload", func(t *testing.T) {
		require.NotZero(t, measured.SaturationWorkload, "needs the find-critical subtest")
		// Calibrated from find-critical's own trials between half the
		// saturation workload and it, pooled: the conditions its saturation
		// was read under. A separate trial later in the run read another
		// machine: make test runs the long simulated tests beside the first
		// minutes of this one: at 40 users the app's CPU read 0.643 of its
		// cap in find-critical's trial, about 1.57 ms a page at the 82.3
		// pages/s a trial at 40 users served minutes later, and the twin
		// calibrated from that later trial held about 1.1 ms (its model
		// peaked at 179.9 pages/s at 0.984 of the cap), so it saw 110 users
		// where find-critical read 80 (CI of 03141f2).
		found := readJournal(t, liveTrials)
		var lows [][]byte
		for _, tr := range found {
			if 2*tr.Users >= measured.SaturationWorkload && tr.Users < measured.SaturationWorkload {
				lows = append(lows, append(tr.Observation, '\n'))
			}
		}
		require.NotEmpty(t, lows, "find-critical ran no trial between half its saturation workload %d and it", measured.SaturationWorkload)
		t.Logf("the twin pools find-critical's %d trials from %d to %d users", len(lows), (measured.SaturationWorkload+1)/2, measured.SaturationWorkload-1)
		obs := filepath.Join(dir, "low.jsonl")
		require.NoError(t, os.WriteFile(obs, bytes.Join(lows, nil), 0o644))
		twin := filepath.Join(dir, "twin")
		run(t, exec.Command("go", "run", "./testbed/twin", "-observation", obs, "-workload", "testbed/workload.yaml", "-out", twin))
		var pred critical
		var doc struct {
			Critical critical `json:"critical"`
		}
		// The simulator runs the same procedure with the same step.
		out := run(t, exec.Command(binary, "find-critical", "--output", "json", "--quiet", "--no-journal",
			"--model", filepath.Join(twin, "model.yaml"), "--topology", "1/1/1", "--alloc", "100-20-10",
			"--step", strconv.Itoa(step), "--ramp-up", "5s", "--runtime", "2m"))
		require.NoError(t, json.Unmarshal(out, &doc), "%s", out)
		pred = doc.Critical
		t.Logf("twin: %+v; testbed: %+v", pred, measured)
		cpu := readingsOf(found, "app-1")
		var line []string
		for _, u := range slices.Sorted(maps.Keys(cpu)) {
			line = append(line, fmt.Sprintf("%d: %.3f", u, cpu[u].CPU))
		}
		t.Logf("the testbed's app-1 CPU by users in find-critical's trials: %s", strings.Join(line, ", "))
		assert.Equal(t, measured.Tier, pred.Tier)
		// Within a third: trials below saturation cannot see the app's CPU
		// per page fall as load rises, and the testbed's own saturation
		// workload moved between 70 and 150 users over seven runs (a twin
		// from a separate 15 s trial erred by -27% to +11% in six of them;
		// testbed/README.md).
		rel := math.Abs(float64(pred.SaturationWorkload-measured.SaturationWorkload)) / float64(measured.SaturationWorkload)
		assert.LessOrEqual(t, rel, 1.0/3, "predicted saturation workload %d users vs measured %d", pred.SaturationWorkload, measured.SaturationWorkload)
	})
}
