package discover

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/freeport"
	"github.com/softalloc/softalloc/internal/runner/live"
	"github.com/softalloc/softalloc/internal/testserver"
	"github.com/softalloc/softalloc/internal/topology"
)

// postgresExporter starts Debian's postgres_exporter on the PostgreSQL at
// dbAddr and returns its address.
func postgresExporter(t *testing.T, dbAddr string) string {
	t.Helper()
	bin := testserver.Binary(t, "prometheus-postgres-exporter", "prometheus-postgres-exporter")
	addr := freeport.Addr(t)
	// testserver.Start takes no environment: the DSN goes through env(1).
	testserver.Start(t, "env", "DATA_SOURCE_NAME=postgresql://postgres@"+dbAddr+"/postgres?sslmode=disable",
		bin, "--web.listen-address="+addr)
	return addr
}

// bboardText is the testbed's bulletin board's exposition, idle.
const bboardText = `bboard_pool_size{pool="threads"} 20
bboard_pool_size{pool="connections"} 10
bboard_pool_busy_seconds_total{pool="threads"} 1
bboard_pool_busy_seconds_total{pool="connections"} 1
bboard_pool_full_seconds_total{pool="threads"} 0
bboard_pool_full_seconds_total{pool="connections"} 0
bboard_requests_total 50
bboard_request_duration_seconds_count 50
bboard_request_duration_seconds_sum 0.5
bboard_db_queries_total 50
bboard_db_query_duration_seconds_count 50
bboard_db_query_duration_seconds_sum 0.2
`

// cgroupsText is the testbed's cgroup exporter's exposition of the tiers'
// cgroups, idle: every series the cgroup preset reads.
func cgroupsText(tiers ...string) string {
	var b strings.Builder
	for _, tier := range tiers {
		for _, m := range []string{"cpu_usage_seconds_total 1", "cpu_limit_cores 1", "cpu_periods_total 100", "cpu_throttled_periods_total 0",
			"memory_working_set_bytes 1e7", "memory_limit_bytes 1e9", "memory_oom_kills_total 0"} {
			name, v, _ := strings.Cut(m, " ")
			fmt.Fprintf(&b, "softalloc_testbed_%s{tier=%q} %s\n", name, tier, v)
		}
		fmt.Fprintf(&b, "softalloc_testbed_memory_pressure_seconds_total{tier=%q,stall=\"full\"} 0\n", tier)
	}
	return b.String()
}

