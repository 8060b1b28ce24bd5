package live

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
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

// promBinaries finds Debian's prometheus and promtool: a skip outside CI, a
// failure in it (.ci/run installs them through scripts/test-deps.sh).
func promBinaries(t *testing.T) (prometheus, promtool string) {
	t.Helper()
	var paths []string
	for _, name := range []string{"prometheus", "promtool"} {
		p, err := exec.LookPath(name)
		if err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is not installed in CI: .ci/run installs Debian's prometheus package (scripts/test-deps.sh)", name)
			}
			t.Skipf("SKIPPED: %s is not installed (apt-get install prometheus, or scripts/test-deps.sh); the test of Windows against a real Prometheus did not run", name)
		}
		paths = append(paths, p)
	}
	return paths[0], paths[1]
}

// startPrometheus backfills an OpenMetrics text into a TSDB with promtool and
// serves it from a Prometheus on loopback that scrapes nothing; it returns
// its URL once Prometheus logs that it is ready.
func startPrometheus(t *testing.T, openMetrics string) string {
	t.Helper()
	bin, promtool := promBinaries(t)
	dir := t.TempDir()
	input, tsdb := filepath.Join(dir, "data.om"), filepath.Join(dir, "tsdb")
	require.NoError(t, os.WriteFile(input, []byte(openMetrics), 0o644))
	out, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", "--quiet", input, tsdb).CombinedOutput()
	require.NoError(t, err, "promtool: %s", out)
	config := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(config, []byte("global: {scrape_interval: 10s}\n"), 0o644))

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--config.file="+config, "--storage.tsdb.path="+tsdb,
		"--storage.tsdb.retention.time=30d", "--web.listen-address="+addr)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })

	// Ready when it says so; its log is kept for the failure message.
	var mu sync.Mutex
	var log strings.Builder
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		once := sync.Once{}
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

// series is one series of the fixture: a counter given by its rate in each
// window, or a gauge given by its value at each sample.
type series struct {
	family, labels string
	counter        bool
	rate           func(k int) float64    // counters: the rate in window k
	value          func(k, j int) float64 // gauges: sample j of window k
	gap            func(k int) bool       // no sample in window k
	resetIn        int                    // counters: restarts from 0 in this window (-1: never)
}

const (
	fixtureStep    = time.Minute
	fixtureWindows = 10
	perWindow      = 6 // samples per window, 10 s apart, 5 s off the windows' edges
)

// sampleAt is sample j of window k: off the edges, so that every window holds
// the same six samples whether Prometheus's ranges are closed at the start
// (2.x) or open (3.x), and a linear counter's rate() is exact.
func sampleAt(t0 time.Time, k, j int) time.Time {
	return t0.Add(time.Duration(k)*fixtureStep + 5*time.Second + time.Duration(j)*10*time.Second)
}

// openMetrics writes the fixture as OpenMetrics text for promtool.
func openMetrics(t0 time.Time, all []series) string {
	var b strings.Builder
	seen := map[string]bool{}
	for _, s := range all {
		if !seen[s.family] {
			seen[s.family] = true
			typ := "gauge"
			if s.counter {
				typ = "counter"
			}
			fmt.Fprintf(&b, "# TYPE %s %s\n", s.family, typ)
		}
		name := s.family
		if s.counter {
			name += "_total"
		}
		resetAt := time.Time{}
		if s.resetIn >= 0 && s.counter {
			resetAt = t0.Add(time.Duration(s.resetIn)*fixtureStep + 30*time.Second)
		}
		// integral is the counter's increase from t0 to tm.
		integral := func(tm time.Time) float64 {
			d := tm.Sub(t0)
			k := int(d / fixtureStep)
			sum := 0.0
			for i := 0; i < k; i++ {
				sum += s.rate(i) * fixtureStep.Seconds()
			}
			return sum + s.rate(k)*(d-time.Duration(k)*fixtureStep).Seconds()
		}
		for k := 0; k < fixtureWindows; k++ {
			if s.gap != nil && s.gap(k) {
				continue
			}
			for j := 0; j < perWindow; j++ {
				tm := sampleAt(t0, k, j)
				var v float64
				switch {
				case !s.counter:
					v = s.value(k, j)
				case !resetAt.IsZero() && !tm.Before(resetAt):
					v = integral(tm) - integral(resetAt) // the new process counts from 0
				default:
					v = 1000 + integral(tm)
				}
				fmt.Fprintf(&b, "%s{%s} %s %d.%03d\n", name, s.labels, strconv.FormatFloat(v, 'g', -1, 64), tm.Unix(), tm.Nanosecond()/1e6)
			}
		}
	}
	b.WriteString("# EOF\n")
	return b.String()
}

