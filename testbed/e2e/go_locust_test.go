package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// liveCritical and liveTrials are TestLiveTestbed's find-critical answer
// under the app-critical caps and its journal's lines, when it ran first in
// this process: the Locust test compares with them rather than measure
// again. The lines, not the file's path: the live test's directory is gone
// once it ends.
var (
	liveCritical critical
	liveTrials   []byte
)

// installLocust installs the pinned Locust into a virtual environment
// (examples/locust/install-locust.sh) and returns its executable. Outside
// CI a machine that cannot (no python3-venv, no PyPI) skips; in CI the test
// must run.
func installLocust(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(repo, "examples", "locust", "install-locust.sh"))
	out, err := cmd.Output()
	if err != nil {
		msg := fmt.Sprintf("cannot install Locust (examples/locust/install-locust.sh): %v", err)
		if ee, ok := err.(*exec.ExitError); ok {
			msg += ": " + strings.TrimSpace(string(ee.Stderr))
		}
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + "; in CI the Locust test must run")
		}
		t.Skip("SKIPPED: " + msg)
	}
	return strings.TrimSpace(string(out))
}

// The Locust test's find-critical step: twice the live test's, for half the
// trials (each costs Locust's start, about 4 s, on top of the trial's 10 s).
const locustStep = 20

