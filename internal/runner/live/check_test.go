package live

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/topology"
)

// A runner section's mistakes about the deployment are refused before the
// hook runs or any load starts; each was found after a whole trial, or
// never (a hook argument {web.thread} reached the hook as written).
func TestCheckExperimentBeforeAnyLoad(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hook.sh"), []byte("#!/bin/sh\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "plain.sh"), []byte("#!/bin/sh\n"), 0o644))
	e := algorithms.Experiment{Allocation: algorithms.Allocation{"web": {Threads: 400}, "app": {Threads: 150, Connections: 60}},
		Deployment: algorithms.Deployment{Topology: "shop", Tiers: []algorithms.Tier{
			{Name: "web", Role: algorithms.RoleWeb, Replicas: 1, Cores: 1, Pools: []string{"threads"}},
			{Name: "app", Role: algorithms.RoleApp, Replicas: 2, Cores: 1, Pools: []string{"threads", "connections"}},
			{Name: "db", Role: algorithms.RoleDB, Replicas: 1, Cores: 1},
		}}}
	cpu := func(q string) map[string]any { return map[string]any{"queries": map[string]any{"cpu": q}} }
	servers := []any{map[string]any{"instance": "a:1"}, map[string]any{"instance": "b:1"}}
	tiers := func(edit func(map[string]any)) map[string]any {
		ts := map[string]any{"web": cpu("web_cpu[{window}]"), "app": map[string]any{"servers": servers,
			"queries": map[string]any{"cpu": `app_cpu{instance="{instance}"}`}}, "db": cpu("db_cpu")}
		if edit != nil {
			edit(ts)
		}
		return ts
	}
	check := func(extra map[string]any) error {
		c, err := ParseConfig(section(extra), filepath.Join(dir, "deployment.yaml"))
		require.NoError(t, err)
		return (&Runner{cfg: c.withDefaults()}).CheckExperiment(e)
	}
	hook := []any{"./hook.sh", "{web.threads}", "{app.threads}-{app.connections}"}
	require.NoError(t, check(map[string]any{"tiers": tiers(nil), "hook": hook}))

	for name, c := range map[string]struct {
		extra map[string]any
		want  string
	}{
		"misspelt tier": {map[string]any{"tiers": tiers(func(ts map[string]any) { ts["dbb"] = ts["db"]; delete(ts, "db") })},
			"runner section: tiers.dbb: no such tier in the deployment (its tiers: web, app, db)"},
		"a tier left out": {map[string]any{"tiers": tiers(func(ts map[string]any) { delete(ts, "db") })},
			"runner section: tiers.db: missing"},
		"placeholder typo": {map[string]any{"tiers": tiers(func(ts map[string]any) { ts["web"] = cpu("web_cpu[{windw}]") })},
			"runner section: tiers.web: cpu of web-1: {windw} has no value; the placeholders are {cores}, {server}, {tier}, {window}"},
		"a server short": {map[string]any{"tiers": tiers(func(ts map[string]any) {
			ts["app"] = map[string]any{"servers": servers[:1], "queries": map[string]any{"cpu": "app_cpu"}}
		})}, "runner section: tiers.app.servers: 1 entries for 2 replicas"},
		"hook placeholder typo": {map[string]any{"tiers": tiers(nil), "hook": []any{"./hook.sh", "{web.thread}"}},
			`runner section: hook: hook argument "{web.thread}": the allocation sets no {web.thread} (it sets {app.connections}, {app.threads}, {web.threads})`},
		"hook placeholder not closed": {map[string]any{"tiers": tiers(nil), "hook": []any{"./hook.sh", "{web.threads"}},
			`runner section: hook: hook argument "{web.threads": a placeholder {web.threads is not closed; want {web.threads}`},
		"hook not executable": {map[string]any{"tiers": tiers(nil), "hook": []any{"./plain.sh"}},
			"runner section: hook[0]: " + filepath.Join(dir, "plain.sh") + " is not an executable file"},
		"hook missing": {map[string]any{"tiers": tiers(nil), "hook": []any{"./nohook.sh"}}, "no such file or directory"},
		"hook not on PATH": {map[string]any{"tiers": tiers(nil), "hook": []any{"no-such-hook-program"}},
			`runner section: hook[0]: "no-such-hook-program" is not a program on $PATH`},
	} {
		err := check(c.extra)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), c.want, name)
	}
}

