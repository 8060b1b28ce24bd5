package live

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/journal"
)

// oomPrometheus answers as fakePrometheus does, and the OOM-kill counter of
// the app tier with before until the load has sent a page, after once it has.
func oomPrometheus(t *testing.T, pages *atomic.Int32, before, after string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.NoError(t, r.ParseForm())
		q := r.Form.Get("query")
		val := "0.5"
		switch {
		case q == "min(timestamp(up))":
			val = fmt.Sprint(time.Now().Unix() + 3600)
		case strings.Contains(q, "oom_kills") && strings.Contains(q, `tier="app"`):
			val = before
			if pages.Load() > 0 {
				val = after
			}
		case strings.Contains(q, "oom_kills"):
			val = "0"
		case strings.Contains(q, "working_set"): // the memory resource
			val = "0.4"
		case strings.Contains(q, "memory_limit_bytes"):
			val = fmt.Sprint(256 << 20)
		}
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[%d,%q]}]}}`, time.Now().Unix(), val)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A php-fpm child killed for memory mid-trial fails the trial with that
// cause: the tier, the kills and the limit named, no retry, no journal record.
func TestAnOOMKillFailsTheTrial(t *testing.T) {
	dir := t.TempDir()
	var pages atomic.Int32
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/health" {
			pages.Add(1)
		}
	}))
	defer app.Close()
	prom := oomPrometheus(t, &pages, "3", "5")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "w.yaml"), []byte(
		"thinkTime: {mean: 20ms}\nstart: A\ninteractions:\n  - {name: A, path: /a, next: {A: 1}}\n"), 0o644))
	hook := filepath.Join(dir, "hook.sh")
	require.NoError(t, os.WriteFile(hook, []byte("#!/bin/sh\necho \"$@\" >> applied\n"), 0o755))
	sec := map[string]any{"target": app.URL, "prometheus": prom.URL, "health": app.URL + "/health", "workload": "w.yaml",
		"hook": []any{"./hook.sh", "{app.threads}"},
		"tiers": map[string]any{
			"web": map[string]any{"presets": []any{"cgroup"}},
			"app": map[string]any{"presets": []any{"cgroup"}},
		}}
	r, err := New(sec, filepath.Join(dir, "deployment.yaml"))
	require.NoError(t, err)
	r.Retries = 2
	d := algorithms.Deployment{Tiers: []algorithms.Tier{
		{Name: "web", Role: "web", Replicas: 1, Cores: 1},
		{Name: "app", Role: "app", Replicas: 1, Cores: 1, Pools: []string{"threads"}},
	}}
	e := algorithms.Experiment{Deployment: d, Workload: algorithms.Workload{Users: 3},
		Allocation: algorithms.Allocation{"app": {Threads: 200}},
		Timing:     algorithms.Timing{RampUp: 50 * time.Millisecond, Runtime: 300 * time.Millisecond}}
	j, err := journal.Open(filepath.Join(dir, "journal.jsonl"), journal.Identity{Runner: "live", Settings: r.Settings()}, journal.Options{})
	require.NoError(t, err)
	defer j.Close()

	_, err = j.Wrap(r).RunExperiment(context.Background(), e)
	require.Error(t, err)
	var oom *OOMKillError
	require.ErrorAs(t, err, &oom)
	assert.Equal(t, OOMKillError{Server: "app-1", Tier: "app", Kills: 2, LimitBytes: 256 << 20}, *oom)
	assert.Contains(t, err.Error(), "the OOM killer killed 2 of tier app's processes during the trial (memory limit 256 MiB)")
	assert.Zero(t, j.Len(), "nothing journaled")
	applied, err := os.ReadFile(filepath.Join(dir, "applied"))
	require.NoError(t, err)
	assert.Equal(t, "200\n", string(applied), "not retried: the same allocation exhausts the same memory")

	// Without a kill the same runner measures, and memory is a resource.
	pages.Store(0)
	prom2 := oomPrometheus(t, &pages, "3", "3")
	sec["prometheus"] = prom2.URL
	r, err = New(sec, filepath.Join(dir, "deployment.yaml"))
	require.NoError(t, err)
	obs, err := r.RunExperiment(context.Background(), e)
	require.NoError(t, err)
	app1, ok := obs.Server("app-1")
	require.True(t, ok)
	assert.InDelta(t, 0.4, app1.Resources["memory"], 1e-9)
}
