package live

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	osuser "os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/freeport"
	"github.com/softalloc/softalloc/internal/syncbuf"
	"github.com/softalloc/softalloc/internal/testserver"
)

// pgBinDir is the newest PostgreSQL server's bin directory, as Debian
// installs it (/usr/lib/postgresql/15/bin); it skips, or fails in CI,
// without one.
func pgBinDir(t *testing.T) string {
	t.Helper()
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi < vj
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i]
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no PostgreSQL server (/usr/lib/postgresql/*/bin/initdb) in CI: scripts/test-deps.sh installs Debian's postgresql")
	}
	t.Skip("SKIPPED: no PostgreSQL server (/usr/lib/postgresql/*/bin/initdb): apt-get install postgresql")
	return ""
}

// startPostgres runs a PostgreSQL cluster of the test's on a free loopback
// port with pg_stat_statements loaded, as the postgres user when the test
// runs as root (PostgreSQL refuses root), and returns its address and a
// superuser connection.
func startPostgres(t *testing.T, settings ...string) (string, *sql.DB) {
	t.Helper()
	bin := pgBinDir(t)
	var asUser []string
	dir, err := os.MkdirTemp("", "softalloc-pg")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if os.Geteuid() == 0 {
		u, err := osuser.Lookup("postgres")
		require.NoError(t, err, "as root the test runs PostgreSQL as the postgres user")
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		require.NoError(t, os.Chown(dir, uid, gid))
		asUser = []string{testserver.Binary(t, "setpriv", "util-linux"), "--reuid=postgres", "--regid=postgres", "--init-groups"}
	}
	data := filepath.Join(dir, "data")
	initdb := append(append([]string{}, asUser...), filepath.Join(bin, "initdb"), "-D", data, "--auth=trust", "-U", "postgres", "--no-sync")
	out, err := exec.Command(initdb[0], initdb[1:]...).CombinedOutput()
	require.NoError(t, err, "initdb: %s", out)
	addr := freeport.Addr(t)
	port := addr[strings.LastIndexByte(addr, ':')+1:]
	args := append(append([]string{}, asUser...), filepath.Join(bin, "postgres"), "-D", data, "-c", "listen_addresses=127.0.0.1", "-c", "port="+port,
		"-c", "unix_socket_directories="+dir, "-c", "fsync=off", "-c", "shared_preload_libraries=pg_stat_statements")
	for _, s := range settings {
		args = append(args, "-c", s)
	}
	testserver.Start(t, args[0], args[1:]...)
	root, err := sql.Open("pgx", "postgres://postgres@"+addr+"/postgres?sslmode=disable")
	require.NoError(t, err)
	t.Cleanup(func() { _ = root.Close() })
	require.Eventually(t, func() bool { return root.Ping() == nil }, 60*time.Second, 100*time.Millisecond, "PostgreSQL did not answer in 60 s")
	return addr, root
}

const pgPresetSection = `
tiers:
  db:
    presets: [postgres, postgres-statements]
    queries: {cpu: vector(0)}
pages:
  throughput: vector(1)
`