// Times the runner cannot keep are refused with the section: an interval
// of 1ns ran it out of memory, and two timeouts of 6e9 s overflowed a sum.
func TestTimesTheRunnerCannotKeep(t *testing.T) {
	for extra, want := range map[string]string{
		"1ns":         "interval: want at least 10ms, got 1ns",
		"6000000000s": "hookTimeout: want a duration >= 0 and at most 1000h0m0s, got 6e+09 seconds",
	} {
		sec := map[string]any{"interval": extra}
		if extra == "6000000000s" {
			sec = map[string]any{"hookTimeout": extra}
		}
		_, err := ParseConfig(section(sec), "d.yaml")
		require.Error(t, err, extra)
		assert.Contains(t, err.Error(), want)
	}
	_, err := ParseConfig(section(map[string]any{"interval": "10ms", "runtime": "10h"}), "d.yaml")
	assert.ErrorContains(t, err, "rampUp + runtime: at most 1000000 intervals of 10ms, got 10h0m0s")
}

// The repository's own deployment files pass the check (the testbed's e2e
// tests would otherwise fail before their first trial).
func TestRepositoryDeploymentFilesPassTheCheck(t *testing.T) {
	for _, name := range []string{"deployment.yaml", "deployment-java.yaml", "deployment-java-vthreads.yaml", "deployment-wordpress.yaml", "deployment-pgbouncer.yaml"} {
		path := filepath.Join("..", "..", "..", "testbed", name)
		df, err := topology.LoadDeployment(path)
		require.NoError(t, err, name)
		r, err := New(df.Runner, path)
		require.NoError(t, err, name)
		e := algorithms.Experiment{Deployment: df.Deployment, Allocation: df.Allocation}
		assert.NoError(t, r.CheckExperiment(e), name)
		assert.NoError(t, r.CheckSizing(e, "recommend"), name)
	}
}

// Issue 40: recommend ran three trials and then failed in its sizing
// (tier "db": responseTime: want a finite number > 0, got 0): the mysql
// preset has no latency, and the check before any load asked for a cpu
// query only. A command that sizes pools from every tier's throughput and
// response time is refused before the first trial; find-critical, which
// reads the CPUs alone, still runs on the same section.
func TestSizingNeedsEveryTiersLatencyBeforeAnyLoad(t *testing.T) {
	e := algorithms.Experiment{Allocation: algorithms.Allocation{"web": {Threads: 100}, "app": {Threads: 20, Connections: 10}},
		Deployment: algorithms.Deployment{Topology: "stack", Tiers: []algorithms.Tier{
			{Name: "web", Role: algorithms.RoleWeb, Replicas: 1, Cores: 1, Pools: []string{"threads"}},
			{Name: "app", Role: algorithms.RoleApp, Replicas: 1, Cores: 1, Pools: []string{"threads", "connections"}},
			{Name: "db", Role: algorithms.RoleDB, Replicas: 1, Cores: 1},
		}}}
	// A host each: two tiers on one host's CPU are refused (TestTwoTiersReadingOneCPUAreRefused).
	tierOn := func(host string, queries map[string]any, presets ...any) map[string]any {
		server := []any{map[string]any{"instance": host + ":1", "node": host + ":9100"}}
		return map[string]any{"presets": append([]any{"node"}, presets...), "servers": server, "queries": queries}
	}
	tier := func(queries map[string]any, presets ...any) map[string]any { return tierOn("db", queries, presets...) }
	runner := func(db map[string]any) *Runner {
		c, err := ParseConfig(section(map[string]any{"tiers": map[string]any{
			"web": tierOn("web", nil, "apache"), "app": tierOn("app", nil, "bboard"), "db": db}}), "deployment.yaml")
		require.NoError(t, err)
		return &Runner{cfg: c.withDefaults()}
	}

	mysqlOnly := runner(tier(nil, "mysql"))
	require.NoError(t, mysqlOnly.CheckExperiment(e), "find-critical reads the CPUs alone")
	err := mysqlOnly.CheckSizing(e, "recommend")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "runner section: tiers.db: recommend needs its responseTime, which its presets (node, mysql) do not read: set queries.responseTime")
	_, give, ok := strings.Cut(err.Error(), "presets that read it: ")
	require.True(t, ok, "the presets that would give it")
	give, _, _ = strings.Cut(give, ";")
	for _, p := range []string{"apache", "bboard", "tomcat"} {
		assert.Contains(t, strings.Split(give, ", "), p)
	}
	assert.NotContains(t, strings.Split(give, ", "), "mysql")
	assert.Contains(t, err.Error(), "mysql_perf_schema_events_statements_seconds_total", "a database's own latency")

	err = runner(tier(map[string]any{"responseTime": "db_seconds / db_queries"})).CheckSizing(e, "validate")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "runner section: tiers.db: validate needs its throughput, which its presets (node) do not read: set queries.throughput")

	withLatency := runner(tier(map[string]any{"responseTime": "db_seconds / db_queries"}, "mysql"))
	assert.NoError(t, withLatency.CheckSizing(e, "recommend"))
}

