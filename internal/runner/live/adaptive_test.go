package live

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
)

// fakeRangePrometheus answers instant and range queries with a constant
// per query (by substring), and says every target was just scraped.
func fakeRangePrometheus(t *testing.T, answers map[string]float64) (*httptest.Server, func() []string) {
	var mu sync.Mutex
	var ranges []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.NoError(t, r.ParseForm())
		q := r.Form.Get("query")
		val, found := math.NaN(), false
		if q == "min(timestamp(up))" {
			val, found = float64(time.Now().Unix()+3600), true
		}
		for k, v := range answers {
			if strings.Contains(q, k) {
				val, found = v, true
			}
		}
		if !strings.HasSuffix(r.URL.Path, "query_range") {
			result := "[]"
			if found {
				result = fmt.Sprintf(`[{"metric":{},"value":[%d,"%g"]}]`, time.Now().Unix(), val)
			}
			fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":%s}}`, result)
			return
		}
		mu.Lock()
		ranges = append(ranges, q+" step="+r.Form.Get("step"))
		mu.Unlock()
		start, _ := strconv.ParseFloat(r.Form.Get("start"), 64)
		end, _ := strconv.ParseFloat(r.Form.Get("end"), 64)
		step, _ := strconv.ParseFloat(r.Form.Get("step"), 64)
		var pts []string
		noisy := strings.Contains(q, "noisy")
		for ts := start; ts <= end+1e-9; ts += step {
			v := val
			if noisy {
				// Four times the value in about one interval in four, else
				// 0: a few busy units that come and go.
				h := fnv.New32a()
				fmt.Fprintf(h, "%.3f", ts)
				if v = 0; h.Sum32()%4 == 0 {
					v = 4 * val
				}
			}
			pts = append(pts, fmt.Sprintf(`[%.3f,"%g"]`, ts, v))
		}
		result := "[]"
		if found {
			result = `[{"metric":{},"values":[` + strings.Join(pts, ",") + `]}]`
		}
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"matrix","result":%s}}`, result)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), ranges...) }
}

// An adaptive live trial measures in the section's intervals, places its
// window after the transient, reads every server's series with range
// queries at the interval, and ends once every figure is precise.
func TestAdaptiveLiveTrial(t *testing.T) {
	dir := t.TempDir()
	prom, ranges := fakeRangePrometheus(t, map[string]float64{"cpu_usage": 0.6, "busy_threads": 4})
	sec := adaptiveSection(t, dir, prom.URL, map[string]any{
		"app": tierQueries("busy_threads"),
	})
	r, err := New(sec, filepath.Join(dir, "deployment.yaml"))
	require.NoError(t, err)
	var log strings.Builder
	r.Log = &log
	e := algorithms.Experiment{
		Deployment: algorithms.Deployment{Tiers: []algorithms.Tier{{Name: "app", Role: "app", Replicas: 1, Cores: 1, Pools: []string{"threads"}}}},
		Workload:   algorithms.Workload{Users: 20},
		Allocation: algorithms.Allocation{"app": {Threads: 20, Connections: 10}},
		Timing: algorithms.Timing{RampUp: 200 * time.Millisecond, Runtime: 10 * time.Second, RampDown: 50 * time.Millisecond,
			Precision: 0.1, SLAs: []float64{1}},
	}
	t0 := time.Now()
	obs, err := r.RunExperiment(context.Background(), e)
	require.NoError(t, err, log.String())
	took := time.Since(t0)
	t.Logf("took %v: window %+v, runtime %.2f s, throughput %.0f±%.1f", took, *obs.Window, obs.RuntimeSeconds, obs.Throughput, obs.ThroughputHalfWidth)
	require.NoError(t, obs.Validate())
	w := obs.Window
	require.NotNil(t, w)
	assert.True(t, w.Precise, "limit %s excess %.2f", w.Limit, w.Excess)
	assert.Equal(t, 0.1, w.Precision)
	assert.Equal(t, 0.05, w.IntervalSeconds)
	assert.GreaterOrEqual(t, w.WarmUpSeconds, 0.2, "the least ramp-up")
	assert.InDelta(t, 0, math.Mod(obs.RuntimeSeconds+1e-9, 0.05), 1e-6, "the window is whole intervals")
	assert.GreaterOrEqual(t, obs.RuntimeSeconds, 1.0, "at least 20 intervals")
	assert.Less(t, obs.RuntimeSeconds, e.Timing.Runtime.Seconds(), "ended before its longest window")
	assert.Positive(t, obs.Throughput)
	assert.Positive(t, obs.ThroughputHalfWidth)
	assert.LessOrEqual(t, obs.ThroughputHalfWidth, 0.1*obs.Throughput)
	require.Len(t, obs.GoodputIntervals, 1)
	assert.InDelta(t, obs.Throughput, obs.GoodputIntervals[0].Goodput, 1e-9, "every page of a local server is within 1 s")
	require.Len(t, obs.Servers, 1)
	assert.InDelta(t, 0.6, obs.Servers[0].CPU, 1e-9)
	assert.Zero(t, obs.Servers[0].CPUHalfWidth, "a constant series")
	got := ranges()
	require.NotEmpty(t, got)
	assert.Contains(t, got, "cpu_usage[100ms] step=0.05", "range queries at the interval, over two of them")
}

// A pool the allocation does not size (the database's own threads) holds
// no trial (Stopping.Estimate): its few busy units at low load never get
// within the precision of their mean, and on the testbed they kept every
// trial at its longest window. Its interval is still reported.
func TestAdaptiveLiveTrialIgnoresPoolsNotAllocated(t *testing.T) {
	dir := t.TempDir()
	prom, _ := fakeRangePrometheus(t, map[string]float64{"cpu_usage": 0.6, "busy_threads": 4, "noisy_db_threads": 0.3})
	sec := adaptiveSection(t, dir, prom.URL, map[string]any{
		"app": tierQueries("busy_threads"),
		"db":  tierQueries("noisy_db_threads"),
	})
	r, err := New(sec, filepath.Join(dir, "deployment.yaml"))
	require.NoError(t, err)
	e := algorithms.Experiment{
		Deployment: algorithms.Deployment{Tiers: []algorithms.Tier{
			{Name: "app", Role: "app", Replicas: 1, Cores: 1, Pools: []string{"threads"}},
			{Name: "db", Role: "db", Replicas: 1, Cores: 1},
		}},
		Workload:   algorithms.Workload{Users: 20},
		Allocation: algorithms.Allocation{"app": {Threads: 20}},
		Timing: algorithms.Timing{RampUp: 200 * time.Millisecond, Runtime: 6 * time.Second, RampDown: 50 * time.Millisecond,
			Precision: 0.1, SLAs: []float64{1}},
	}
	obs, err := r.RunExperiment(context.Background(), e)
	require.NoError(t, err)
	require.NotNil(t, obs.Window)
	assert.True(t, obs.Window.Precise, "limit %s excess %.2f", obs.Window.Limit, obs.Window.Excess)
	assert.Less(t, obs.RuntimeSeconds, e.Timing.Runtime.Seconds(), "ended before its longest window")
	require.Len(t, obs.Servers, 2)
	require.Len(t, obs.Servers[1].Pools, 1, "the pool is still observed")
	assert.Positive(t, obs.Servers[1].Pools[0].BusyHalfWidth, "with its interval")
}

// adaptiveSection is a runner section loading a server that answers at
// once, with a one-page workload of 40 ms think times, 50 ms intervals and
// the given tiers' queries. Light enough to stay steady on a busy machine:
// at 10 ms think times 20 users asked 1,700 pages/s of the test's own
// process, a core under the race detector, and beside four CPU-bound
// processes the rate halved and wandered, and trials ran to their longest
// windows (3 of 5 runs failed).
func adaptiveSection(t *testing.T, dir, prometheus string, tiers map[string]any) map[string]any {
	t.Helper()
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(app.Close)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "w.yaml"), []byte(
		"thinkTime: {mean: 40ms}\nstart: A\ninteractions:\n  - {name: A, path: /a, next: {A: 1}}\n"), 0o644))
	return map[string]any{"target": app.URL, "prometheus": prometheus, "workload": "w.yaml", "interval": "50ms", "tiers": tiers}
}

// tierQueries are a tier's cpu query and its threads' busy query.
func tierQueries(busy string) map[string]any {
	return map[string]any{"queries": map[string]any{"cpu": `cpu_usage[{window}]`,
		"pools": map[string]any{"threads": map[string]any{"busy": busy}}}}
}

// The users inside the system by fifths, the second series the warm-up is
// found on: Little's law on the pages that ended in each fifth.
func TestBinsUsersInside(t *testing.T) {
	b := NewBins(time.Second, nil)
	t0 := time.Now()
	b.begin(t0)
	for range 10 {
		b.add(t0.Add(100*time.Millisecond), 0.1, ok) // 1 s of responses in 0.2 s: 5 inside
	}
	b.add(t0.Add(1100*time.Millisecond), 0.4, ok)    // fifth 5: 2 inside
	b.add(t0.Add(1150*time.Millisecond), 3, refused) // a failure is no page
	b.add(t0.Add(-time.Millisecond), 5, ok)          // before the load: not counted
	rates, got := b.fifthSeries(2)
	require.Len(t, got, 10)
	assert.InDelta(t, 50, rates[0], 1e-9, "10 pages in 0.2 s")
	assert.InDelta(t, 5, got[0], 1e-9)
	assert.InDelta(t, 2, got[5], 1e-9)
	for _, i := range []int{1, 2, 3, 4, 6, 7, 8, 9} {
		assert.Zero(t, got[i], i)
	}
}
