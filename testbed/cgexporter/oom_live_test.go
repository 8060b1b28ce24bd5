package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
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
	"github.com/softalloc/softalloc/internal/runner/live"
)

// scrapingPrometheus starts Debian's Prometheus on loopback scraping target
// every 200 ms, and returns its URL once it is ready. A skip where it is not
// installed, a failure under CI=true.
func scrapingPrometheus(t *testing.T, target string) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("prometheus is not installed in CI: scripts/test-deps.sh installs Debian's prometheus package")
		}
		t.Skip("SKIPPED: prometheus is not installed (apt-get install prometheus); the OOM kill through the live runner was not tested")
	}
	dir := t.TempDir()
	config := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(config, []byte(fmt.Sprintf(
		"global: {scrape_interval: 200ms, scrape_timeout: 150ms}\nscrape_configs:\n  - job_name: cgexporter\n    static_configs: [{targets: [%q]}]\n", target)), 0o644))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--config.file="+config, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"), "--web.listen-address="+addr)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	var mu sync.Mutex
	var log strings.Builder
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		var once sync.Once
		for sc.Scan() {
			mu.Lock()
			log.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if strings.Contains(sc.Text(), "Server is ready to receive web requests.") {
				once.Do(func() { close(ready) })
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("Prometheus did not become ready in 30 s:\n%s", log.String())
	}
	return "http://" + addr
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
