package e2e

import (
	"encoding/json"
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

// liveCritical is TestLiveTestbed's find-critical answer under the
// app-critical caps, when it ran first in this process: the Locust test
// compares with it rather than measure it again.
var liveCritical critical

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

// TestLocustTestbed runs find-critical through the exec runner on
// examples/locust: a Locust master and two workers on loopback load the
// testbed, Prometheus gives the servers' side through the live runner's
// queries, and the answer must be the live runner's.
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
	// The live runner's trial (testbed/deployment.yaml): 3 s ramp-up, 6 s
	// measured, 1 s ramp-down; the exec runner's default is the paper's.
	got := findCritical(t, "--runner", "exec", "--runner-cmd", adapter+" "+settings, "-f", deployment,
		"--ramp-up", "3s", "--runtime", "6s", "--ramp-down", "1s", "--runner-retries", "1",
		"--journal", filepath.Join(dir, "locust.jsonl"))
	t.Logf("locust find-critical (%.0f s): %+v", time.Since(began).Seconds(), got)
	want := liveCritical
	if want.SaturationWorkload == 0 {
		want = findCritical(t, "--runner", "live", "-f", deployment, "--journal", filepath.Join(dir, "live.jsonl"))
	}
	t.Logf("live find-critical: %+v", want)

	t.Run("the critical resource is the live runner's", func(t *testing.T) {
		assert.Equal(t, want.Tier, got.Tier)
		assert.Equal(t, want.Resource, got.Resource)
		assert.InDelta(t, want.SaturationWorkload, got.SaturationWorkload, 2*step,
			"saturation workload: locust %d users, live %d", got.SaturationWorkload, want.SaturationWorkload)
		assert.InEpsilon(t, want.MaxThroughput, got.MaxThroughput, 0.2,
			"max throughput: locust %.1f, live %.1f pages/s", got.MaxThroughput, want.MaxThroughput)
	})

	t.Run("every trial split its users over two workers and merged their statistics", func(t *testing.T) {
		windows, err := filepath.Glob(filepath.Join(results, "*", "attempt-*", "window.json"))
		require.NoError(t, err)
		require.NotEmpty(t, windows)
		for _, path := range windows {
			var w struct {
				Users   int `json:"users"`
				Workers []struct {
					Worker      string           `json:"worker"`
					UsersAtOpen int              `json:"usersAtOpen"`
					CPU         float64          `json:"cpu"`
					Total       locustEntry      `json:"total"`
					Errors      map[string]int64 `json:"errors"`
				} `json:"workers"`
				Total locustEntry `json:"total"`
				Error string      `json:"error"`
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
			for _, x := range w.Workers {
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
			t.Logf("%d users: %s", w.Users, strings.Join(split, "; "))
		}
	})
}

type locustEntry struct {
	NumRequests       int64   `json:"num_requests"`
	NumFailures       int64   `json:"num_failures"`
	TotalResponseTime float64 `json:"total_response_time"`
}