// TestLocustTestbed runs find-critical through the exec runner on
// examples/locust: a Locust master and two workers on loopback load the
// testbed, Prometheus gives the servers' side through the live runner's
// queries, and the answer must be the live runner's within the noise of the
// testbed (examples/locust/README.md has the figures).
func TestLocustTestbed(t *testing.T) {
	requireTestbed(t)
	locust := installLocust(t)
	dir := t.TempDir()
	adapter := filepath.Join(dir, "softalloc-locust")
	run(t, exec.Command("go", "build", "-o", adapter, "./examples/locust"))
	results := filepath.Join(dir, "results")
	settings := filepath.Join(dir, "locust.yaml")
	require.NoError(t, os.WriteFile(settings, []byte(fmt.Sprintf(
		"deployment: %s\nlocust: %s\nworkers: [local, local]\nconnectTimeout: 30s\nresults: %s\n",
		filepath.Join(repo, "testbed", "deployment.yaml"), locust, results)), 0o644))
	setCaps(t, appCritical)
	deployment := filepath.Join("testbed", "deployment.yaml")

	began := time.Now()
	journal := filepath.Join(dir, "locust.jsonl")
	// The live runner's trial (testbed/deployment.yaml): 3 s ramp-up, 6 s
	// measured, 1 s ramp-down; the exec runner's default is the paper's.
	got := findCritical(t, "--step", strconv.Itoa(locustStep), "--runner", "exec", "--runner-cmd", adapter+" "+settings, "-f", deployment,
		"--ramp-up", "3s", "--runtime", "6s", "--ramp-down", "1s", "--runner-retries", "1", "--journal", journal)
	t.Logf("locust find-critical (%.0f s): %+v", time.Since(began).Seconds(), got)
	want, wantTrials := liveCritical, liveTrials
	if want.SaturationWorkload == 0 {
		wantJournal := filepath.Join(dir, "live.jsonl")
		want = findCritical(t, "--step", strconv.Itoa(locustStep), "--runner", "live", "-f", deployment, "--journal", wantJournal)
		var err error
		wantTrials, err = os.ReadFile(wantJournal)
		require.NoError(t, err)
	}
	t.Logf("live find-critical: %+v", want)

	t.Run("the critical resource is the live runner's", func(t *testing.T) {
		assert.Equal(t, want.Tier, got.Tier)
		assert.Equal(t, want.Resource, got.Resource)
		// Nine runs of the live runner on this shared 2-core machine put the
		// app's CPU crossing anywhere from 120 to 280 users (mean 169, sd 50),
		// seven of Locust's from 140 to 180 (examples/locust/README.md). In
		// the e2e runs since, the live runner said 90 to 160 and Locust 140
		// or 160 (one CI run: live 90, Locust 160, which failed a band of
		// half the live runner's answer): within a factor of two of each
		// other is that noise; a loop that does not think is far outside it.
		lo, hi := min(want.SaturationWorkload, got.SaturationWorkload), max(want.SaturationWorkload, got.SaturationWorkload)
		assert.LessOrEqual(t, hi, 2*lo, "saturation workload: locust %d users, live %d", got.SaturationWorkload, want.SaturationWorkload)
	})

	t.Run("below saturation the closed loops agree", func(t *testing.T) {
		// Pages per second per user, pooled over the trials below three
		// quarters of either saturation workload: 1 / (Z + R) by the
		// response time law, the same for two generators of the same users.
		limit := 3 * min(want.SaturationWorkload, got.SaturationWorkload) / 4
		trials, err := os.ReadFile(journal)
		require.NoError(t, err)
		l, ln, pages := perUser(t, trials, limit)
		v, vn, _ := perUser(t, wantTrials, limit)
		require.Positive(t, ln)
		require.Positive(t, vn)
		// The think times differ: the live runner draws the same ones in
		// every trial (seed 1), whose mean at these loads is 3-5% under the
		// nominal 0.5 s; Locust draws anew, one per page, and the mean of n
		// exponential draws has a relative standard error of 1/sqrt(n). The
		// band is the first plus three of the second: 10% over four trials
		// (about 3,000 pages), 14% over two (about 1,000). A fixed 10% failed
		// once in CI, with Locust's only two trials (20 and 80 users) at
		// 1.783 pages/s per user against the live runner's 1.990.
		band := 0.05 + 3/math.Sqrt(pages)
		t.Logf("pages/s per user up to %d users: locust %.4f (%d trials, %.0f pages), live %.4f (%d trials); band %.3f",
			limit, l, ln, pages, v, vn, band)
		assert.InEpsilon(t, v, l, band)
	})

	t.Run("every trial split its users over two workers and merged their statistics", func(t *testing.T) {
		windows, err := filepath.Glob(filepath.Join(results, "*", "attempt-*", "window.json"))
		require.NoError(t, err)
		require.NotEmpty(t, windows)
		for _, path := range windows {
			var w struct {
				Users   int `json:"users"`
				Workers []struct {
					Worker       string      `json:"worker"`
					UsersAtOpen  int         `json:"usersAtOpen"`
					CPU          float64     `json:"cpu"`
					Total        locustEntry `json:"total"`
					Thinks       int64       `json:"thinks"`
					ThinkSeconds float64     `json:"thinkSeconds"`
				} `json:"workers"`
				Total  locustEntry `json:"total"`
				Error  string      `json:"error"`
				Window struct {
					Seconds float64 `json:"seconds"`
				} `json:"window"`
			}
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(b, &w), path)
			if w.Error != "" {
				continue // a failed attempt, retried: not journaled
			}
			require.Len(t, w.Workers, 2, path)
			var sum locustEntry
			var split []string
			var thinks int64
			var thought float64
			for _, x := range w.Workers {
				thinks += x.Thinks
				thought += x.ThinkSeconds
				assert.Equal(t, w.Users/2, x.UsersAtOpen, "%s: %s", path, x.Worker)
				assert.Positive(t, x.Total.NumRequests, "%s: %s", path, x.Worker)
				sum.NumRequests += x.Total.NumRequests
				sum.NumFailures += x.Total.NumFailures
				sum.TotalResponseTime += x.Total.TotalResponseTime
				split = append(split, fmt.Sprintf("%s %d users %d pages cpu %.2f", x.Worker, x.UsersAtOpen, x.Total.NumRequests, x.CPU))
			}
			assert.Equal(t, sum.NumRequests, w.Total.NumRequests, path)
			assert.Equal(t, sum.NumFailures, w.Total.NumFailures, path)
			assert.InDelta(t, sum.TotalResponseTime, w.Total.TotalResponseTime, 1e-6*sum.TotalResponseTime+1e-9, path)
			// The response time law, N = X (Z + R), with the think time
			// the users slept: Locust's users are the closed loop the live
			// runner emulates, and its window counts what they did.
			x := float64(w.Total.NumRequests) / w.Window.Seconds
			z := thought / float64(thinks)
			r := w.Total.TotalResponseTime / 1000 / float64(w.Total.NumRequests)
			// Within 5%, or the window's edges: each user's cycle that
			// straddles an edge is counted in part, up to one page a user
			// of the window's pages (20 users, 208 pages: 9.6%; a run beside
			// a CPU-bound process read 6.1% off there, every run before
			// under 2% at 60 and 80 users).
			edges := float64(w.Users) / float64(w.Total.NumRequests)
			assert.InEpsilon(t, float64(w.Users), x*(z+r), math.Max(0.05, edges), "%s: X %.1f pages/s, Z %.3f s, R %.3f s", path, x, z, r)
			t.Logf("%d users: X(Z+R) %.1f; %s", w.Users, x*(z+r), strings.Join(split, "; "))
		}
	})
}

// perUser is the throughput per user pooled over a journal's trials of at
// most limit users: the sum of their throughputs over the sum of their
// users; pages is how many pages those trials measured.
func perUser(t *testing.T, data []byte, limit int) (x float64, trials int, pages float64) {
	t.Helper()
	var n int
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var rec struct {
			Experiment struct {
				Workload struct {
					Users int `json:"users"`
				} `json:"workload"`
			} `json:"experiment"`
			Observation struct {
				Throughput     float64 `json:"throughput"`
				RuntimeSeconds float64 `json:"runtimeSeconds"`
			} `json:"observation"`
		}
		require.NoError(t, json.Unmarshal(line, &rec))
		if u := rec.Experiment.Workload.Users; u > 0 && u <= limit {
			x += rec.Observation.Throughput
			pages += rec.Observation.Throughput * rec.Observation.RuntimeSeconds
			n += u
			trials++
		}
	}
	if n == 0 {
		return 0, 0, 0
	}
	return x / float64(n), trials, pages
}

type locustEntry struct {
	NumRequests       int64   `json:"num_requests"`
	NumFailures       int64   `json:"num_failures"`
	TotalResponseTime float64 `json:"total_response_time"`
}
