package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/promtest"
	"github.com/softalloc/softalloc/internal/runner/live"
)

// scrapingPrometheus starts Debian's Prometheus on loopback scraping target
// (host:port) every 200 ms, and returns its URL once it has scraped it.
func scrapingPrometheus(t *testing.T, target string) string {
	t.Helper()
	return promtest.Scraping(t, "the OOM kill through the live runner", 200*time.Millisecond, 400*time.Millisecond, "http://"+target)
}

// A worker of the tier killed by the OOM killer during a trial fails the
// trial with that cause, end to end: a cgroup limited to 96 MiB, a process
// in it that the first page makes touch 128 MiB more, this exporter, a real
// Prometheus scraping it, and the live runner with the cgroup preset.
func TestAnOOMKillMidTrialFailsItThroughTheLiveRunner(t *testing.T) {
	const mib = 1 << 20
	src, tier, dir, _ := testTier(t, 96*mib)
	c := startChild(t, dir)
	require.True(t, c.allocate(t, 24), "the child touched 24 MiB under a 96 MiB limit")

	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(&collector{src: src, tiers: []string{tier}}))
	exporter := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer exporter.Close()
	promURL := scrapingPrometheus(t, strings.TrimPrefix(exporter.URL, "http://"))

	// The application: its first page makes the worker outgrow the limit.
	var once sync.Once
	killed := make(chan bool, 1)
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { killed <- !c.allocate(t, 128) })
	}))
	defer app.Close()
	wdir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(wdir, "w.yaml"), []byte(
		"thinkTime: {mean: 50ms}\nstart: A\ninteractions:\n  - {name: A, path: /a, next: {A: 1}}\n"), 0o644))
	r, err := live.New(map[string]any{"target": app.URL, "prometheus": promURL, "workload": "w.yaml",
		"tiers": map[string]any{tier: map[string]any{"presets": []any{"cgroup"}}}}, filepath.Join(wdir, "deployment.yaml"))
	require.NoError(t, err)
	var log strings.Builder
	r.Log = &log
	e := algorithms.Experiment{
		Deployment: algorithms.Deployment{Topology: "1", Tiers: []algorithms.Tier{{Name: tier, Role: "app", Replicas: 1, Cores: 1}}},
		Workload:   algorithms.Workload{Users: 2},
		Timing:     algorithms.Timing{RampUp: 100 * time.Millisecond, Runtime: time.Second}}
	// As on a running stack, Prometheus has scraped the exporter before the
	// trial reads its baseline (a new Prometheus finds its targets within 5 s).
	deadline := time.Now().Add(30 * time.Second)
	for !hasSeries(t, promURL, `softalloc_testbed_memory_oom_kills_total{tier="`+tier+`"}`) {
		require.True(t, time.Now().Before(deadline), "Prometheus did not scrape the exporter within 30 s")
		time.Sleep(100 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = r.RunExperiment(ctx, e)
	require.True(t, <-killed, "the worker was OOM-killed")
	require.Error(t, err, log.String())
	var oom *live.OOMKillError
	require.True(t, errors.As(err, &oom), "want an OOMKillError, got %v", err)
	assert.Equal(t, tier, oom.Tier)
	assert.Equal(t, 1, oom.Kills)
	assert.Equal(t, float64(96*mib), oom.LimitBytes)
	assert.Contains(t, err.Error(), fmt.Sprintf("the OOM killer killed 1 of tier %s's processes during the trial (memory limit 96 MiB)", tier))
}

// hasSeries says whether Prometheus's instant query q answers a series.
func hasSeries(t *testing.T, promURL, q string) bool {
	t.Helper()
	resp, err := http.Get(promURL + "/api/v1/query?query=" + url.QueryEscape(q))
	require.NoError(t, err)
	defer resp.Body.Close()
	var body struct {
		Data struct {
			Result []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	return len(body.Data.Result) > 0
}