// The fixture's figures, the expectations' source as well as the data's.
func webCPU(k int) float64     { return 0.1 + 0.05*float64(k) }
func webRate(k int) float64    { return 20 + 10*float64(k) }
func webRT(k int) float64      { return 0.01 + 0.001*float64(k) }
func appCPU(i, k int) float64  { return 0.2 + 0.06*float64(k) + 0.01*float64(i) }
func appRT(i, k int) float64   { return 0.02 + 0.002*float64(k) + 0.001*float64(i) }
func appBusy(i, k int) float64 { return 2 + float64(k) + float64(i) }
func appSize(i int) float64    { return 20 + float64(i) }
func pageRate(k int) float64   { return 15 + 5*float64(k) }
func pageRT(k int) float64     { return 0.1 + 0.01*float64(k) }
func pageUsers(k int) float64  { return 30 + 10*float64(k) }
func appRate(i, k int) float64 {
	if i == 1 && k == idleWindow {
		return 0
	}
	return 10 + 5*float64(k) + float64(i)
}

// The bad windows.
const (
	gapWindow   = 3 // web-1's cpu counter has no sample
	resetWindow = 5 // app-1 restarts: its request counters start again from 0
	nanWindow   = 7 // one of app-2's busy-thread samples is NaN
	idleWindow  = 8 // app-2 serves nothing: its response time is 0/0, a legitimate 0
)

func fixture() []series {
	never := func(int) bool { return false }
	all := []series{
		{family: "cpu_seconds", labels: `server="web-1"`, counter: true, rate: webCPU, gap: func(k int) bool { return k == gapWindow }, resetIn: -1},
		{family: "requests", labels: `server="web-1"`, counter: true, rate: webRate, gap: never, resetIn: -1},
		{family: "request_seconds", labels: `server="web-1"`, counter: true, rate: func(k int) float64 { return webRate(k) * webRT(k) }, resetIn: -1},
	}
	for i := 0; i < 2; i++ {
		inst := fmt.Sprintf(`instance="app:%d"`, i+1)
		reset := -1
		if i == 0 {
			reset = resetWindow
		}
		all = append(all,
			series{family: "cpu_seconds", labels: inst, counter: true, rate: func(k int) float64 { return appCPU(i, k) }, resetIn: -1},
			series{family: "requests", labels: inst, counter: true, rate: func(k int) float64 { return appRate(i, k) }, resetIn: reset},
			series{family: "request_seconds", labels: inst, counter: true, rate: func(k int) float64 { return appRate(i, k) * appRT(i, k) }, resetIn: reset},
			series{family: "busy_threads", labels: inst, value: func(k, j int) float64 {
				if i == 1 && k == nanWindow && j == 2 {
					return math.NaN()
				}
				return appBusy(i, k)
			}, resetIn: -1},
			series{family: "max_threads", labels: inst, value: func(int, int) float64 { return appSize(i) }, resetIn: -1},
		)
	}
	all = append(all,
		series{family: "pages", labels: `site="bboard"`, counter: true, rate: pageRate, resetIn: -1},
		series{family: "page_seconds", labels: `site="bboard"`, counter: true, rate: func(k int) float64 { return pageRate(k) * pageRT(k) }, resetIn: -1},
		series{family: "users", labels: `site="bboard"`, value: func(k, _ int) float64 { return pageUsers(k) }, resetIn: -1},
	)
	// OpenMetrics wants each family's series together.
	var grouped []series
	for _, fam := range []string{"cpu_seconds", "requests", "request_seconds", "busy_threads", "max_threads", "pages", "page_seconds", "users"} {
		for _, s := range all {
			if s.family == fam {
				grouped = append(grouped, s)
			}
		}
	}
	return grouped
}

