package discover

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/internal/promtest"
	"github.com/softalloc/softalloc/internal/runner/live"
	"github.com/softalloc/softalloc/internal/topology"
)

// exporter serves a fixed exposition, as an exporter of that software would.
func exporter(t *testing.T, text string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprint(w, text)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// prometheusScraping starts Debian's prometheus scraping the targets (host:port) every second.
func prometheusScraping(t *testing.T, targets ...string) string {
	t.Helper()
	urls := make([]string, len(targets))
	for i, tg := range targets {
		urls[i] = "http://" + tg
	}
	return promtest.Scraping(t, "the test of init against a real Prometheus", time.Second, 2*time.Second, urls...)
}

const (
	apacheText = `apache_up 1
apache_accesses_total 120
apache_workers{state="busy"} 1
apache_workers{state="idle"} 99
`
	javaText = `tomcat_threads_config_max_threads{name="http-nio-18081"} 20
tomcat_threads_busy_threads{name="http-nio-18081"} 0
hikaricp_connections_max{pool="HikariPool-1"} 10
jvm_gc_pause_seconds_count{action="end of minor GC",cause="G1 Evacuation Pause"} 3
bboard_db_queries_total 50
bboard_db_query_duration_seconds_count 50
bboard_db_query_duration_seconds_sum 0.2
`
	mysqlText  = "mysql_up 1\nmysql_global_variables_max_connections 151\n"
	cgroupText = `softalloc_testbed_cpu_usage_seconds_total{tier="web"} 1
softalloc_testbed_cpu_usage_seconds_total{tier="app"} 2
softalloc_testbed_cpu_usage_seconds_total{tier="db"} 3
`
)

// The Java testbed's exporters, as its Prometheus scrapes them: init
// proposes its hand-written file's tiers, presets, servers and pools, and
// the file it writes loads as a deployment once the user gives a target and
// a workload.
func TestInitProposesTheJavaTestbedsTiers(t *testing.T) {
	t.Parallel()
	web, app, db, cg := exporter(t, apacheText), exporter(t, javaText), exporter(t, mysqlText), exporter(t, cgroupText)
	prom := prometheusScraping(t, web, app, db, cg)

	p, err := Discover(context.Background(), prom, nil)
	require.NoError(t, err)
	require.Len(t, p.Tiers, 3)
	assert.Equal(t, []string{"web", "app", "db"}, []string{p.Tiers[0].Name, p.Tiers[1].Name, p.Tiers[2].Name})
	assert.Equal(t, []string{"cgroup", "apache"}, p.Tiers[0].Presets)
	assert.Equal(t, []string{"jvm", "cgroup", "tomcat", "hikari"}, p.Tiers[1].Presets)
	assert.Equal(t, []string{"cgroup", "mysql"}, p.Tiers[2].Presets)
	assert.Equal(t, []string{"apache", "tomcat", "mysql"}, []string{p.Tiers[0].Deploys, p.Tiers[1].Deploys, p.Tiers[2].Deploys})
	assert.Empty(t, p.Tiers[2].Pools, "max_connections is sized only behind php-fpm")
	assert.Equal(t, map[string]int{"threads": 100}, p.Tiers[0].Pools)
	assert.Equal(t, map[string]int{"threads": 20, "connections": 10}, p.Tiers[1].Pools)
	assert.Equal(t, []map[string]string{{"instance": app}}, p.Tiers[1].Servers)
	assert.Contains(t, p.Tiers[2].Queries["responseTime"], "bboard_db_query_duration_seconds_sum")
	assert.Empty(t, p.Decide)

	dir := t.TempDir()
	file := filepath.Join(dir, "deployment.yaml")
	require.NoError(t, os.WriteFile(file, Render(p, Settings{Name: "java", Target: "http://127.0.0.1:1", Workload: "w.yaml"}), 0o644))
	d, err := topology.LoadDeployment(file)
	require.NoError(t, err)
	assert.Equal(t, 20, d.Allocation["app"].Threads)
	assert.Equal(t, 10, d.Allocation["app"].Connections)
	assert.Equal(t, 100, d.Allocation["web"].Threads)
	assert.Equal(t, "live", d.Runner["name"])
}

// Without the testbed's cgroup exporter, a host's node_exporter is each
// tier's CPU only when no other tier shares the host; a tier without CPU,
// a db without latency and a target that is down are named for the user.
func TestInitSaysWhatTheUserMustDecide(t *testing.T) {
	t.Parallel()
	web, db := exporter(t, apacheText), exporter(t, mysqlText)
	// A port nothing listens on: a target that is down.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	down := ln.Addr().String()
	require.NoError(t, ln.Close())
	prom := prometheusScraping(t, web, db, down)

	p, err := Discover(context.Background(), prom, nil)
	require.NoError(t, err)
	require.Len(t, p.Tiers, 2)
	decide := strings.Join(p.Decide, "\n")
	assert.Contains(t, decide, "tier web: no CPU source found")
	assert.Contains(t, decide, "tier db: no throughput and response time")
	out := string(Render(p, Settings{}))
	assert.Contains(t, out, "# DECIDE: the base URL the load goes to")
	assert.Contains(t, out, `target: ""`, "a missing target is one the runner refuses, not a guess")
	assert.Contains(t, out, down+" ", "the down target is listed")
}

// A Prometheus that scrapes nothing softalloc reads is an error that says so.
func TestInitRefusesAPrometheusWithNoServers(t *testing.T) {
	t.Parallel()
	prom := prometheusScraping(t, exporter(t, "some_metric 1\n"))
	_, err := Discover(context.Background(), prom, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "none of the 1 targets runs a server softalloc knows")
}

// A database with no app timing its queries gets its latency from the
// database itself: performance_schema's digests, or MariaDB's user
// statistics of the application's users (the exporter's own left out).
func TestInitReadsTheDatabasesOwnLatency(t *testing.T) {
	t.Parallel()
	userstat := mysqlText + `mysql_info_schema_user_statistics_select_commands_total{user="wordpress"} 100
mysql_info_schema_user_statistics_select_commands_total{user="exporter"} 7
`
	digests := mysqlText + `mysql_perf_schema_events_statements_total{schema="shop",digest="abc",digest_text="SELECT ?"} 40
`
	for name, tc := range map[string]struct {
		text, preset, dbUser string
	}{
		"userstat":   {userstat, "mysql-userstat", "wordpress"},
		"perfschema": {digests, "mysql-perfschema", ""},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			prom := prometheusScraping(t, exporter(t, apacheText), exporter(t, tc.text))
			p, err := Discover(context.Background(), prom, nil)
			require.NoError(t, err)
			require.Len(t, p.Tiers, 2)
			db := p.Tiers[1]
			assert.Equal(t, []string{"mysql", tc.preset}, db.Presets)
			assert.Equal(t, tc.dbUser, db.Servers[0]["dbUser"])
			assert.NotContains(t, strings.Join(p.Decide, "\n"), "tier db: no throughput")
		})
	}
}

