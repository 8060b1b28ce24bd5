package live

import (
	"context"
	"encoding/json"
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
)

// fakePrometheus answers instant queries from a table of substrings; the
// scrape-freshness query always says every target is fresh.
func fakePrometheus(t *testing.T, answers map[string]string) (*httptest.Server, *[]string) {
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.NoError(t, r.ParseForm())
		q := r.Form.Get("query")
		seen = append(seen, q)
		val := ""
		if q == "min(timestamp(up))" {
			val = fmt.Sprint(time.Now().Unix() + 3600)
		}
		for k, v := range answers {
			if strings.Contains(q, k) {
				val = v
			}
		}
		result := "[]"
		if val != "" {
			result = fmt.Sprintf(`[{"metric":{},"value":[%d,%q]}]`, time.Now().Unix(), val)
		}
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":%s}}`, result)
	}))
	t.Cleanup(srv.Close)
	return srv, &seen
}

func TestRunExperiment(t *testing.T) {
	dir := t.TempDir()
	// Unhealthy until the hook has run: the trial must wait for the health URL.
	var healthChecks atomic.Int32
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			healthChecks.Add(1)
			if _, err := os.Stat(filepath.Join(dir, "applied")); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		}
	}))
	defer app.Close()
	prom, seen := fakePrometheus(t, map[string]string{
		`cpu_usage{tier="web"}`: "0.2", `cpu_usage{tier="app"}`: "1.02", `cpu_usage{tier="db"}`: "0.4",
		"pages_total": "150", "page_seconds": "0.05", "busy_threads": "7.5", "size_threads": "20", "full_threads": "0.3",
		"throttled_periods": "0.97",
	})
	require.NoError(t, os.WriteFile(filepath.Join(dir, "w.yaml"), []byte(
		"thinkTime: {mean: 20ms}\nstart: A\ninteractions:\n  - {name: A, path: /a, embedded: [/logo], next: {A: 1}}\n"), 0o644))
	// The hook records its argv, which makes the deployment healthy.
	hook := filepath.Join(dir, "hook.sh")
	require.NoError(t, os.WriteFile(hook, []byte("#!/bin/sh\necho \"$@\" >> applied\n"), 0o755))
	sec := map[string]any{
		"target": app.URL, "prometheus": prom.URL, "health": app.URL + "/health", "workload": "w.yaml",
		"hook": []any{"./hook.sh", "{web.threads}", "{app.threads}-{app.connections}"},
		"tiers": map[string]any{
			"web": map[string]any{"queries": map[string]any{"cpu": `cpu_usage{tier="{tier}"}[{window}]`}},
			"app": map[string]any{"queries": map[string]any{
				"cpu": `cpu_usage{tier="{tier}"}`, "throughput": "pages_total{instance=\"{instance}\"}", "responseTime": "page_seconds",
				"pools": map[string]any{"threads": map[string]any{"busy": "busy_threads", "size": "size_threads", "fullShare": "full_threads"},
					"connections": map[string]any{"busy": "busy_connections"}}},
				"servers": []any{map[string]any{"instance": "app:1"}}},
			"db": map[string]any{"queries": map[string]any{"cpu": `cpu_usage{tier="{tier}"}`, "throttled": `throttled_periods{tier="{tier}"}`}},
		},
	}
	r, err := New(sec, filepath.Join(dir, "deployment.yaml"))
	require.NoError(t, err)
	var log strings.Builder
	r.Log = &log
	d := algorithms.Deployment{Tiers: []algorithms.Tier{
		{Name: "web", Role: "web", Replicas: 1, Cores: 1, Pools: []string{"threads"}},
		{Name: "app", Role: "app", Replicas: 1, Cores: 1, Pools: []string{"threads", "connections"}},
		{Name: "db", Role: "db", Replicas: 1, Cores: 1},
	}}
	e := algorithms.Experiment{Deployment: d, Workload: algorithms.Workload{Users: 5},
		Allocation: algorithms.Allocation{"web": {Threads: 100}, "app": {Threads: 20, Connections: 10}},
		Timing:     algorithms.Timing{RampUp: 100 * time.Millisecond, Runtime: 700 * time.Millisecond, RampDown: 50 * time.Millisecond}}

	obs, err := r.RunExperiment(context.Background(), e)
	require.NoError(t, err, log.String())
	assert.Positive(t, healthChecks.Load())
	require.NoError(t, obs.Validate())
	applied, err := os.ReadFile(filepath.Join(dir, "applied"))
	require.NoError(t, err)
	assert.Equal(t, "100 20-10\n", string(applied), "the hook gets the pool sizes")

	assert.InDelta(t, 0.7, obs.RuntimeSeconds, 1e-6)
	assert.Positive(t, obs.Throughput)
	assert.Zero(t, obs.Errors)
	require.Len(t, obs.Servers, 3)
	web, app1, db := obs.Servers[0], obs.Servers[1], obs.Servers[2]
	assert.Equal(t, "web-1", web.Name)
	assert.InDelta(t, 0.2, web.CPU, 1e-9)
	assert.InDelta(t, 1.0, app1.CPU, 1e-9, "a rate's overshoot is clamped to 1")
	assert.InDelta(t, 150, app1.Throughput, 1e-9)
	assert.InDelta(t, 0.05, app1.ResponseTime, 1e-9)
	require.Len(t, app1.Pools, 2)
	assert.Equal(t, algorithms.PoolObservation{Name: "connections", Size: 10, Busy: 0, FullShare: -1}, app1.Pools[0],
		"no size query: the allocation's size; no series: 0 busy; no fullShare query: unknown")
	assert.Equal(t, algorithms.PoolObservation{Name: "threads", Size: 20, Busy: 7.5, FullShare: 0.3}, app1.Pools[1])
	assert.InDelta(t, 0.4, db.CPU, 1e-9)
	assert.InDelta(t, 0.97, db.Throttled, 1e-9)
	assert.Zero(t, web.Throttled, "no throttled query: not measured")
	assert.Contains(t, *seen, `cpu_usage{tier="web"}[700ms]`, "placeholders are substituted")
	assert.Contains(t, *seen, `pages_total{instance="app:1"}`)

	// The same allocation again: the hook does not run a second time.
	_, err = r.RunExperiment(context.Background(), e)
	require.NoError(t, err)
	applied, _ = os.ReadFile(filepath.Join(dir, "applied"))
	assert.Equal(t, "100 20-10\n", string(applied))

	s := r.Settings()
	assert.Equal(t, app.URL, s["target"])
	assert.Regexp(t, `^w\.yaml@[0-9a-f]{12}$`, s["workload"])
	js, _ := json.Marshal(s)
	assert.NotContains(t, string(js), "password")
}

