package live

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
)

func appObservation(pages, cpu, requests float64) algorithms.Observation {
	return algorithms.Observation{Throughput: pages, Servers: []algorithms.ServerObservation{
		{Name: "app-1", Tier: "app", CPU: cpu, Throughput: requests},
	}}
}

// TestPlausibilityRefusesAReadingItsNeighboursContradict replays the busy
// machine's find-critical: app-1's CPU near 0.85 at 165-205 users, and 0.062
// at 185 users at the same page rate.
func TestPlausibilityRefusesAReadingItsNeighboursContradict(t *testing.T) {
	var p plausibility
	for _, u := range []struct {
		users int
		cpu   float64
	}{{165, 0.84}, {175, 0.86}, {195, 0.88}, {205, 0.90}} {
		o := appObservation(float64(u.users), u.cpu, 2*float64(u.users))
		require.Empty(t, p.check(u.users, "", o), "a trial in line with the others at %d users", u.users)
		p.add(u.users, "", o)
	}
	why := p.check(185, "", appObservation(185, 0.062, 370))
	assert.Contains(t, why, "app-1: cpu 0.062 at 370.0 requests/s")
	assert.Contains(t, why, "in the trials at 165-195 users: more than 4x apart")
	assert.Empty(t, p.check(185, "", appObservation(185, 0.87, 370)), "the same trial measured again")
	assert.Contains(t, p.check(185, "", appObservation(185, 0.087, 37)), "app-1: 37.0 requests/s for 185.0 pages/s", "a tenth of the requests per page, at their CPU")
	assert.Contains(t, p.check(185, "", appObservation(185, 0, 370)), "app-1: cpu 0.000", "pages served at no CPU")
	// The over-allocation effect and the CPU per page falling with load stay within bounds.
	assert.Empty(t, p.check(185, "", appObservation(185, 0.87*2.5, 370)))
	assert.Empty(t, p.check(185, "", appObservation(185, 0.87/2.5, 370)))

	var fresh plausibility
	fresh.add(10, "", appObservation(10, 0.1, 20))
	assert.Empty(t, fresh.check(20, "", appObservation(20, 0.01, 40)), "one neighbour is too few to judge")
	fresh.add(20, "", appObservation(20, 0.01, 40))
	assert.Empty(t, fresh.check(30, "", appObservation(30, 0.01, 60)), "a near-idle trial is no reference")
}

// TestPlausibilityJudgesATrialByItsOwnAllocation replays TestLiveJavaStack's
// failure: a cold JVM's trials read 0.181 CPU per request, and after the pools
// doubled the warm JVM read 0.024-0.033 at the same workload. The warm
// readings are not judged by the cold ones; among themselves they are.
func TestPlausibilityJudgesATrialByItsOwnAllocation(t *testing.T) {
	var p plausibility
	for _, users := range []int{20, 30, 40} {
		o := appObservation(float64(users), 0.181*float64(users), float64(users))
		require.Empty(t, p.check(users, "app=10", o))
		p.add(users, "app=10", o)
	}
	warm := appObservation(40, 0.028*40, 40)
	assert.Contains(t, p.check(40, "app=10", warm), "more than 4x apart", "at the cold trials' own allocation the warm reading is out of line")
	for _, users := range []int{40, 40, 40} {
		require.Empty(t, p.check(users, "app=20", warm), "the pools doubled: the cold trials are no reference")
		p.add(users, "app=20", warm)
	}
	assert.Contains(t, p.check(40, "app=20", appObservation(40, 0.181*40, 40)), "against 0.028 in the trials at 40 users",
		"the warm trials are the reference at their allocation")
}