const fixtureSection = `
tiers:
  web:
    queries:
      cpu: rate(cpu_seconds_total{server="{server}"}[{window}])
      throughput: rate(requests_total{server="{server}"}[{window}])
      responseTime: rate(request_seconds_total{server="{server}"}[{window}]) / rate(requests_total{server="{server}"}[{window}])
  app:
    servers: [{instance: "app:1"}, {instance: "app:2"}]
    queries:
      cpu: rate(cpu_seconds_total{instance="{instance}"}[{window}])
      throughput: rate(requests_total{instance="{instance}"}[{window}])
      responseTime: rate(request_seconds_total{instance="{instance}"}[{window}]) / rate(requests_total{instance="{instance}"}[{window}])
      gcShare: rate(jvm_gc_pause_seconds_sum{instance="{instance}"}[{window}])
      pools:
        threads:
          busy: avg_over_time(busy_threads{instance="{instance}"}[{window}])
          size: last_over_time(max_threads{instance="{instance}"}[{window}])
pages:
  throughput: rate(pages_total[{window}])
  responseTime: rate(page_seconds_total[{window}]) / rate(pages_total[{window}])
  users: avg_over_time(users[{window}])
`

func fixtureConfig(t *testing.T, promURL string, edit func(sec map[string]any)) map[string]any {
	t.Helper()
	var sec map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(fixtureSection), &sec))
	sec["prometheus"] = promURL
	if edit != nil {
		edit(sec)
	}
	return sec
}

// queries is the app tier's queries of a fixture section, to edit.
func queries(sec map[string]any, tier string) map[string]any {
	return sec["tiers"].(map[string]any)[tier].(map[string]any)["queries"].(map[string]any)
}

var fixtureDeployment = algorithms.Deployment{Topology: "1/2", Tiers: []algorithms.Tier{
	{Name: "web", Role: "web", Replicas: 1, Cores: 1},
	{Name: "app", Role: "app", Replicas: 2, Cores: 1, Pools: []string{"threads"}},
}}

// countingProxy forwards to Prometheus and counts the requests by path.
func countingProxy(t *testing.T, target string) (string, func(path string) int64) {
	u, err := url.Parse(target)
	require.NoError(t, err)
	var mu sync.Mutex
	counts := map[string]int64{}
	proxy := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		counts[r.URL.Path]++
		mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func(path string) int64 {
		mu.Lock()
		defer mu.Unlock()
		n := counts[path]
		counts[path] = 0
		return n
	}
}