func TestNewRefusesNonLoopback(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "w.yaml"), []byte(
		"thinkTime: {mean: 1s}\nstart: A\ninteractions:\n  - {name: A, path: /a}\n"), 0o644))
	sec := map[string]any{"target": "http://192.0.2.10:8080", "prometheus": "http://127.0.0.1:9090", "workload": "w.yaml"}
	_, err := New(sec, filepath.Join(dir, "d.yaml"))
	require.ErrorContains(t, err, "not a loopback address")
	sec["allowedHosts"] = []any{"192.0.2.0/24"}
	_, err = New(sec, filepath.Join(dir, "d.yaml"))
	require.NoError(t, err, "a host the file lists is allowed")
}

func TestHookArgv(t *testing.T) {
	a := algorithms.Allocation{"web": {Threads: 400}, "app": {Threads: 15, Connections: 8}}
	got, err := hookArgv([]string{"apply", "--web={web.threads}", "{app.threads}", "{app.connections}", "{keep}"}, a)
	require.NoError(t, err)
	assert.Equal(t, []string{"apply", "--web=400", "15", "8", "{keep}"}, got)
	_, err = hookArgv([]string{"{db.threads}"}, a)
	assert.ErrorContains(t, err, "sets no {db.threads}")
	// A misspelt pool is refused, not passed to the hook as written.
	_, err = hookArgv([]string{"{web.thread}"}, a)
	assert.ErrorContains(t, err, "sets no {web.thread}")
	// Issue 35: an unclosed one reached the hook as written.
	for _, arg := range []string{"{web.threads", "--web={web.threads,{app.threads}", "{app.connections }"} {
		_, err = hookArgv([]string{"apply", arg}, a)
		assert.ErrorContains(t, err, fmt.Sprintf("hook argument %q: a placeholder {", arg), arg)
		assert.ErrorContains(t, err, "not closed", arg)
	}
}