// php-fpm's status page makes a children tier, and the database behind it
// gets its max_connections as the pool that follows from the children.
func TestInitProposesAPHPStack(t *testing.T) {
	t.Parallel()
	phpfpm := "phpfpm_up 1\nphpfpm_total_processes 20\nphpfpm_active_processes 1\nphpfpm_accepted_connections 9\n"
	mariadb := mysqlText + `mysql_version_info{innodb_version="10.11.14",version="10.11.14-MariaDB-0+deb12u2",version_comment="Debian 12"} 1
`
	prom := prometheusScraping(t, exporter(t, apacheText), exporter(t, phpfpm), exporter(t, mariadb))
	p, err := Discover(context.Background(), prom, nil)
	require.NoError(t, err)
	require.Len(t, p.Tiers, 3)
	assert.Equal(t, []string{"apache", "php-fpm", "mariadb"}, []string{p.Tiers[0].Deploys, p.Tiers[1].Deploys, p.Tiers[2].Deploys})
	assert.Equal(t, map[string]int{"children": 20}, p.Tiers[1].Pools)
	assert.Equal(t, []string{"phpfpm"}, p.Tiers[1].Presets)
	assert.Equal(t, map[string]int{"connections": 151}, p.Tiers[2].Pools)

	file := filepath.Join(t.TempDir(), "deployment.yaml")
	require.NoError(t, os.WriteFile(file, Render(p, Settings{Target: "http://127.0.0.1:1", Workload: "w.yaml"}), 0o644))
	d, err := topology.LoadDeployment(file)
	require.NoError(t, err, "%s", Render(p, Settings{}))
	assert.Equal(t, 20, d.Allocation["app"].Threads, "children are the model's threads")
	assert.True(t, d.Deployment.Tiers[1].Children)
	assert.Equal(t, 151, d.Allocation["db"].Connections)
}

