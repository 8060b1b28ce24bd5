//go:build !race

package live

// make test's second pass runs these (TestSlow, !race): each starts a real
// Prometheus and runs a ramp of 20-30 s, twice that under the race detector
// (they passed under it: go test -race -run TestSlowLive).

import (
	"context"
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

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/promtest"
)

// rampApp is a server of a few workers, each page holding one for a while:
// its CPU is the workers' busy share, counted as busy seconds a real
// Prometheus scrapes. It keeps every page's User-Agent, which names the
// load's trial and user.
type rampApp struct {
	URL    string
	mu     sync.Mutex
	agents map[string]int
}

func startRampApp(t *testing.T, workers int, service time.Duration) *rampApp {
	t.Helper()
	reg := prometheus.NewRegistry()
	busy := prometheus.NewCounter(prometheus.CounterOpts{Name: "rampapp_busy_seconds_total"})
	// The handler's threads: a page holds one from its arrival, waiting
	// for a worker included.
	inside := prometheus.NewCounter(prometheus.CounterOpts{Name: "rampapp_thread_seconds_total"})
	pages := prometheus.NewCounter(prometheus.CounterOpts{Name: "rampapp_pages_total"})
	reg.MustRegister(busy, inside, pages)
	sem := make(chan struct{}, workers)
	app := &rampApp{agents: map[string]int{}}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/a", func(w http.ResponseWriter, r *http.Request) {
		arrived := time.Now()
		defer func() { inside.Add(time.Since(arrived).Seconds()) }()
		sem <- struct{}{}
		began := time.Now()
		time.Sleep(service)
		busy.Add(time.Since(began).Seconds())
		<-sem
		pages.Inc()
		app.mu.Lock()
		app.agents[r.UserAgent()]++
		app.mu.Unlock()
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	app.URL = srv.URL
	return app
}

// loadUsers are the trials and users that sent pages: trial id -> users.
func (a *rampApp) loadUsers(t *testing.T) map[string]map[int]bool {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	re := regexp.MustCompile(`^softalloc-loadgen \(trial ([0-9a-f]+); user ([0-9]+)\)$`)
	out := map[string]map[int]bool{}
	for agent := range a.agents {
		m := re.FindStringSubmatch(agent)
		require.NotNil(t, m, "User-Agent %q", agent)
		if out[m[1]] == nil {
			out[m[1]] = map[int]bool{}
		}
		u, err := strconv.Atoi(m[2])
		require.NoError(t, err)
		out[m[1]][u] = true
	}
	return out
}

// rampRunner is a live runner on app, observed by a real Prometheus that
// scrapes it every 100 ms; its users think for think on average.
func rampRunner(t *testing.T, app *rampApp, think time.Duration) (*Runner, *strings.Builder) {
	t.Helper()
	const iv = 100 * time.Millisecond
	prom := promtest.Scraping(t, "the live ramp's Prometheus", iv, 3*iv, app.URL)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "w.yaml"), []byte(
		"thinkTime: {mean: "+think.String()+"}\nstart: A\ninteractions:\n  - {name: A, path: /a, next: {A: 1}}\n"), 0o644))
	sec := map[string]any{"target": app.URL, "prometheus": prom, "workload": "w.yaml", "interval": "100ms",
		"tiers": map[string]any{"app": map[string]any{"queries": map[string]any{
			"cpu":        `rate(rampapp_busy_seconds_total[{window}]) / {cores}`,
			"throughput": `rate(rampapp_pages_total[{window}])`,
			"pools":      map[string]any{"threads": map[string]any{"busy": `rate(rampapp_thread_seconds_total[{window}])`}},
		}}}}
	r, err := New(sec, filepath.Join(dir, "deployment.yaml"))
	require.NoError(t, err)
	log := &strings.Builder{}
	r.Log = &syncWriter{w: log}
	return r, log
}

type syncWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

// rampDeployment is the app's: its workers are its cores.
func rampDeployment(workers int) (algorithms.Deployment, algorithms.Allocation) {
	return algorithms.Deployment{Topology: "app", Tiers: []algorithms.Tier{{Name: "app", Role: "app", Replicas: 1, Cores: workers, Pools: []string{"threads"}}}},
		algorithms.Allocation{"app": {Threads: 100}}
}

