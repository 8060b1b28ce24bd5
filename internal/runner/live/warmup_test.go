package live

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/softalloc/softalloc/algorithms"
)

// coldApp is a deployment whose first pages after each apply are cold
// (their CPU cost is cold, later ones warm), as php-fpm's after a reload
// emptied OPcache, and a Prometheus that reads its CPU from the pages it
// served in the query's window.
type coldApp struct {
	mu         sync.Mutex
	pages      []time.Time // since the last apply
	coldPages  int
	cold, warm float64 // CPU seconds per page
	app, prom  *httptest.Server
}

func newColdApp(t *testing.T, dir string) *coldApp {
	c := &coldApp{coldPages: 40, cold: 0.003, warm: 0.001}
	c.app = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			return
		}
		c.mu.Lock()
		c.pages = append(c.pages, time.Now())
		c.mu.Unlock()
	}))
	t.Cleanup(c.app.Close)
	window := regexp.MustCompile(`window="([0-9]+)ms"`)
	c.prom = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.NoError(t, r.ParseForm())
		q := r.Form.Get("query")
		val := "0"
		switch {
		case q == "min(timestamp(up))":
			val = fmt.Sprint(time.Now().Unix() + 3600)
		case strings.HasPrefix(q, "cpu"):
			at := time.Now()
			if s, err := strconv.ParseFloat(r.Form.Get("time"), 64); err == nil {
				at = time.UnixMilli(int64(s * 1000))
			}
			m := window.FindStringSubmatch(q)
			require.NotNil(t, m, q)
			ms, _ := strconv.Atoi(m[1])
			from := at.Add(-time.Duration(ms) * time.Millisecond)
			var cpu float64
			c.mu.Lock()
			for i, p := range c.pages {
				if p.After(from) && !p.After(at) {
					cpu += map[bool]float64{true: c.cold, false: c.warm}[i < c.coldPages]
				}
			}
			c.mu.Unlock()
			val = strconv.FormatFloat(cpu/(float64(ms)/1000), 'g', -1, 64)
		}
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[%d,%q]}]}}`, time.Now().Unix(), val)
	}))
	t.Cleanup(c.prom.Close)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "w.yaml"), []byte(
		"thinkTime: {mean: 20ms}\nstart: A\ninteractions:\n  - {name: A, path: /a, next: {A: 1}}\n"), 0o644))
	// The hook is a reload: the caches are cold again.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hook.sh"), []byte("#!/bin/sh\necho \"$@\" >> applied\n"), 0o755))
	return c
}

func (c *coldApp) reset() {
	c.mu.Lock()
	c.pages = nil
	c.mu.Unlock()
}

func (c *coldApp) served() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pages)
}

func (c *coldApp) section(warmUp any) map[string]any {
	return map[string]any{"target": c.app.URL, "prometheus": c.prom.URL, "health": c.app.URL + "/health", "workload": "w.yaml",
		"hook": []any{"./hook.sh", "{app.threads}"}, "warmUp": warmUp,
		"tiers": map[string]any{"app": map[string]any{"queries": map[string]any{"cpu": `cpu{window="{window}"}`}}}}
}

// runner is a live runner on c with the section's warmUp, its log kept,
// and an experiment of users on its one app tier of 8 threads.
func (c *coldApp) runner(t *testing.T, dir string, warmUp any, users int) (*Runner, *strings.Builder, algorithms.Experiment) {
	t.Helper()
	r, err := New(c.section(warmUp), filepath.Join(dir, "deployment.yaml"))
	require.NoError(t, err)
	log := &strings.Builder{}
	r.Log = log
	d := algorithms.Deployment{Tiers: []algorithms.Tier{{Name: "app", Role: "app", Replicas: 1, Cores: 1, Pools: []string{"threads"}}}}
	e := algorithms.Experiment{Deployment: d, Workload: algorithms.Workload{Users: users},
		Allocation: algorithms.Allocation{"app": {Threads: 8}},
		Timing:     algorithms.Timing{RampUp: 50 * time.Millisecond, Runtime: 200 * time.Millisecond}}
	return r, log, e
}

// A reload empties php-fpm's caches: a warm-up after each apply runs until
// the CPU per page settles, before the trial's ramp-up, and says so.
func TestWarmUpAfterEachApplyUntilTheCPUPerPageSettles(t *testing.T) {
	dir := t.TempDir()
	c := newColdApp(t, dir)
	r, log, e := c.runner(t, dir, map[string]any{"settle": true, "interval": "200ms", "within": 0.1, "max": "20s"}, 5)
	e.Timing.Runtime = 400 * time.Millisecond

	obs, err := r.RunExperiment(context.Background(), e)
	require.NoError(t, err, log.String())
	m := regexp.MustCompile(`live: warm-up after applying app:threads=8,connections=0: the CPU per page settled within 10% after [0-9.]+m?s at 5 users \(by 200ms intervals: ([0-9., ms]+)\)`).
		FindStringSubmatch(log.String())
	require.NotNil(t, m, log.String())
	var perPage []float64
	for _, f := range strings.Split(m[1], ", ") {
		v, err := strconv.ParseFloat(strings.TrimSuffix(f, " ms"), 64)
		require.NoError(t, err, f)
		perPage = append(perPage, v)
	}
	require.GreaterOrEqual(t, len(perPage), 3, "cold, then two that agree")
	assert.Greater(t, perPage[0], 2.0, "the first interval ran cold (3 ms a page for the first 40 pages)")
	last, prev := perPage[len(perPage)-1], perPage[len(perPage)-2]
	assert.InDelta(t, prev, last, 0.1*prev, "settled: the last two agree within 10%")
	assert.InDelta(t, 1.0, last, 0.15, "warm: 1 ms a page")
	assert.Greater(t, c.served(), c.coldPages, "the cold pages were served before the trial")
	app1, ok := obs.Server("app-1")
	require.True(t, ok)
	assert.InDelta(t, 0.001, app1.CPU/obs.Throughput, 0.0002, "the trial measured the warm deployment")

	// The same allocation: no hook, no warm-up.
	n := strings.Count(log.String(), "warm-up")
	_, err = r.RunExperiment(context.Background(), e)
	require.NoError(t, err)
	assert.Equal(t, n, strings.Count(log.String(), "warm-up"))

	// Another allocation: the hook reloads, the caches are cold, warm up again.
	c.reset()
	e.Allocation = algorithms.Allocation{"app": {Threads: 16}}
	_, err = r.RunExperiment(context.Background(), e)
	require.NoError(t, err)
	assert.Contains(t, log.String(), "warm-up after applying app:threads=16,connections=0: the CPU per page settled")
}

func TestWarmUpOfAFixedDuration(t *testing.T) {
	dir := t.TempDir()
	c := newColdApp(t, dir)
	r, log, e := c.runner(t, dir, "300ms", 3)
	_, err := r.RunExperiment(context.Background(), e)
	require.NoError(t, err)
	assert.Regexp(t, `live: warm-up after applying app:threads=8,connections=0: 300ms at 3 users, [1-9][0-9]* pages \([0-9.]+ pages/s\), 0 failed`, log.String())
}

func TestWarmUpKeyErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"warmUp: soon", `warmUp: "soon": want a duration (30s), settle, or a mapping`},
		{"warmUp: {duration: 30s, settle: true}", "duration and settle both set"},
		{"warmUp: {max: 1m}", "no duration and no settle"},
		{"warmUp: {settle: true, within: 2}", "warmUp.within: want a relative difference in [0, 1]"},
		{"warmUp: {settle: true, often: 2}", `warmUp: unknown key "often"`},
	} {
		var extra map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(tc.yaml), &extra))
		_, err := ParseConfig(section(extra), "d.yaml")
		assert.ErrorContains(t, err, tc.want, tc.yaml)
	}
	c, err := ParseConfig(section(map[string]any{"warmUp": "settle"}), "d.yaml")
	require.NoError(t, err)
	assert.Equal(t, &WarmUp{Settle: true}, c.WarmUp)
}