// The Go testbed on PostgreSQL behind PgBouncer (testbed/deployment-pgbouncer.yaml)
// as a Prometheus scrapes it, PgBouncer, PostgreSQL and their exporters real
// (prometheus-pgbouncer-exporter 2.1.2, Debian's postgres_exporter), the web
// and app tiers' expositions fixed: init proposes a pooler tier between
// the app and the database, read by the pgbouncer preset at the
// exporter's instance, its pool the running PgBouncer's default_pool_size
// and its max_client_conn; says what the user must decide of it (its
// CPU, the hook that sets its pool); and the file it writes loads with
// the pooler in front of the database and passes doctor.
func TestInitProposesAPgBouncerPoolerTier(t *testing.T) {
	t.Parallel()
	// postgres_exporter first: a machine without it skips before
	// PostgreSQL starts.
	testserver.Binary(t, "prometheus-postgres-exporter", "prometheus-postgres-exporter")
	// Sizes unlike PgBouncer's defaults (20, 0, 100), so that a default does not pass for a reading.
	const pool, reserve, maxClients = 7, 3, 150
	// The app's connection through PgBouncer: its pool (app, app) exists
	// from the first client on.
	pgb := testserver.StartPgBouncer(t, testserver.PgBouncerOptions{PoolSize: pool, ReservePoolSize: reserve, MaxClientConn: maxClients})
	pgbExp := pgb.Exporter
	pgExp := postgresExporter(t, pgb.Postgres)

	// The testbed's cgroup exporter, PgBouncer in a cgroup of its own (the
	// testbed runs it in the db's: TestInitSaysWhatAPoolerNeeds), and every
	// series the web's and the app's presets read, so that doctor reads
	// each query.
	web, appExp := exporter(t, apacheText+"apache_duration_ms_total 600\n"), exporter(t, bboardText)
	cg := exporter(t, cgroupsText("web", "app", "pooler", "db"))
	prom := prometheusScraping(t, web, appExp, pgbExp, pgExp, cg)

	p, err := Discover(context.Background(), prom, nil)
	require.NoError(t, err)
	var names, roles []string
	for _, tr := range p.Tiers {
		names, roles = append(names, tr.Name), append(roles, tr.Role)
	}
	require.Equal(t, []string{"web", "app", "pooler", "db"}, names, "the chain's order, the pooler's name as deployment-pgbouncer.yaml's")
	assert.Equal(t, []string{"web", "app", "pooler", "db"}, roles)
	pooler := p.Tiers[2]
	assert.Equal(t, "pgbouncer", pooler.Deploys)
	assert.Equal(t, []string{"cgroup", "pgbouncer"}, pooler.Presets)
	assert.Equal(t, []map[string]string{{"instance": pgbExp}}, pooler.Servers)
	// Every placeholder of the pooler's presets has a value.
	runners := map[string]bool{}
	for _, ph := range live.RunnerPlaceholders {
		runners[ph.Name] = true
	}
	for _, preset := range pooler.Presets {
		for _, ph := range live.Presets[preset].Placeholders() {
			if !runners[ph] {
				assert.Contains(t, pooler.Servers[0], ph, "preset %s's {%s}", preset, ph)
			}
		}
	}
	assert.Equal(t, map[string]int{"connections": pool}, pooler.Pools, "default_pool_size as the running PgBouncer has it")
	assert.Equal(t, maxClients, pooler.MaxClientConn)
	assert.Equal(t, reserve, pooler.ReservePoolSize, "reserve_pool_size as the running PgBouncer has it")
	assert.Empty(t, p.Tiers[3].Pools, "the database's max_connections is not sized behind a pooler")
	assert.Equal(t, "app", p.Tiers[3].Servers[0]["dbName"])
	// What is left to decide: the database's connection limit, which
	// PgBouncer's server connections must fit.
	require.Len(t, p.Decide, 1, "%q", p.Decide)
	assert.Contains(t, p.Decide[0], "tier db: its clients are the server connections of tier pooler")
	assert.Contains(t, p.Decide[0], "max_connections 100", "PostgreSQL's default")

	out := Render(p, Settings{Name: "pgb", Target: "http://127.0.0.1:1", Workload: "w.yaml"})
	assert.Contains(t, string(out), fmt.Sprintf("pools: {default_pool_size: %d, reserve_pool_size: %d, max_client_conn: %d}", pool, reserve, maxClients), "PgBouncer's names, as the deployment file takes a pooler's pools")
	assert.Contains(t, string(out), `examples/hooks/pgbouncer.sh`, "the hook that sets default_pool_size")
	assert.Contains(t, string(out), `"{pooler.connections}"`, "the hook's placeholder of the pooler's pool")

	dir := t.TempDir()
	file := filepath.Join(dir, "deployment.yaml")
	require.NoError(t, os.WriteFile(file, out, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "w.yaml"), []byte("name: w\nthinkTime: {mean: 1s}\nstart: Home\ninteractions:\n  - {name: Home, path: /, next: {Home: 1}}\n"), 0o644))
	d, err := topology.LoadDeployment(file)
	require.NoError(t, err, "%s", out)
	assert.Equal(t, algorithms.RolePooler, d.Deployment.Tiers[2].Role)
	assert.Equal(t, pool, d.Allocation["pooler"].Connections)
	assert.Equal(t, maxClients, d.Deployment.Tiers[2].MaxClientConn)
	assert.Equal(t, reserve, d.Deployment.Tiers[2].ReservePoolSize, "the database's budget counts the reserve init read")

	// softalloc doctor's path, without its probe (no web server answers
	// the target): the file's queries read what a campaign needs.
	r, err := live.New(d.Runner, file)
	require.NoError(t, err, "%s", out)
	rep, err := r.Doctor(context.Background(), d.Deployment, d.Allocation, live.DoctorOptions{})
	require.NoError(t, err, "%s", out)
	assert.True(t, rep.OK(), "doctor's problems: %q\nthe file:\n%s", rep.Problems, out)
	var pooled []live.DoctorReading
	for _, s := range rep.Servers {
		if s.Tier == "pooler" {
			pooled = s.Readings
		}
	}
	var size *live.DoctorReading
	for k := range pooled {
		if pooled[k].Field == "pools.connections.size" {
			size = &pooled[k]
		}
	}
	require.NotNil(t, size, "doctor read the pooler's pool: %+v", pooled)
	require.NotNil(t, size.Value, "%s: %s", size.Query, size.Note)
	assert.Equal(t, float64(pool), *size.Value, "the preset reads the pool init read: the app's one (database, user) pool of default_pool_size")
}

