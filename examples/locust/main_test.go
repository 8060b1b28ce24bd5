package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/softalloc/softalloc/internal/syncbuf"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/runner/exec"
	"github.com/softalloc/softalloc/internal/runner/live"
	"github.com/softalloc/softalloc/internal/workload"
)

func TestHistogramIsLocustsRoundingIntervals(t *testing.T) {
	e := entry{NumRequests: 7, TotalResponseTime: 1234.5,
		ResponseTimes: map[string]int64{"0": 1, "7": 2, "99": 1, "150": 1, "3400": 1, "59000": 1, "12": 0}}
	h, err := histogram(e)
	require.NoError(t, err)
	// Each key's bucket ends half a rounding step above it: 7 ms holds
	// [6.5, 7.5), 150 ms [145, 155), 3400 ms [3350, 3450), 59 s [58.5, 59.5).
	assert.Equal(t, []algorithms.Bucket{{LE: 0.0005, Count: 1}, {LE: 0.0075, Count: 2}, {LE: 0.0995, Count: 1},
		{LE: 0.155, Count: 1}, {LE: 3.45, Count: 1}, {LE: 59.5, Count: 1}}, h.Buckets)
	assert.InDelta(t, 1.2345, h.Sum, 1e-12)

	e.NumRequests = 8
	_, err = histogram(e)
	require.EqualError(t, err, "response_times count 7 pages, num_requests 8")
	_, err = histogram(entry{ResponseTimes: map[string]int64{"-3": 1}})
	require.EqualError(t, err, `response_times: want a count of milliseconds >= 0, got "-3": 1`)
}

func TestRoundingStepMatchesLocust(t *testing.T) {
	// locust.stats.bucket_response_time: 147 -> 150, 3432 -> 3400, 58760 -> 59000.
	for _, c := range []struct{ ms, step float64 }{{0, 1}, {99, 1}, {100, 10}, {147, 10}, {999, 10}, {1000, 100}, {3432, 100}, {10000, 1000}, {58760, 1000}} {
		assert.Equal(t, c.step, roundingStep(c.ms), "%g ms", c.ms)
	}
}

func TestConfigNamesTheBadValue(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ text, err string }{
		{"", "the file is empty; want deployment, locust and workers"},
		{"workers: [local]", "deployment: missing"},
		{"deployment: d.yaml", "workers: want at least one entry"},
		{"deployment: d.yaml\nworkers: [local, 'a b']", `workers[1]: want "local" or a host name (letters, digits, . _ : @ -), got "a b"`},
		{"deployment: d.yaml\nworkers: [h]\nremote: [ssh, '{host}', locust]", "remote: want exactly one element {workerArgs} (Locust's worker arguments), got 0 in \"ssh {host} locust\""},
		{"deployment: d.yaml\nworkers: [h]\nremote: [ssh, '{hots}', locust, '{workerArgs}']", "remote: unknown placeholder {hots} in \"{hots}\""},
		{"deployment: d.yaml\nworkers: [h]\nmasterPort: 70000", "masterPort: want a port in [0,65535] (0: a free one), got 70000"},
		{"deployment: d.yaml\nworkers: [h]\nconnectTimeout: 0.1s", "connectTimeout: want a duration in [1s, 1h], got 0.1s"},
		{"deployment: d.yaml\nworkers: [h]\nworker: [h]", "worker"},
	} {
		_, err := loadConfig(writeFile(t, filepath.Join(dir, "s.yaml"), c.text))
		require.Error(t, err, c.text)
		assert.Contains(t, err.Error(), c.err, c.text)
		assert.NotContains(t, err.Error(), "\n")
	}
}