func TestWindowsFromPrometheus(t *testing.T) {
	// Recent enough for Prometheus's retention, old enough to be past.
	t0 := time.Now().Add(-3 * time.Hour).Truncate(time.Minute).UTC()
	promURL := startPrometheus(t, openMetrics(t0, fixture()))
	proxyURL, requests := countingProxy(t, promURL)
	end := t0.Add(fixtureWindows * fixtureStep)
	ctx := context.Background()

	r, err := NewPassive(fixtureConfig(t, proxyURL, nil), "/x/deployment.yaml")
	require.NoError(t, err)
	var log strings.Builder
	r.Log = &log
	ws, err := r.Windows(ctx, fixtureDeployment, t0, end, fixtureStep)
	require.NoError(t, err)
	require.Len(t, ws, fixtureWindows)

	// One range query per query and server (web 3, each app server 6, pages
	// 3) and one per server and pages for counter resets (4), whatever the
	// number of windows: 22.
	assert.EqualValues(t, 22, requests("/api/v1/query_range"))
	assert.EqualValues(t, 2, requests("/api/v1/series"), "the absent gcShare metric, looked up for each app server")
	assert.Equal(t, 1, strings.Count(log.String(), "Prometheus has no series of jvm_gc_pause_seconds_sum"), "warned once: %s", log.String())

	const eps = 1e-9
	for k, w := range ws {
		assert.Equal(t, t0.Add(time.Duration(k)*fixtureStep).Format(time.RFC3339)+".."+t0.Add(time.Duration(k+1)*fixtureStep).Format("15:04:05Z07:00"), w.Label)
		require.NoError(t, w.Observation.Validate(), w.Label)
		assert.InDelta(t, 60, w.Observation.RuntimeSeconds, eps)
		require.Len(t, w.Observation.Servers, 3)
		web, app1, app2 := w.Observation.Servers[0], w.Observation.Servers[1], w.Observation.Servers[2]
		assert.Equal(t, []string{"web-1", "app-1", "app-2"}, []string{web.Name, app1.Name, app2.Name})
		assert.Equal(t, "app", app2.Tier)

		switch k {
		case gapWindow:
			assert.Equal(t, `web-1: cpu: no sample of rate(cpu_seconds_total{server="web-1"}[60000ms]) (a gap in its series)`, w.Problem)
			assert.Zero(t, web.CPU)
		case resetWindow:
			assert.Equal(t, `app-1: counter reset in requests_total{instance="app:1"}, request_seconds_total{instance="app:1"} (a restarted process): the window's rates straddle two processes`, w.Problem)
		case nanWindow:
			assert.Equal(t, `app-2: pools.threads.busy: avg_over_time(busy_threads{instance="app:2"}[60000ms]) is NaN`, w.Problem)
			assert.Zero(t, app2.Pools[0].Busy, "no NaN leaks into the observation")
		default:
			assert.Empty(t, w.Problem, w.Label)
		}

		if k != gapWindow {
			assert.InDelta(t, webCPU(k), web.CPU, eps, w.Label)
		}
		assert.InDelta(t, webRate(k), web.Throughput, eps, w.Label)
		assert.InDelta(t, webRT(k), web.ResponseTime, eps, w.Label)
		for i, s := range []algorithms.ServerObservation{app1, app2} {
			assert.InDelta(t, appCPU(i, k), s.CPU, eps, "%s %s", s.Name, w.Label)
			assert.Zero(t, s.GCShare, "an absent optional metric reads as 0")
			require.Len(t, s.Pools, 1)
			assert.Equal(t, "threads", s.Pools[0].Name)
			assert.Equal(t, int(appSize(i)), s.Pools[0].Size)
			assert.Equal(t, -1.0, s.Pools[0].FullShare, "no fullShare query: unknown")
			if !(i == 1 && k == nanWindow) {
				assert.InDelta(t, appBusy(i, k), s.Pools[0].Busy, eps, "%s %s", s.Name, w.Label)
			}
			if i == 0 && k == resetWindow {
				continue // the rates straddle the restart
			}
			assert.InDelta(t, appRate(i, k), s.Throughput, eps, "%s %s", s.Name, w.Label)
			if appRate(i, k) == 0 {
				assert.Zero(t, s.ResponseTime, "0/0 in an idle window is 0, not a problem")
			} else {
				assert.InDelta(t, appRT(i, k), s.ResponseTime, eps, "%s %s", s.Name, w.Label)
			}
		}
		assert.InDelta(t, pageRate(k), w.Observation.Throughput, eps, w.Label)
		assert.InDelta(t, pageRT(k), w.ResponseTime, eps, w.Label)
		assert.InDelta(t, pageUsers(k), w.Users, eps, w.Label)
	}

	t.Run("range queries in pieces", func(t *testing.T) {
		defer func(n int) { maxPoints = n }(maxPoints)
		maxPoints = 4 // 10 windows: 4 + 4 + 2
		got, err := r.Windows(ctx, fixtureDeployment, t0, end, fixtureStep)
		require.NoError(t, err)
		assert.Equal(t, ws, got, "the pieces join into the same windows")
		assert.EqualValues(t, 3*22, requests("/api/v1/query_range"))
	})

	t.Run("a window that is not whole is left out", func(t *testing.T) {
		got, err := r.Windows(ctx, fixtureDeployment, t0.Add(fixtureStep), end.Add(-fixtureStep/2), fixtureStep)
		require.NoError(t, err)
		require.Len(t, got, fixtureWindows-2)
		assert.Equal(t, ws[1:fixtureWindows-1], got)
	})

	t.Run("page throughput defaults to the first tier's", func(t *testing.T) {
		r, err := NewPassive(fixtureConfig(t, promURL, func(sec map[string]any) { delete(sec, "pages") }), "d.yaml")
		require.NoError(t, err)
		var log strings.Builder
		r.Log = &log
		got, err := r.Windows(ctx, fixtureDeployment, t0, end, fixtureStep)
		require.NoError(t, err)
		for k, w := range got {
			assert.InDelta(t, webRate(k), w.Observation.Throughput, eps, w.Label)
			assert.Zero(t, w.Users, "unknown")
			assert.Zero(t, w.ResponseTime, "unknown")
		}
		assert.Contains(t, log.String(), "page throughput is the sum of tier web's servers' throughput")

		r, err = NewPassive(fixtureConfig(t, promURL, func(sec map[string]any) {
			delete(sec, "pages")
			delete(queries(sec, "web"), "throughput")
		}), "d.yaml")
		require.NoError(t, err)
		_, err = r.Windows(ctx, fixtureDeployment, t0, end, fixtureStep)
		assert.ErrorContains(t, err, "no pages.throughput query and tier web has no throughput query")
	})

	for _, tc := range []struct {
		name string
		edit func(sec map[string]any)
		want string
	}{
		{"several series", func(sec map[string]any) { queries(sec, "app")["cpu"] = "rate(cpu_seconds_total[{window}])" },
			`app-1: cpu: query rate(cpu_seconds_total[60000ms]): several series at ` + t0.Add(fixtureStep).Format(time.RFC3339)},
		{"a required metric absent", func(sec map[string]any) {
			queries(sec, "app")["cpu"] = `rate(process_cpu_seconds_total{instance="{instance}"}[{window}])`
		}, "app-1: cpu: Prometheus has no series of process_cpu_seconds_total over " + t0.Format(time.RFC3339) + ".." + end.Format(time.RFC3339)},
		{"a required query's labels match nothing", func(sec map[string]any) {
			queries(sec, "web")["cpu"] = `rate(cpu_seconds_total{server="web-9"}[{window}])`
		}, `web-1: cpu: query rate(cpu_seconds_total{server="web-9"}[60000ms]) has no sample over`},
		{"a set page throughput finds nothing", func(sec map[string]any) {
			sec["pages"].(map[string]any)["throughput"] = "rate(http_pages_total[{window}])"
		}, "pages.throughput: Prometheus has no series of http_pages_total"},
		{"bad PromQL", func(sec map[string]any) {
			queries(sec, "web")["cpu"] = "rate(cpu_seconds_total{server=\"{server}\"}[{window}]"
		},
			`web-1: cpu: query rate(cpu_seconds_total{server="web-1"}[60000ms]: bad_data`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewPassive(fixtureConfig(t, promURL, tc.edit), "d.yaml")
			require.NoError(t, err)
			_, err = r.Windows(ctx, fixtureDeployment, t0, end, fixtureStep)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestWindowGrid(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	start := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	g, err := newGrid(start, now, 5*time.Minute, now)
	require.NoError(t, err)
	assert.Equal(t, 36, g.n)
	assert.Equal(t, "2026-11-24T09:00:00Z..09:05:00Z", g.label(0))
	g, err = newGrid(time.Date(2026, 11, 24, 23, 58, 0, 0, time.UTC), now.Add(24*time.Hour), 5*time.Minute, now.Add(24*time.Hour))
	require.NoError(t, err)
	assert.Equal(t, "2026-11-24T23:58:00Z..2026-11-25T00:03:00Z", g.label(0), "a window across midnight names both dates")
	g, err = newGrid(start.Add(1500*time.Millisecond), now, 2500*time.Millisecond, now)
	require.NoError(t, err)
	assert.Equal(t, "2026-11-24T09:00:01.5Z..09:00:04Z", g.label(0))

	for _, tc := range []struct {
		name       string
		start, end time.Time
		step       time.Duration
		want       string
	}{
		{"end before start", now, start, time.Minute, "range 2026-11-24T12:00:00Z..2026-11-24T09:00:00Z: want a start before the end"},
		{"no step", start, now, 0, "step 0s: want a positive duration"},
		{"a step shorter than two scrapes", start, now, time.Second, "step 1s: want at least 2s"},
		{"a step finer than Prometheus keeps", start, now, 2*time.Second + time.Microsecond, "want whole milliseconds"},
		{"shorter than a step", start, start.Add(time.Minute), 5 * time.Minute, "is shorter than one step 5m0s"},
		{"too many windows", now.Add(-30 * 24 * time.Hour), now, 10 * time.Second, "259200 windows of 10s; want at most 100000"},
		{"the future", start, now.Add(time.Hour), time.Minute, "end 2026-11-24T13:00:00Z is 1h0m0s in the future"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newGrid(tc.start, tc.end, tc.step, now)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	_, err = newGrid(start, now.Add(MaxFutureSkew/2), time.Minute, now)
	assert.NoError(t, err, "a little clock skew is allowed")
}

func TestCounterSelector(t *testing.T) {
	q := `sum(rate(a_total{x="}[",y="2"}[5m])) / sum(irate( b_total [5m])) + increase(c_total{}[1m]) + avg_over_time(g[5m]) + rate(d_total[5m:1s])`
	var got []string
	for _, m := range counterSelector.FindAllStringSubmatch(q, -1) {
		got = append(got, m[1])
	}
	assert.Equal(t, []string{`a_total{x="}[",y="2"}`, `b_total`, `c_total{}`, `d_total`}, got)
}

// Issue 35: advise clamped a cpu query in cores to 1 (minJobs 57.0 read
// 10.9), and a negative one to 0, with no note. A utilisation outside [0, 1]
// by more than ShareTolerance is the window's problem, naming the query and
// the value; within it, it is clipped.
func TestWindowsUtilisationOutOfRangeIsAProblem(t *testing.T) {
	prom, _ := fakeRangePrometheus(t, map[string]float64{
		"web_cpu": 3.2, "app_cpu": 1.04, "app_full": -0.3, "web_tput": 10, "app_tput": 5, "web_disk": 0.5, "app_rt": -0.02,
	})
	sec := map[string]any{"prometheus": prom.URL, "tiers": map[string]any{
		"web": map[string]any{"queries": map[string]any{"cpu": "web_cpu", "throughput": "web_tput",
			"resources": map[string]any{"disk": "web_disk"}}},
		"app": map[string]any{"queries": map[string]any{"cpu": "app_cpu", "throughput": "app_tput", "responseTime": "app_rt",
			"pools": map[string]any{"threads": map[string]any{"busy": "app_tput", "fullShare": "app_full"}}}},
	}}
	r, err := NewPassive(sec, "/x/deployment.yaml")
	require.NoError(t, err)
	d := algorithms.Deployment{Tiers: []algorithms.Tier{
		{Name: "web", Role: "web", Replicas: 1, Cores: 4},
		{Name: "app", Role: "app", Replicas: 1, Cores: 2, Pools: []string{"threads"}},
	}}
	end := time.Now().Add(-time.Minute).Truncate(time.Minute)
	ws, err := r.Windows(context.Background(), d, end.Add(-3*time.Minute), end, time.Minute)
	require.NoError(t, err)
	require.Len(t, ws, 3)
	for _, w := range ws {
		assert.Contains(t, w.Problem, "web-1: cpu: query web_cpu read 3.2, not a share in [0, 1]")
		assert.Contains(t, w.Problem, "divide it by {cores} (4 here)")
		assert.Contains(t, w.Problem, "app-1: pools.threads.fullShare: query app_full read -0.3")
		assert.NotContains(t, w.Problem, "app_cpu", "within the tolerance: clipped")
		assert.Contains(t, w.Problem, "app-1: responseTime: query app_rt read -0.02: want a number >= 0", "read as 0 before")
		require.Len(t, w.Observation.Servers, 2)
		assert.Equal(t, 1.0, w.Observation.Servers[1].CPU)
		assert.InDelta(t, 0.5, w.Observation.Servers[0].Resources["disk"], 1e-9)
	}
}