// The postgres and postgres-statements presets read a PostgreSQL tier
// through the real postgres_exporter (with testbed/stacks/go/pg-queries.yaml)
// and Prometheus: four connections of the application's user running
// SELECT pg_sleep(0.2) back to back read the statements the client
// completed per second, a mean execution of at least the sleep and at most
// the client's wait, four busy backends, and the server's max_connections;
// an administrator's slower statements and the exporter's own stay out. So do
// the backends of other databases: two administrator's sessions sleeping in
// the postgres database, where the exporter's two connections are too (the
// second, its pg_database collector's, was active at 29-45 of 80 of its
// reads of pg_stat_activity, which a "- 1" for its own read missed).
func TestPostgresPresetsAgainstPostgreSQL(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPED under -short: a PostgreSQL of its own takes 10-20 s to initialise and measure")
	}
	exporter := testserver.Binary(t, "prometheus-postgres-exporter", "prometheus-postgres-exporter")
	promBinaries(t)
	const maxConns = 37
	dbAddr, root := startPostgres(t, "max_connections="+strconv.Itoa(maxConns))
	for _, q := range []string{"CREATE ROLE app LOGIN", "CREATE DATABASE app OWNER app", "CREATE EXTENSION pg_stat_statements"} {
		_, err := root.Exec(q)
		require.NoError(t, err, q)
	}
	_, file, _, _ := runtime.Caller(0)
	queries := filepath.Join(filepath.Dir(file), "..", "..", "..", "testbed", "stacks", "go", "pg-queries.yaml")
	expAddr := freeport.Addr(t)
	cmd := exec.Command(exporter, "--web.listen-address="+expAddr, "--extend.query-path="+queries)
	cmd.Env = append(os.Environ(), "DATA_SOURCE_NAME=postgresql://postgres@"+dbAddr+"/postgres?sslmode=disable")
	var expOut syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = &expOut, &expOut
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	app, err := sql.Open("pgx", "postgres://app@"+dbAddr+"/app?sslmode=disable")
	require.NoError(t, err)
	t.Cleanup(func() { _ = app.Close() })
	const conns, sleep = 4, 0.2
	app.SetMaxOpenConns(conns)
	// An administrator's slow statement, which the statements preset leaves out.
	_, err = root.Exec("SELECT pg_sleep(0.5)")
	require.NoError(t, err)
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var mu sync.Mutex
	var done []statement
	var loadErr error
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				t0 := time.Now()
				_, err := app.ExecContext(ctx, fmt.Sprintf("SELECT pg_sleep(%g)", sleep))
				mu.Lock()
				if err == nil {
					done = append(done, statement{end: time.Now(), d: time.Since(t0)})
				} else if ctx.Err() == nil {
					loadErr = err
				}
				mu.Unlock()
			}
		}()
	}
	// An administrator's two sessions in another database, active throughout.
	const adminConns = 2
	for range adminConns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if _, err := root.ExecContext(ctx, "SELECT pg_sleep(0.2)"); err != nil && ctx.Err() == nil {
					mu.Lock()
					loadErr = err
					mu.Unlock()
				}
			}
		}()
	}
	t.Cleanup(func() { stop(); wg.Wait() })

	const interval = 500 * time.Millisecond
	promURL, papi := scrapingPrometheus(t, interval, map[string]string{"postgres": expAddr})
	const step, windows = 3 * time.Second, 3
	start := time.Now().Add(interval).Truncate(time.Second).Add(time.Second)
	end := start.Add(windows * step)
	scrapedPast(t, papi, end.Add(interval), windows*step+30*time.Second)
	stop()
	wg.Wait()
	require.NoError(t, loadErr)

	var sec map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(pgPresetSection), &sec))
	sec["prometheus"] = promURL
	sec["tiers"].(map[string]any)["db"].(map[string]any)["servers"] = []any{map[string]any{"instance": expAddr, "dbUser": "app", "dbName": "app"}}
	r, err := NewPassive(sec, "/x/deployment.yaml")
	require.NoError(t, err)
	var log strings.Builder
	r.Log = &log
	d := algorithms.Deployment{Topology: "1", Tiers: []algorithms.Tier{{Name: "db", Role: "db", Replicas: 1, Cores: 1}}}
	ws, err := r.Windows(context.Background(), d, start, end, step)
	require.NoError(t, err, "%s\nthe exporter's output:\n%s", log.String(), expOut.String())
	require.Len(t, ws, windows)
	for k, w := range ws {
		require.Empty(t, w.Problem, w.Label)
		wEnd := start.Add(time.Duration(k+1) * step)
		// The statements the client saw end between the samples rate() read.
		a, b, f := span(t, papi, `pg_stat_statements_calls_total{user="app",datname="app"}`, wEnd, step)
		n, wait, longest := 0, time.Duration(0), time.Duration(0)
		for _, s := range done {
			if s.end.After(a) && !s.end.After(b) {
				n, wait, longest = n+1, wait+s.d, max(longest, s.d)
			}
		}
		require.NotZero(t, n, "window %d: no statement ended in %s..%s", k, a, b)
		tput, clientRT := float64(n)/b.Sub(a).Seconds()*f, wait.Seconds()/float64(n)
		got := w.Observation.Servers[0]
		// As in TestDatabaseLatencyPresetsAgainstMariaDB: a statement ending
		// while the exporter reads counts on either side of the sample.
		v, _, _, err := papi.Query(context.Background(), fmt.Sprintf(`max_over_time(scrape_duration_seconds{job="postgres"}[%dms])`, step.Milliseconds()), wEnd)
		require.NoError(t, err)
		scrape := float64(v.(model.Vector)[0].Value)
		delta := (conns + 2*tput*scrape) / b.Sub(a).Seconds() * f
		var pool algorithms.PoolObservation
		for _, p := range got.Pools {
			if p.Name == "threads" {
				pool = p
			}
		}
		require.Equal(t, "threads", pool.Name, "window %d: the postgres preset's pool", k)
		t.Logf("window %d: %.2f statements/s (the client's %.2f, within %.2f for scrapes of up to %.0f ms), execution %.2f ms (the client waited %.2f ms), busy backends %.2f of %.0f",
			k, got.Throughput, tput, delta, 1000*scrape, 1000*got.ResponseTime, 1000*clientRT, pool.Busy, float64(pool.Size))
		assert.InDelta(t, tput, got.Throughput, delta, "throughput, window %d", k)
		assert.GreaterOrEqual(t, got.ResponseTime, sleep, "the database spent at least the sleep in each, window %d", k)
		edge := (longest.Seconds() - sleep) * delta / tput
		assert.LessOrEqual(t, got.ResponseTime, clientRT+edge, "the database's time is within the client's wait, window %d", k)
		// Four backends sleep at almost every instant; each gap between one
		// statement and the next (the client's wait less the sleep) is a
		// backend idle. The gauge is sampled at scrapes, which load the
		// machine and so lengthen the gap the client takes to send its next
		// statement: with sleeps of 0.05 s, under two busy-looping processes
		// on 2 cores, 30 windows read 3.33 to 4.00 (and one in make test's
		// race pass 3.00) where Little's law gave 3.9; with 0.2 s, four times
		// fewer gaps, 24 windows read 3.83 to 4.00. The administrator's and
		// the exporter's, in the postgres database, are not the application's.
		idle := conns * (clientRT - sleep) / clientRT
		assert.InDelta(t, conns-idle/2, pool.Busy, idle/2+0.5, "busy backends, window %d", k)
		assert.Equal(t, maxConns, pool.Size, "max_connections, window %d", k)
	}
}