// Issue 25: with every page refused the trial reported throughput 0 and was
// journaled, so find-critical said throughput stopped growing at 5 users.
// An outage is a failed experiment, retried and reported.
func TestAnOutageIsNotAMeasurement(t *testing.T) {
	dir := t.TempDir()
	var pages atomic.Int32
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			return
		}
		pages.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer app.Close()
	prom, _ := fakePrometheus(t, map[string]string{"cpu_usage": "0.1"})
	require.NoError(t, os.WriteFile(filepath.Join(dir, "w.yaml"), []byte(
		"thinkTime: {mean: 20ms}\nstart: A\ninteractions:\n  - {name: A, path: /a, next: {A: 1}}\n"), 0o644))
	sec := map[string]any{"target": app.URL, "prometheus": prom.URL, "health": app.URL + "/health", "workload": "w.yaml",
		"tiers": map[string]any{"web": map[string]any{"queries": map[string]any{"cpu": "cpu_usage"}}}}
	r, err := New(sec, filepath.Join(dir, "deployment.yaml"))
	require.NoError(t, err)
	r.Retries = 1
	d := algorithms.Deployment{Tiers: []algorithms.Tier{{Name: "web", Role: "web", Replicas: 1, Cores: 1}}}
	e := algorithms.Experiment{Deployment: d, Workload: algorithms.Workload{Users: 5},
		Timing: algorithms.Timing{RampUp: 50 * time.Millisecond, Runtime: 300 * time.Millisecond}}
	_, err = r.RunExperiment(context.Background(), e)
	require.Error(t, err)
	assert.Regexp(t, `[0-9]+ of [0-9]+ pages to http://127.0.0.1:[0-9]+ failed in the window \(100%: 0 refused, 0 timed out, [0-9]+ 5xx, 0 other\), more than maxErrorShare 50%`, err.Error())
	assert.Positive(t, pages.Load())

	// A share the user allows is a measurement, with its errors counted.
	sec["maxErrorShare"] = 1.0
	r, err = New(sec, filepath.Join(dir, "deployment.yaml"))
	require.NoError(t, err)
	obs, err := r.RunExperiment(context.Background(), e)
	require.NoError(t, err)
	assert.Positive(t, obs.Errors)
	assert.Zero(t, obs.Throughput)

	sec["maxErrorShare"] = 1.5
	_, err = New(sec, filepath.Join(dir, "deployment.yaml"))
	assert.ErrorContains(t, err, "maxErrorShare: want a share in [0,1]")
}

// Reading recorded metrics needs only Prometheus, and such a runner runs no trial.
func TestPassiveRunnerRunsNoExperiment(t *testing.T) {
	r, err := NewPassive(map[string]any{"prometheus": "http://127.0.0.1:9090"}, "d.yaml")
	require.NoError(t, err)
	_, err = r.RunExperiment(context.Background(), algorithms.Experiment{Workload: algorithms.Workload{Users: 1}})
	assert.ErrorContains(t, err, "reads recorded metrics only")
	_, err = NewPassive(map[string]any{"prometheus": "http://192.0.2.1:9090"}, "d.yaml")
	assert.ErrorContains(t, err, "allowedHosts", "Prometheus elsewhere must be listed")
	_, err = NewPassive(map[string]any{"target": "http://127.0.0.1:1"}, "d.yaml")
	assert.ErrorContains(t, err, "prometheus: missing")
}