func TestWorkerCommands(t *testing.T) {
	dir := t.TempDir()
	c, err := loadConfig(writeFile(t, filepath.Join(dir, "s.yaml"), "deployment: d.yaml\nworkers: [local, user@loadgen-2]\n"))
	require.NoError(t, err)
	assert.Equal(t, "*", c.MasterBind, "a remote worker: the master listens on every address")
	ws := c.workers("/opt/locust", "10.0.0.1", 5557)
	args := []string{"-f", "-", "--worker", "--master-host", "10.0.0.1", "--master-port", "5557", "--softalloc-worker"}
	assert.Equal(t, append(append([]string{"/opt/locust"}, args...), "1@local", "--loglevel", "INFO"), ws[0].Argv)
	assert.Equal(t, append(append([]string{"ssh", "-o", "BatchMode=yes", "user@loadgen-2", "locust"}, args...), "2@user@loadgen-2", "--loglevel", "INFO"), ws[1].Argv)
}

func TestPlanRoundTripsThroughTheLocustfile(t *testing.T) {
	w, err := live.ParseWorkload([]byte(`
thinkTime: {mean: 700ms, cap: 7s}
start: A
interactions:
  - {name: A, path: "/a?q=\"x\"&s={pick:a|b}", embedded: [/logo.gif], next: {B: 0.5, EndOfSession: 0.5}}
  - {name: B, path: "/b/{rand:1:9}", next: {Back: 1}}
`))
	require.NoError(t, err)
	p, err := makePlan(w, "http://127.0.0.1:8080/app/", 0, 10*time.Second, 40, 2,
		algorithms.Timing{RampUp: 3 * time.Second, Runtime: 6 * time.Second, RampDown: time.Second}, 10*time.Second)
	require.NoError(t, err)
	assert.Equal(t, "http://127.0.0.1:8080", p.Target)
	assert.Equal(t, []int{1, workload.ToEndOfSession}, p.Pages[0].To)
	assert.Equal(t, []float64{0.5, 1}, p.Pages[0].Cum)
	src, err := p.render()
	require.NoError(t, err)
	lines := regexp.MustCompile(`(?m)^PLAN = json\.loads\((.*)\)$`).FindStringSubmatch(src)
	require.Len(t, lines, 2, "one PLAN line")
	// The literal is JSON, and a Python string literal: read it back as JSON.
	var text string
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &text))
	var back plan
	require.NoError(t, json.Unmarshal([]byte(text), &back))
	assert.Equal(t, p, back)
	assert.Equal(t, 0.7, back.Think.Mean)
}