// A PostgreSQL tier's busy backends are its application's databases'
// (the postgres preset's {dbName}): init names every database but
// PostgreSQL's own (postgres, where Debian's exporter connects, and the
// templates), or asks the user when there is none, so that the file never
// counts the exporter's backends nor leaves {dbName} without a value unsaid.
func TestInitNamesPostgreSQLsApplicationDatabases(t *testing.T) {
	t.Parallel()
	pg := "pg_up 1\npg_settings_max_connections 100\n"
	for _, db := range []string{"postgres", "template0", "template1"} {
		pg += fmt.Sprintf("pg_stat_activity_count{datname=%q,state=\"active\"} 1\n", db)
	}
	apps := pg + "pg_stat_activity_count{datname=\"shop\",state=\"active\"} 3\npg_stat_activity_count{datname=\"reports\",state=\"idle\"} 0\n"
	for name, tc := range map[string]struct{ text, dbName string }{
		"apps": {apps, "reports|shop"},
		"none": {pg, ""},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			prom := prometheusScraping(t, exporter(t, apacheText), exporter(t, tc.text))
			p, err := Discover(context.Background(), prom, nil)
			require.NoError(t, err)
			require.Len(t, p.Tiers, 2)
			db := p.Tiers[1]
			require.Equal(t, "postgres", db.Software)
			require.Contains(t, db.Presets, "postgres")
			decide := strings.Join(p.Decide, "\n")
			if tc.dbName == "" {
				assert.NotContains(t, db.Servers[0], "dbName", "no database to guess: the runner refuses the file rather than count none")
				assert.Contains(t, decide, "tier db: no application database")
				return
			}
			assert.Equal(t, tc.dbName, db.Servers[0]["dbName"])
			assert.Contains(t, strings.Join(db.Notes, "\n"), "reports, shop")
			assert.NotContains(t, decide, "application database")
			// Every placeholder of the proposed presets has a value.
			runners := map[string]bool{}
			for _, ph := range live.RunnerPlaceholders {
				runners[ph.Name] = true
			}
			for _, preset := range db.Presets {
				for _, ph := range live.Presets[preset].Placeholders() {
					if !runners[ph] {
						assert.Contains(t, db.Servers[0], ph, "preset %s's {%s}", preset, ph)
					}
				}
			}
		})
	}
}

// Two tiers on one host: its node_exporter's CPU is neither's own, and
// the runner refuses two tiers reading one query, so init gives neither
// the node preset and says why.
func TestInitGivesAHostSharedByTwoTiersToNeither(t *testing.T) {
	t.Parallel()
	node := exporter(t, "node_cpu_seconds_total{cpu=\"0\",mode=\"idle\"} 100\nnode_cpu_seconds_total{cpu=\"0\",mode=\"user\"} 10\n")
	prom := prometheusScraping(t, exporter(t, apacheText), exporter(t, mysqlText), node)

	p, err := Discover(context.Background(), prom, nil)
	require.NoError(t, err)
	require.Len(t, p.Tiers, 2)
	for _, tier := range p.Tiers {
		assert.NotContains(t, tier.Presets, "node", tier.Name)
		for _, srv := range tier.Servers {
			assert.NotContains(t, srv, "node", tier.Name)
		}
		assert.Contains(t, strings.Join(tier.Notes, "\n"), "node_exporter "+node+" is on the host of tiers db and web", tier.Name)
	}
	decide := strings.Join(p.Decide, "\n")
	assert.Contains(t, decide, "tier web: no CPU source found")
	assert.Contains(t, decide, "tier db: no CPU source found")
}