// A failure names what the user can look at: the hook's last output, the
// health endpoint's answer, and a prometheus URL that is not Prometheus.
func TestFailuresSayWhatTheyGot(t *testing.T) {
	dir := t.TempDir()
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "db down")
		}
	}))
	defer app.Close()
	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "<html><body>Grafana</body></html>")
	}))
	defer html.Close()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "w.yaml"), []byte(
		"thinkTime: {mean: 20ms}\nstart: A\ninteractions:\n  - {name: A, path: /a, next: {A: 1}}\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "fail.sh"), []byte("#!/bin/sh\necho applying\necho cannot write httpd.conf >&2\nexit 3\n"), 0o755))
	d := algorithms.Deployment{Tiers: []algorithms.Tier{{Name: "web", Role: "web", Replicas: 1, Cores: 1, Pools: []string{"threads"}}}}
	e := algorithms.Experiment{Deployment: d, Allocation: algorithms.Allocation{"web": {Threads: 10}}, Workload: algorithms.Workload{Users: 2},
		Timing: algorithms.Timing{RampUp: 50 * time.Millisecond, Runtime: 300 * time.Millisecond}}
	run := func(extra map[string]any) error {
		sec := map[string]any{"target": app.URL, "prometheus": html.URL, "workload": "w.yaml", "healthTimeout": "300ms",
			"tiers": map[string]any{"web": map[string]any{"queries": map[string]any{"cpu": "cpu_usage"}}}}
		for k, v := range extra {
			sec[k] = v
		}
		r, err := New(sec, filepath.Join(dir, "deployment.yaml"))
		require.NoError(t, err)
		r.Retries = 0
		_, err = r.RunExperiment(context.Background(), e)
		require.Error(t, err)
		return err
	}
	assert.ErrorContains(t, run(map[string]any{"hook": []any{"./fail.sh", "{web.threads}"}}),
		"hook ./fail.sh 10: exit status 3; its last output: applying | cannot write httpd.conf")
	assert.ErrorContains(t, run(map[string]any{"health": app.URL + "/health"}), `status 503 Service Unavailable: "db down"`)
	assert.ErrorContains(t, run(nil), "did not answer as Prometheus's HTTP API does (is it the Prometheus URL?)")
}