// Two tiers reading one CPU are refused before any load: a PgBouncer given
// its database host's CPU read the database's utilisation, and find-critical
// named the pooler's CPU (the first tier of the chain) where the database
// saturated. The replicas of one tier may share a query.
func TestTwoTiersReadingOneCPUAreRefused(t *testing.T) {
	e := algorithms.Experiment{Allocation: algorithms.Allocation{"app": {Threads: 20, Connections: 10}},
		Deployment: algorithms.Deployment{Topology: "pg", Tiers: []algorithms.Tier{
			{Name: "app", Role: algorithms.RoleApp, Replicas: 2, Cores: 1, Pools: []string{"threads", "connections"}},
			{Name: "pooler", Role: algorithms.RolePooler, Replicas: 1, Cores: 1},
			{Name: "db", Role: algorithms.RoleDB, Replicas: 1, Cores: 1},
		}}}
	runner := func(poolerNode string) *Runner {
		tier := func(node string, replicas int) map[string]any {
			var servers []any
			for range replicas {
				servers = append(servers, map[string]any{"node": node})
			}
			return map[string]any{"presets": []any{"node"}, "servers": servers}
		}
		c, err := ParseConfig(section(map[string]any{"tiers": map[string]any{
			"app": tier("app:9100", 2), "pooler": tier(poolerNode, 1), "db": tier("db:9100", 1)}}), "deployment.yaml")
		require.NoError(t, err)
		return &Runner{cfg: c.withDefaults()}
	}
	require.NoError(t, runner("pooler:9100").CheckExperiment(e), "a host each; the app's two replicas share one query")
	shared := runner("db:9100")
	// advise's windows too, before any query is sent.
	now := time.Now()
	_, windowsErr := shared.Windows(context.Background(), e.Deployment, now.Add(-10*time.Minute), now, 5*time.Second)
	for _, err := range []error{shared.CheckExperiment(e), windowsErr} {
		require.Error(t, err)
		assert.Contains(t, err.Error(), "runner section: tiers.pooler and tiers.db: cpu of pooler-1 and db-1 is one query (")
		assert.Contains(t, err.Error(), `db:9100`)
		assert.Contains(t, err.Error(), "softalloc cannot tell which tier saturates a resource two tiers share")
	}
}

// A constant (a tier with no CPU source of its own) names no metric, so
// two tiers may share it; a selector or a range names one (metricNames:
// a bare name such as up is not told from a function without a parser).
func TestAConstantNamesNoMetric(t *testing.T) {
	for q, want := range map[string]bool{
		"vector(0)": false, "vector(0.5)": false, "0": false, "clamp_max(vector(1), 0.5)": false,
		`node_cpu_seconds_total{mode="idle"}`: true, "sum(rate(cpu_seconds[5m])) / 2": true,
	} {
		assert.Equal(t, want, len(metricNames(q)) > 0, q)
	}
}