// A real distributed Locust run, a master and two local workers against a
// local server, next to the live runner's load generator against another:
// the users split evenly, Locust's merge of the workers' statistics is their
// sum, the closed loop gives the throughput the response time law says,
// and the walk gives the live runner's page mix.
func TestLocustTwoWorkersAgainstALocalServer(t *testing.T) {
	const users = 60
	const delay = 2 * time.Millisecond
	timing := algorithms.Timing{RampUp: 3 * time.Second, Runtime: 8 * time.Second, RampDown: time.Second}
	r := newLocalRun(t, delay)
	w, bySite, byLive := r.w, r.site, newSite(t, r.w, delay)

	// The live runner's generator, at the same time on its own server.
	var liveRes live.LoadResult
	var liveErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		target, _ := url.Parse(byLive.URL)
		l := live.Load{Workload: w, Target: target, Users: users, Timing: timing, RequestTimeout: 10 * time.Second,
			Seed: 1, Transport: &http.Transport{MaxIdleConnsPerHost: users}}
		liveRes, liveErr = l.Run(context.Background())
	}()

	var log strings.Builder
	win, err := runLocust(context.Background(), r.c, r.plan(t, users, timing), r.run(), func(f string, a ...any) { fmt.Fprintf(&log, f+"\n", a...) })
	require.NoError(t, err, log.String())
	t.Log(log.String())
	wg.Wait()
	require.NoError(t, liveErr)

	t.Run("each worker runs half the users", func(t *testing.T) {
		require.Len(t, win.Workers, 2)
		names := []string{win.Workers[0].Worker, win.Workers[1].Worker}
		sort.Strings(names)
		assert.Equal(t, []string{"1@local", "2@local"}, names)
		for _, x := range win.Workers {
			assert.Equal(t, users/2, x.UsersAtOpen, x.Worker)
			assert.Equal(t, users/2, x.UsersAtClose, x.Worker)
			assert.Greater(t, x.Total.NumRequests, int64(0), x.Worker)
		}
	})

	t.Run("the merged statistics are the workers' sum", func(t *testing.T) {
		var sum entry
		sum.ResponseTimes = map[string]int64{}
		pages := map[string]int64{}
		for _, x := range win.Workers {
			sum.NumRequests += x.Total.NumRequests
			sum.NumFailures += x.Total.NumFailures
			sum.TotalResponseTime += x.Total.TotalResponseTime
			for k, n := range x.Total.ResponseTimes {
				sum.ResponseTimes[k] += n
			}
			for k, n := range x.Pages {
				pages[k] += n
			}
		}
		assert.Equal(t, sum.NumRequests, win.Total.NumRequests)
		assert.Equal(t, sum.NumFailures, win.Total.NumFailures)
		assert.InDelta(t, sum.TotalResponseTime, win.Total.TotalResponseTime, 1e-6*sum.TotalResponseTime)
		assert.Equal(t, sum.ResponseTimes, win.Total.ResponseTimes)
		assert.Equal(t, pages, win.Pages)
		var n int64
		for _, c := range pages {
			n += c
		}
		assert.Equal(t, win.Total.NumRequests, n, "every page is one interaction's")
	})

	obs, err := clientSide(win, 0.5, t.Logf)
	require.NoError(t, err)
	obs.Servers = []algorithms.ServerObservation{{Name: "web-1", Tier: "web"}}
	require.NoError(t, obs.Validate())

	t.Run("the window is the runtime, its throughput the closed loop's", func(t *testing.T) {
		assert.InDelta(t, timing.Runtime.Seconds(), obs.RuntimeSeconds, 0.2)
		assert.Zero(t, obs.Errors)
		r := obs.ResponseTimes.Sum / float64(obs.ResponseTimes.Count())
		var thinks int64
		var slept float64
		for _, x := range win.Workers {
			thinks, slept = thinks+x.Thinks, slept+x.ThinkSeconds
		}
		z := slept / float64(thinks)
		// N = X (Z + R), with the think time slept: about 120 pages/s with
		// 0.5 s and responses of milliseconds.
		law := float64(users) / (z + r)
		t.Logf("locust: %.1f pages/s, think %.1f ms, response %.1f ms (the law: %.1f pages/s); live runner: %.1f pages/s, think %.1f ms",
			obs.Throughput, 1000*z, 1000*r, law, float64(liveRes.Pages)/timing.Runtime.Seconds(), 1000*liveRes.MeanThinkTime())
		assert.InEpsilon(t, law, obs.Throughput, 0.05)
		// A few hundred think times drawn per generator: their means differ by some %.
		assert.InEpsilon(t, float64(liveRes.Pages)/timing.Runtime.Seconds(), obs.Throughput, 0.15)
		// The mean of n exponential draws has a standard deviation of the
		// mean over sqrt(n) (17 ms for 857 thinks): a fixed 50 ms was 3 of
		// them, and a CI run's draws came 50.9 ms over (slept 2 ms past
		// them). Four of them, and 10 ms for a busy machine's late wake-ups.
		mean := w.ThinkTime.Mean.Duration().Seconds()
		assert.InDelta(t, mean, z, 4*mean/math.Sqrt(float64(thinks))+0.01, "the think time slept (%d thinks)", thinks)
		// A page is its path and its embedded logo, each at least the delay.
		assert.Greater(t, r, 0.9*2*delay.Seconds())
	})

	// softalloc workload --from-log keys sessions on the address and the
	// User-Agent: every user of the run names itself, as the live runner's do.
	t.Run("each user names itself in its User-Agent", func(t *testing.T) {
		re := regexp.MustCompile(`^softalloc-locust \(trial ([0-9a-f]+); worker ([^;]+); user ([0-9]+)\)$`)
		trials, named := map[string]bool{}, map[string]bool{}
		bySite.mu.Lock()
		defer bySite.mu.Unlock()
		for agent := range bySite.agents {
			m := re.FindStringSubmatch(agent)
			if !assert.NotNil(t, m, "User-Agent %q", agent) {
				continue
			}
			trials[m[1]] = true
			named[m[2]+"/"+m[3]] = true
		}
		assert.Len(t, trials, 1, "one run")
		assert.Len(t, named, users, "one User-Agent per user: %v", named)
	})

	// Two short runs' mixes differ by chance, more than their pages say:
	// each user walks about 20 pages from the start page. Walking the live
	// runner's chain offline (2,000 pairs of runs of 60 users, 22 pages
	// each), a share's difference had a standard deviation up to 0.027
	// (ViewComment), so a fixed 0.05 was a 2-sigma bound, which failed a
	// CI run. The bound is 4 standard deviations of the difference, as the
	// runs' own users estimate it.
	t.Run("the walk gives the live runner's page mix", func(t *testing.T) {
		got, want := bySite.shares(), byLive.shares()
		for _, it := range w.Interactions {
			sd := math.Sqrt(bySite.shareVariance(it.Name, got[it.Name]) + byLive.shareVariance(it.Name, want[it.Name]))
			t.Logf("%-24s locust %.3f live %.3f (the difference's standard deviation %.3f)", it.Name, got[it.Name], want[it.Name], sd)
			assert.InDelta(t, want[it.Name], got[it.Name], 4*sd, it.Name)
		}
	})
}