// The live runner's ramp is one load that rises without a reset: every
// page of the ramp comes from one trial's users, numbered on as they are
// added, and each level is a window read from a real Prometheus, its CPU
// and busy threads growing with the load.
func TestSlowLiveRampRisesWithoutAReset(t *testing.T) {
	app := startRampApp(t, 4, 10*time.Millisecond)
	r, log := rampRunner(t, app, 40*time.Millisecond)
	d, a := rampDeployment(4)
	rp := algorithms.Ramp{Deployment: d, Allocation: a, From: 2,
		Timing: algorithms.Timing{RampUp: 500 * time.Millisecond, Runtime: 4 * time.Second, Precision: 0.05, SLAs: []float64{1}}}
	levels := []int{6, 12, 24}
	var ws []algorithms.RampWindow
	err := r.RunRamp(context.Background(), rp, func(w algorithms.RampWindow) (algorithms.RampStep, error) {
		ws = append(ws, w)
		if len(ws) > len(levels) {
			return algorithms.RampStep{}, nil
		}
		return algorithms.RampStep{Users: levels[len(ws)-1]}, nil
	})
	require.NoError(t, err, log.String())
	require.Len(t, ws, 4)
	for i, w := range ws {
		t.Logf("window %d: %d users, %.1f-%.1f s, %.1f pages/s, cpu %.2f, busy %.2f", i, w.Users, w.Start, w.End,
			w.Observation.Throughput, w.Observation.Servers[0].CPU, w.Observation.Servers[0].Pools[0].Busy)
		assert.Equal(t, i, w.Index)
		assert.Equal(t, []int{2, 6, 12, 24}[i], w.Users)
		require.NoError(t, w.Observation.Validate())
		require.NotNil(t, w.Observation.Window)
		assert.InDelta(t, w.End-w.Start, w.Observation.RuntimeSeconds, 1e-6)
		assert.GreaterOrEqual(t, w.Observation.Window.WarmUpSeconds, 0.5, "at least the least ramp-up after the step")
		assert.Positive(t, w.Observation.Servers[0].CPU)
		if i > 0 {
			assert.GreaterOrEqual(t, w.Start, ws[i-1].End, "windows in order")
		}
	}
	// What the load does to the app, read from Prometheus: from 2 to 6 users
	// throughput and CPU grow, and the pages inside grow with the users at
	// every level. (Not throughput at each level: on a machine at a load
	// of 28 on 2 cores, 24 users of the sleeping workers served fewer
	// pages than 12.)
	o0, o1 := ws[0].Observation, ws[1].Observation
	assert.Greater(t, o1.Throughput, o0.Throughput)
	assert.Greater(t, o1.Servers[0].CPU, o0.Servers[0].CPU)
	for i := 1; i < len(ws); i++ {
		assert.Greater(t, ws[i].Observation.Servers[0].Pools[0].Busy, ws[i-1].Observation.Servers[0].Pools[0].Busy, "pages inside at window %d", i)
	}
	trials := app.loadUsers(t)
	require.Len(t, trials, 1, "one load for the whole ramp: its pages name one trial")
	for _, users := range trials {
		assert.Len(t, users, 24, "the users added number on: 24 in all, not 2+6+12+24")
		for u := range 24 {
			assert.True(t, users[u], "user %d sent pages", u)
		}
	}
	assert.Contains(t, log.String(), "ramp window 3: 24 users")
}

// find-critical's ramp on the live runner: the CPU saturates as the users
// rise, and the answer rests on windows of the one ramp. One worker of
// 20 ms saturates at about 50 pages/s, a load even a busy machine sends.
func TestSlowLiveFindCriticalRamp(t *testing.T) {
	app := startRampApp(t, 1, 20*time.Millisecond)
	r, log := rampRunner(t, app, 100*time.Millisecond)
	d, a := rampDeployment(1)
	opts := algorithms.Options{Step: 2, SmallStep: 2, ScanSpan: 4, MaxWorkload: 100, HardwareThreshold: 0.9,
		Timing: algorithms.Timing{RampUp: 500 * time.Millisecond, Runtime: 4 * time.Second, Precision: 0.05, SLAs: []float64{1}}}
	c, camp, err := algorithms.FindCriticalRamp(context.Background(), r, d, a, opts)
	require.NoError(t, err, log.String())
	for _, w := range camp.Windows {
		t.Logf("window %d: %d users on %s, %.1f pages/s, cpu %.2f", w.Index, w.Users, w.Allocation, w.Observation.Throughput, w.Observation.Servers[0].CPU)
	}
	assert.Equal(t, "app", c.Tier)
	assert.Equal(t, "cpu", c.Resource)
	require.NotEmpty(t, camp.Answer)
	last := camp.Windows[camp.Answer[len(camp.Answer)-1]]
	assert.Equal(t, c.SaturationWorkload, last.Users)
	assert.GreaterOrEqual(t, last.Observation.Servers[0].CPU, 0.9)
	assert.Len(t, app.loadUsers(t), camp.Ramps, "one load per ramp, none per window")
}