// Issue 35: a cpu query in cores (rate(process_cpu_seconds_total) on a
// 4-core host) read 1.0, and +Inf or a negative value read 0, without a
// word. A utilisation outside [0, 1] by more than rate()'s jitter fails the
// trial, naming the query and the value; within it, it is clipped.
func TestUtilisationsOutOfRangeFailTheTrial(t *testing.T) {
	dir := t.TempDir()
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer app.Close()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "w.yaml"), []byte(
		"thinkTime: {mean: 20ms}\nstart: A\ninteractions:\n  - {name: A, path: /a, next: {A: 1}}\n"), 0o644))
	d := algorithms.Deployment{Tiers: []algorithms.Tier{{Name: "web", Role: "web", Replicas: 1, Cores: 4}}}
	e := algorithms.Experiment{Deployment: d, Workload: algorithms.Workload{Users: 2},
		Timing: algorithms.Timing{RampUp: 50 * time.Millisecond, Runtime: 200 * time.Millisecond}}
	run := func(answers map[string]string) (algorithms.Observation, error) {
		all := map[string]string{"cpu_cores": "0.5", "disk_util": "0.3", "web_tput": "10", "web_rt": "0.1"}
		for k, v := range answers {
			all[k] = v
		}
		prom, _ := fakePrometheus(t, all)
		sec := map[string]any{"target": app.URL, "prometheus": prom.URL, "workload": "w.yaml",
			"tiers": map[string]any{"web": map[string]any{"queries": map[string]any{"cpu": "cpu_cores", "gcShare": "gc_share",
				"throughput": "web_tput", "responseTime": "web_rt", "resources": map[string]any{"disk": "disk_util"}}}}}
		r, err := New(sec, filepath.Join(dir, "deployment.yaml"))
		require.NoError(t, err)
		return r.RunExperiment(context.Background(), e)
	}
	for _, c := range []struct {
		answers map[string]string
		want    string
	}{
		{map[string]string{"cpu_cores": "3.2"}, "web-1: cpu: query cpu_cores read 3.2, not a share in [0, 1]"},
		{map[string]string{"cpu_cores": "3.2"}, "divide it by {cores} (4 here)"},
		{map[string]string{"cpu_cores": "+Inf"}, "query cpu_cores read +Inf"},
		{map[string]string{"cpu_cores": "-0.5"}, "query cpu_cores read -0.5"},
		{map[string]string{"gc_share": "1.2"}, "web-1: gcShare: query gc_share read 1.2"},
		{map[string]string{"disk_util": "7"}, "web-1: resources.disk: query disk_util read 7"},
		// Read as 0, a negative rate said "no pages served" of a server that served them.
		{map[string]string{"web_tput": "-3"}, "web-1: throughput: query web_tput read -3: want a number >= 0"},
		{map[string]string{"web_rt": "-0.2"}, "web-1: responseTime: query web_rt read -0.2"},
	} {
		_, err := run(c.answers)
		require.Error(t, err, c.answers)
		assert.Contains(t, err.Error(), c.want)
	}
	// rate()'s jitter: a little over 1 (or under 0) is clipped.
	obs, err := run(map[string]string{"cpu_cores": "1.04", "gc_share": "-0.01", "disk_util": "0.3"})
	require.NoError(t, err)
	require.Len(t, obs.Servers, 1)
	assert.Equal(t, 1.0, obs.Servers[0].CPU)
	assert.Equal(t, 0.0, obs.Servers[0].GCShare)
	assert.InDelta(t, 0.3, obs.Servers[0].Resources["disk"], 1e-9)
}

// TestTheHookDoesNotInheritThePushgatewayPassword: the hook, a program the
// deployment's owner wrote that may log its environment, gets softalloc's
// environment without its secrets, as the exec runner's program does.
func TestTheHookDoesNotInheritThePushgatewayPassword(t *testing.T) {
	t.Setenv("SOFTALLOC_PUSHGATEWAY_PASSWORD", "s3cret")
	t.Setenv("SOFTALLOC_TEST_VISIBLE", "kept")
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "w.yaml"), []byte(
		"thinkTime: {mean: 20ms}\nstart: A\ninteractions:\n  - {name: A, path: /a, next: {A: 1}}\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hook.sh"), []byte("#!/bin/sh\nenv > env.txt\n"), 0o755))
	sec := map[string]any{
		"target": "http://127.0.0.1:1", "prometheus": "http://127.0.0.1:1", "workload": "w.yaml", "hook": []any{"./hook.sh", "{app.threads}"},
		"tiers": map[string]any{"app": map[string]any{"queries": map[string]any{"cpu": "cpu_usage"}}},
	}
	r, err := New(sec, filepath.Join(dir, "deployment.yaml"))
	require.NoError(t, err)
	require.NoError(t, r.apply(context.Background(), algorithms.Allocation{"app": {Threads: 5}}))
	env, err := os.ReadFile(filepath.Join(dir, "env.txt"))
	require.NoError(t, err)
	assert.Contains(t, string(env), "SOFTALLOC_TEST_VISIBLE=kept")
	assert.NotContains(t, string(env), "s3cret")
}