// faultSetup is an adapterRun whose deployment's target is a local site
// and whose settings add settings; Prometheus is never reached, since each
// fault ends the trial before the servers are read.
func faultSetup(t *testing.T, settings string) adapterRun {
	t.Helper()
	_, w := testbedWorkload(t)
	s := newSite(t, w, time.Millisecond)
	return newAdapterRun(t, fmt.Sprintf(`name: local
tiers:
  - {name: web, role: web, replicas: 1, pools: {threads: 10}}
runner:
  name: live
  target: %s
  workload: workload.yaml
  prometheus: http://127.0.0.1:1
  tiers: {web: {presets: [node], servers: [{node: "x"}]}}
`, s.URL), settings)
}

// A worker killed in the measured window fails the experiment at once,
// saying which worker and how, and softalloc journals nothing.
func TestAWorkerThatDiesFailsTheExperiment(t *testing.T) {
	a := faultSetup(t, "workers: [local, local]\n")
	dir := a.dir
	journal := filepath.Join(dir, "journal.jsonl")
	cmd := osexec.Command(a.softalloc, "simulate", "-f", a.deployment, "--runner", "exec", "--runner-cmd", a.adapter+" "+a.settings,
		"--runner-retries", "0", "--users", "20", "--ramp-up", "3s", "--runtime", "20s", "--ramp-down", "1s",
		"--journal", journal, "--parallel", "1")
	var stderr syncbuf.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	// When the master opens the window, kill worker 2 (its pid is in the
	// master's list of workers).
	var logs []string
	killed := 0
	deadline := time.Now().Add(60 * time.Second)
	for killed == 0 && time.Now().Before(deadline) {
		logs, _ = filepath.Glob(filepath.Join(dir, "results", "*", "attempt-1", "master.log"))
		if len(logs) == 1 {
			b, _ := os.ReadFile(logs[0])
			if strings.Contains(string(b), "softalloc: the window opened") {
				killed = killWorker(t, filepath.Join(filepath.Dir(logs[0]), "window.json.workers"), "2@local")
			}
		}
		select {
		case err := <-done:
			t.Fatalf("softalloc ended before a worker was killed: %v\n%s", err, stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	require.NotZero(t, killed, "the window never opened:\n%s", stderr.String())
	var err error
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("softalloc did not end after the worker died:\n%s", stderr.String())
	}
	var ee *osexec.ExitError
	require.ErrorAs(t, err, &ee, stderr.String())
	assert.Equal(t, 1, ee.ExitCode())
	t.Log(stderr.String())
	assert.Regexp(t, `worker 2@local was killed \(killed\) [0-9.]+ s into the trial, before the master ended it`, stderr.String())
	b, err := os.ReadFile(journal)
	if err == nil {
		assert.NotContains(t, string(b), `"observation"`, "a failed trial must not be journaled")
	}
}

// Workers that cannot reach the master: it gives up after connectTimeout,
// and the error names every worker it never saw. connectTimeout counts from
// the master's start, which takes Locust 4 s on this machine under load.
func TestAMasterWithoutItsWorkersTimesOut(t *testing.T) {
	// The workers are told a port nothing listens on (a later --master-port wins).
	a := faultSetup(t, "workers: [ghost-a, ghost-b]\nremote: ['{locust}', '{workerArgs}', --master-port, '1']\nconnectTimeout: 10s\n")
	cmd := osexec.Command(a.adapter, a.settings)
	cmd.Stdin = strings.NewReader(`{"protocolVersion":1,"experimentId":"local-u10-000000000000","attempt":1,"topology":"local",` +
		`"tiers":[{"name":"web","role":"web","replicas":1,"cores":1,"pools":{"threads":10},"servers":["web-1"]}],` +
		`"allocation":{"web":{"threads":10}},"workload":{"users":10},"timing":{"rampUpSeconds":2,"runtimeSeconds":4,"rampDownSeconds":1}}` + "\n")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	began := time.Now()
	err := cmd.Run()
	took := time.Since(began)
	var ee *osexec.ExitError
	require.ErrorAs(t, err, &ee, stderr.String())
	assert.Empty(t, stdout.String(), "no observation")
	t.Logf("%.1f s: %s", took.Seconds(), stderr.String())
	assert.Regexp(t, `the Locust master \(127\.0\.0\.1:[0-9]+\) saw 0 of its 2 workers within 10s, then gave up; never connected: `+
		`worker 1@ghost-a \(still running; [^)]*\); worker 2@ghost-b \(still running; [^)]*\)`, stderr.String())
	assert.Less(t, took, 30*time.Second)
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	require.Len(t, lines, 3, "the live runner's note, a note of the start, and the error on one line")
	assert.Contains(t, lines[0], "the runner section has no hook", "the section's own warning reaches the user")
}

// SIGTERM (the exec runner's timeout, or Ctrl-C) ends the trial at once and
// leaves no Locust process behind.
func TestSIGTERMStopsTheMasterAndTheWorkers(t *testing.T) {
	a := faultSetup(t, "workers: [local, local]\n")
	cmd := osexec.Command(a.adapter, a.settings)
	cmd.Stdin = strings.NewReader(`{"protocolVersion":1,"experimentId":"local-u10-111111111111","attempt":1,"topology":"local",` +
		`"tiers":[{"name":"web","role":"web","replicas":1,"cores":1,"pools":{"threads":10},"servers":["web-1"]}],` +
		`"allocation":{"web":{"threads":10}},"workload":{"users":10},"timing":{"rampUpSeconds":2,"runtimeSeconds":60,"rampDownSeconds":1}}` + "\n")
	var stderr syncbuf.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	run := filepath.Join(a.dir, "results", "local-u10-111111111111", "attempt-1")
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(filepath.Join(run, "master.log"))
		return strings.Contains(string(b), "softalloc: the window opened")
	}, 60*time.Second, 50*time.Millisecond, "the window never opened: %s", &stderr)
	b, err := os.ReadFile(filepath.Join(run, "window.json.workers"))
	require.NoError(t, err)
	var pids []int
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var h struct {
			PID int `json:"pid"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &h))
		pids = append(pids, h.PID)
	}
	require.Len(t, pids, 2)

	began := time.Now()
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	var ee *osexec.ExitError
	require.ErrorAs(t, cmd.Wait(), &ee)
	t.Logf("ended %.1f s after SIGTERM: %s", time.Since(began).Seconds(), stderr.String())
	assert.Less(t, time.Since(began), 5*time.Second, "within the exec runner's grace")
	assert.Regexp(t, `softalloc-locust: interrupted [0-9.]+ s into the trial; stopped the master and the workers: context canceled`, stderr.String())
	for _, pid := range pids {
		assert.Error(t, syscall.Kill(pid, 0), "worker pid %d still runs", pid)
	}
}

func TestClientSideRefusesAnOutage(t *testing.T) {
	var w window
	w.Window.Seconds = 10
	w.Total = entry{NumRequests: 40, NumFailures: 60, TotalResponseTime: 400, ResponseTimes: map[string]int64{"10": 40}}
	w.Errors = map[string]int64{"refused": 50, "serverErrors": 10}
	var notes []string
	note := func(f string, a ...any) { notes = append(notes, fmt.Sprintf(f, a...)) }
	_, err := clientSide(w, 0.5, note)
	require.EqualError(t, err, "60 of 100 pages failed in the window (60%: 50 refused, 0 timed out, 10 5xx, 0 other), more than maxErrorShare 50%: the trial measured an outage, not the deployment")
	obs, err := clientSide(w, 0.7, note)
	require.NoError(t, err)
	assert.Equal(t, []string{"60 failed pages in the window (50 refused, 0 timed out, 10 5xx, 0 other)"}, notes)
	assert.Equal(t, 4.0, obs.Throughput)
	assert.Equal(t, int64(60), obs.Errors)
}

func TestWindowCheckNamesTheShortfall(t *testing.T) {
	w := window{Users: 40, Workers: []windowWorker{{Worker: "1@local", UsersAtOpen: 20, UsersAtClose: 20}, {Worker: "2@h", UsersAtOpen: 12, UsersAtClose: 20}}}
	w.Window.Seconds = 6
	require.EqualError(t, w.check(2), "32 of 40 users were running when the window opened (1@local 20, 2@h 12), though the workers had reported them all running")
	require.EqualError(t, w.check(3), "statistics from 2 workers, want 3")
	w.Error = "worker 2@h sent no statistics within 10 s of the window's end"
	require.EqualError(t, w.check(2), w.Error)
}

func TestExperimentFromTheMessage(t *testing.T) {
	var req exec.Request
	require.NoError(t, json.Unmarshal([]byte(`{"protocolVersion":1,"experimentId":"x","attempt":1,"topology":"1/2/1",`+
		`"tiers":[{"name":"web","role":"web","replicas":1,"cores":1,"pools":{"threads":100},"servers":["web-1"]},`+
		`{"name":"app","role":"app","replicas":2,"cores":1,"pools":{"threads":20,"connections":10},"servers":["app-1","app-2"]},`+
		`{"name":"db","role":"db","replicas":1,"cores":1,"pools":{},"servers":["db-1"]}],`+
		`"workload":{"users":70},"timing":{"rampUpSeconds":3,"runtimeSeconds":6,"rampDownSeconds":1}}`), &req))
	e, err := experiment(req)
	require.NoError(t, err)
	assert.Equal(t, algorithms.Allocation{"web": {Threads: 100}, "app": {Threads: 20, Connections: 10}}, e.Allocation)
	assert.Equal(t, []string{"threads", "connections"}, e.Deployment.Tiers[1].Pools)
	assert.Empty(t, e.Deployment.Tiers[2].Pools)
	assert.Equal(t, "app-2", e.Deployment.Tiers[1].ServerName(1))
	assert.Equal(t, algorithms.Timing{RampUp: 3 * time.Second, Runtime: 6 * time.Second, RampDown: time.Second}, e.Timing)
	req.Workload.Users = 0
	_, err = experiment(req)
	require.EqualError(t, err, "workload.users 0: want at least 1")
}

// burnCPU starts n CPU-bound processes for the rest of the test: a busy
// machine, on which Python's workers start their users late.
func burnCPU(t *testing.T, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		cmd := osexec.Command("sh", "-c", "while :; do :; done")
		require.NoError(t, cmd.Start())
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	}
}

// The master's wait for the users, run on Locust's Python against a fake
// runner: it opens the window only once Locust's spawning_complete fired and
// the workers report every user, half the ramp-up after that; it fails naming
// each worker's users once connectTimeout + half the ramp-up from the
// master's start have passed, and at once when Locust stops the test; a
// ramp's later level fails once they have passed from the step to it.
func TestTheWindowWaitsForEveryUser(t *testing.T) {
	locust := locustPath(t)
	dir := t.TempDir()
	p := plan{Target: "http://127.0.0.1:1", Users: 4, Workers: 2, ConnectTimeout: 1}
	p.Timing.RampUp, p.Timing.Runtime, p.Timing.RampDown = 0.4, 1, 1
	src, err := p.render()
	require.NoError(t, err)
	writeFile(t, filepath.Join(dir, "softalloc_locustfile.py"), src)
	writeFile(t, filepath.Join(dir, "drive.py"), `import sys, time, types
import gevent
import softalloc_locustfile as lf

class Worker:
    def __init__(self, id):
        self.id, self.user_count, self.state, self.heartbeat = id, 0, "running", 3

class Runner:
    def __init__(self):
        self.state = "spawning"
        self.clients = types.SimpleNamespace(all=[Worker("a"), Worker("b")])

    @property
    def user_count(self):
        return sum(c.user_count for c in self.clients.all)

def master(began):
    env = types.SimpleNamespace(runner=Runner(), parsed_options=types.SimpleNamespace(softalloc_out="", softalloc_began=began))
    return lf._Master(env)

def attempt(m, start, *level):
    try:
        m.open_when_running(start, *level)
        return "opened"
    except lf._Failed as e:
        return str(e)

# Spawning completes with one worker's report missing; it comes later.
m, log = master(time.time()), []
def spawn():
    m.spawned = True
    m.runner.clients.all[0].user_count = 2
    gevent.sleep(0.1)
    log.append("reported")
    m.runner.clients.all[1].user_count = 2
    global ready
    ready = time.time()
gevent.spawn(spawn)
start = time.time()
log.append(attempt(m, start))
# Half the ramp-up after the last user, and the ramp-up after the start.
print(log, time.time() - ready >= 0.2, time.time() - start >= 0.4)

# Past connectTimeout + half the ramp-up of the master's start.
m = master(time.time() - 10)
m.spawned = True
m.runner.clients.all[0].user_count = 2
print(attempt(m, time.time()))

m = master(time.time())
m.runner.state = "stopped"
print(attempt(m, time.time()))

# A ramp's later level: its users must run by connectTimeout + half the
# ramp-up from the step to it, whatever the master's start.
m = master(time.time())
m.spawned = True
m.runner.clients.all[0].user_count = 2
print(attempt(m, time.time(), 6, time.time() - 10))
`)
	python := filepath.Join(filepath.Dir(locust), "python")
	cmd := osexec.Command(python, "drive.py")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, lines, 4, "%s", out)
	assert.Equal(t, "['reported', 'opened'] True True", lines[0])
	assert.Regexp(t, `^2 of 4 users were running 1[0-9]\.[0-9] s after the master's start \(a 2, b 0\), past connectTimeout 1 s \+ half the ramp-up: the workers did not start them in time$`, lines[1])
	assert.Equal(t, "Locust stopped the test 0.0 s in, before the window opened, with 0 of 4 users running; see the master's log", lines[2])
	assert.Regexp(t, `^2 of 6 users were running 1[0-9]\.[0-9] s after the step to 6 users \(a 2, b 0\), past connectTimeout 1 s \+ half the ramp-up: the workers did not start them in time$`, lines[3])
}