// TestPlausibilityKeysTrialsByAllocationAndReplicas: a server's requests per
// page halve when its tier's replicas double, so trials on other replicas are
// no reference either.
func TestPlausibilityKeysTrialsByAllocationAndReplicas(t *testing.T) {
	e := func(threads, replicas int) algorithms.Experiment {
		return algorithms.Experiment{
			Deployment: algorithms.Deployment{Tiers: []algorithms.Tier{{Name: "app", Role: "app", Replicas: replicas, Cores: 1}}},
			Allocation: algorithms.Allocation{"app": {Threads: threads}},
		}
	}
	assert.Equal(t, plausibilityKey(e(10, 1)), plausibilityKey(e(10, 1)))
	assert.NotEqual(t, plausibilityKey(e(10, 1)), plausibilityKey(e(20, 1)))
	assert.NotEqual(t, plausibilityKey(e(10, 1)), plausibilityKey(e(10, 2)))
}

// TestRunExperimentMeasuresAnImplausibleTrialAgain: the runner does not
// return a trial its neighbours contradict; it measures it again, and fails
// with the figures when the reading stays implausible.
func TestRunExperimentMeasuresAnImplausibleTrialAgain(t *testing.T) {
	defer func(b time.Duration) { retryBackoff = b }(retryBackoff)
	retryBackoff = time.Millisecond
	dir := t.TempDir()
	app := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer app.Close()
	// app-1's CPU in each trial's query, in order: three in line, one broken
	// then measured again, then broken in all three attempts.
	cpus := []string{"0.5", "0.5", "0.5", "0.01", "0.5", "0.01", "0.01", "0.01"}
	var mu sync.Mutex
	prom := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.NoError(t, r.ParseForm())
		q, val := r.Form.Get("query"), ""
		switch {
		case q == "min(timestamp(up))":
			val = fmt.Sprint(time.Now().Unix() + 3600)
		case strings.Contains(q, "cpu_usage"):
			mu.Lock()
			if len(cpus) > 0 {
				val, cpus = cpus[0], cpus[1:]
			}
			mu.Unlock()
		case strings.Contains(q, "requests_total"):
			val = "100"
		}
		result := "[]"
		if val != "" {
			result = fmt.Sprintf(`[{"metric":{},"value":[%d,%q]}]`, time.Now().Unix(), val)
		}
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":%s}}`, result)
	}))
	defer prom.Close()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "w.yaml"), []byte(
		"thinkTime: {mean: 20ms}\nstart: A\ninteractions:\n  - {name: A, path: /a, next: {A: 1}}\n"), 0o644))
	sec := map[string]any{
		"target": app.URL, "prometheus": prom.URL, "workload": "w.yaml",
		"tiers": map[string]any{
			"app": map[string]any{"queries": map[string]any{"cpu": "cpu_usage", "throughput": "requests_total"}},
		},
	}
	r, err := New(sec, filepath.Join(dir, "deployment.yaml"))
	require.NoError(t, err)
	var log strings.Builder
	r.Log = &log
	r.Retries = 2
	d := algorithms.Deployment{Tiers: []algorithms.Tier{{Name: "app", Role: "app", Replicas: 1, Cores: 1}}}
	e := algorithms.Experiment{Deployment: d, Workload: algorithms.Workload{Users: 3},
		Timing: algorithms.Timing{RampUp: 50 * time.Millisecond, Runtime: 300 * time.Millisecond, RampDown: 10 * time.Millisecond}}
	for i := 0; i < 3; i++ {
		_, err := r.RunExperiment(context.Background(), e)
		require.NoError(t, err, log.String())
	}
	o, err := r.RunExperiment(context.Background(), e)
	require.NoError(t, err, log.String())
	assert.InDelta(t, 0.5, o.Servers[0].CPU, 1e-9, "the broken reading is measured again")
	assert.Contains(t, log.String(), "3 users: an implausible trial, not used: app-1: cpu 0.010")
	_, err = r.RunExperiment(context.Background(), e)
	require.Error(t, err, "broken in every attempt")
	assert.Contains(t, err.Error(), "3 users: an implausible trial, not used: app-1: cpu 0.010")
	assert.Empty(t, cpus)
}