// What init cannot read of a pooler it asks for: PgBouncer's CPU when no
// cgroup of its own reports it (the testbed runs it in the db's), which of
// the databases' pool sizes is default_pool_size when they differ, and the
// PgBouncer exporters whose names the pgbouncer preset does not read (the
// prometheus-community Go one; any whose pgbouncer_up is 0), which are left
// out rather than proposed as a tier the preset reads nothing of.
func TestInitSaysWhatAPoolerNeeds(t *testing.T) {
	t.Parallel()
	// prometheus-pgbouncer-exporter 2.1.2's names, as a real scrape has them
	// (TestInitProposesAPgBouncerPoolerTier).
	bouncer := `pgbouncer_up 1.0
pgbouncer_stats_transactions_total{database="shop"} 10.0
pgbouncer_stats_transactions_duration_microseconds_total{database="shop"} 5000.0
pgbouncer_pools_server_active_connections{database="shop",user="shop"} 0.0
pgbouncer_databases_database_pool_size{backend_database="shop",database="shop"} 15.0
pgbouncer_databases_database_pool_size{backend_database="orders",database="orders"} 15.0
pgbouncer_databases_database_pool_size{backend_database="reports",database="reports"} 3.0
pgbouncer_databases_database_pool_size{backend_database="pgbouncer",database="pgbouncer"} 2.0
pgbouncer_databases_database_reserve_pool_size{backend_database="shop",database="shop"} 5.0
pgbouncer_databases_database_reserve_pool_size{backend_database="orders",database="orders"} 5.0
pgbouncer_databases_database_reserve_pool_size{backend_database="reports",database="reports"} 0.0
pgbouncer_databases_database_reserve_pool_size{backend_database="pgbouncer",database="pgbouncer"} 0.0
pgbouncer_config_max_client_conn 500.0
`
	goExporter := "pgbouncer_up 1\npgbouncer_stats_sql_transactions_pooled_total{database=\"shop\"} 10\n"
	failing := "pgbouncer_up 0.0\n"
	pgb, other, down := exporter(t, bouncer), exporter(t, goExporter), exporter(t, failing)
	prom := prometheusScraping(t, exporter(t, apacheText), exporter(t, bboardText), pgb, other, down,
		exporter(t, "pg_up 1\npg_settings_max_connections 300\npg_stat_activity_count{datname=\"shop\",state=\"active\"} 1\n"),
		exporter(t, cgroupsText("web", "app", "db")))

	p, err := Discover(context.Background(), prom, nil)
	require.NoError(t, err)
	require.Len(t, p.Tiers, 4)
	pooler := p.Tiers[2]
	require.Equal(t, "pooler", pooler.Name)
	assert.Equal(t, []string{"pgbouncer"}, pooler.Presets, "no CPU source of its own")
	assert.Equal(t, []map[string]string{{"instance": pgb}}, pooler.Servers, "only the exporter the preset reads")
	assert.Equal(t, map[string]int{"connections": 15}, pooler.Pools, "the pool size of most databases, default_pool_size's likeliest")
	assert.Equal(t, 500, pooler.MaxClientConn)
	assert.Equal(t, 5, pooler.ReservePoolSize, "the reserve of the databases of the pool proposed")
	decide := strings.Join(p.Decide, "\n")
	assert.Contains(t, decide, "tier pooler: PgBouncer exports no CPU")
	assert.NotContains(t, decide, "tier pooler: no CPU source found", "said once, PgBouncer's way")
	assert.Contains(t, decide, "different pool sizes, 15 (orders, shop); 3 (reports)")
	assert.Contains(t, decide, "tier db: its clients are the server connections of tier pooler")
	assert.Contains(t, decide, "max_connections 300")
	assert.Contains(t, decide, fmt.Sprintf("target %s (job t3) exports pgbouncer_up but not %s", other, pgbouncerMetric))
	assert.Contains(t, decide, fmt.Sprintf("target %s (job t4) exports pgbouncer_up 0", down))
	out := string(Render(p, Settings{}))
	assert.Contains(t, out, "pools: {default_pool_size: 15, reserve_pool_size: 5, max_client_conn: 500}")
}

// reserve_pool_size from SHOW DATABASES' reserve_pool of the databases
// whose pool init proposes: on a tie the larger, which the database's
// budget must admit; an exporter without the series (another PgBouncer's
// column name) leaves it to the user.
func TestPgBouncerReserveOfTheProposedPool(t *testing.T) {
	series := func(pairs ...any) model.Vector {
		var v model.Vector
		for i := 0; i+1 < len(pairs); i += 2 {
			v = append(v, &model.Sample{Metric: model.Metric{"database": model.LabelValue(pairs[i].(string))}, Value: model.SampleValue(pairs[i+1].(int))})
		}
		return v
	}
	for _, tc := range []struct {
		name      string
		databases []string
		vec       model.Vector
		want      int
		decide    string
	}{
		{"one database", []string{"app"}, series("app", 4, "other", 9), 4, ""},
		{"a tie", []string{"a", "b"}, series("a", 2, "b", 6), 6, ""},
		{"most", []string{"a", "b", "c"}, series("a", 2, "b", 6, "c", 2), 2, ""},
		{"not exported", []string{"app"}, nil, 0, "tier pooler: PgBouncer at 127.0.0.1:9127 exports no reserve pool (pgbouncer_databases_database_reserve_pool_size): if pgbouncer.ini sets reserve_pool_size, add it to the pools (reserve_pool_size: N), which the database's connection budget counts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p Proposal
			tr := Tier{Name: "pooler", Servers: []map[string]string{{"instance": "127.0.0.1:9127"}}}
			var asked string
			require.NoError(t, pgbouncerReserve(&p, &tr, tc.databases, func(q string) (model.Vector, error) { asked = q; return tc.vec, nil }))
			assert.Equal(t, `pgbouncer_databases_database_reserve_pool_size{database!="pgbouncer",instance="127.0.0.1:9127"}`, asked)
			assert.Equal(t, tc.want, tr.ReservePoolSize)
			if tc.decide == "" {
				assert.Empty(t, p.Decide)
			} else {
				assert.Equal(t, []string{tc.decide}, p.Decide)
			}
		})
	}
}
