package live

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/freeport"
	"github.com/softalloc/softalloc/internal/syncbuf"
	"github.com/softalloc/softalloc/internal/testserver"
)

// startMariaDB initialises a data directory and runs mariadbd on a free
// loopback port with flags, as testbed/core.sh's db_start does; it returns
// the port's address and a root connection over the socket.
func startMariaDB(t *testing.T, flags ...string) (string, *sql.DB) {
	t.Helper()
	install := testserver.Binary(t, "mariadb-install-db", "mariadb-server")
	mariadbd := testserver.Binary(t, "mariadbd", "mariadb-server")
	// A short path: a socket's is limited to 107 bytes.
	dir, err := os.MkdirTemp("", "softalloc-db")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	data, sock := filepath.Join(dir, "data"), filepath.Join(dir, "sock")
	out, err := exec.Command(install, "--no-defaults", "--datadir="+data, "--user=root",
		"--auth-root-authentication-method=normal", "--skip-test-db").CombinedOutput()
	require.NoError(t, err, "mariadb-install-db: %s", out)
	addr := freeport.Addr(t)
	port := addr[strings.LastIndexByte(addr, ':')+1:]
	args := append([]string{"--no-defaults", "--datadir=" + data, "--user=root", "--bind-address=127.0.0.1",
		"--port=" + port, "--socket=" + sock, "--pid-file=" + filepath.Join(dir, "pid"), "--log-error=" + filepath.Join(dir, "err.log"),
		"--skip-name-resolve", "--skip-log-bin", "--innodb-buffer-pool-size=16M"}, flags...)
	testserver.Start(t, mariadbd, args...)
	root, err := sql.Open("mysql", "root@unix("+sock+")/")
	require.NoError(t, err)
	t.Cleanup(func() { _ = root.Close() })
	require.Eventually(t, func() bool { return root.Ping() == nil }, 60*time.Second, 100*time.Millisecond,
		"MariaDB did not answer in 60 s: %s", filepath.Join(dir, "err.log"))
	return addr, root
}

// statement is one the load ran: when it ended and how long the client waited.
type statement struct {
	end time.Time
	d   time.Duration
}

const dbLatencySection = `
tiers:
  userstat:
    presets: [mysql, mysql-userstat]
    queries: {cpu: vector(0)}
  perfschema:
    presets: [mysql, mysql-perfschema]
    queries: {cpu: vector(0)}
pages:
  throughput: vector(1)
`

// The mysql-userstat and mysql-perfschema presets read a database tier's
// throughput and mean residence from MariaDB itself, through the real
// mysqld_exporter and Prometheus: four connections running SELECT SLEEP(0.05)
// back to back read the statements the client completed per second, and a
// residence of 50 ms, the application's own statements alone (not the
// exporter's, nor an administrator's).
func TestDatabaseLatencyPresetsAgainstMariaDB(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPED under -short: a MariaDB of its own takes 15-30 s to initialise and measure")
	}
	exporter := testserver.Binary(t, "prometheus-mysqld-exporter", "prometheus-mysqld-exporter")
	promBinaries(t)
	dbAddr, root := startMariaDB(t, "--performance-schema=ON", "--userstat=1")
	for _, q := range []string{
		"CREATE DATABASE app",
		"CREATE USER 'app'@'127.0.0.1' IDENTIFIED BY 'app'",
		"GRANT ALL ON app.* TO 'app'@'127.0.0.1'",
		"CREATE USER 'exporter'@'127.0.0.1' IDENTIFIED BY 'exporter' WITH MAX_USER_CONNECTIONS 3",
		"GRANT PROCESS, REPLICATION CLIENT, SELECT ON *.* TO 'exporter'@'127.0.0.1'",
	} {
		_, err := root.Exec(q)
		require.NoError(t, err, q)
	}
	expAddr := freeport.Addr(t)
	cmd := exec.Command(exporter, "--web.listen-address="+expAddr, "--collect.info_schema.userstats", "--collect.perf_schema.eventsstatements",
		"--no-collect.slave_status", "--no-collect.info_schema.innodb_cmp", "--no-collect.info_schema.innodb_cmpmem", "--no-collect.info_schema.query_response_time")
	cmd.Env = append(os.Environ(), "DATA_SOURCE_NAME=exporter:exporter@("+dbAddr+")/")
	var expOut syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = &expOut, &expOut
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	// The load: four connections of the application's user, each running
	// SELECT SLEEP(0.05) back to back, until the test ends.
	app, err := sql.Open("mysql", "app:app@tcp("+dbAddr+")/app")
	require.NoError(t, err)
	t.Cleanup(func() { _ = app.Close() })
	// digestLoss: the share of statements performance_schema's digests
	// may miss (measured below: up to 7.5%).
	const conns, sleep, digestLoss = 4, 0.05, 0.1
	app.SetMaxOpenConns(conns)
	// An administrator's slow statement, which the presets leave out.
	_, err = root.Exec("SELECT SLEEP(0.3)")
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
				// The text protocol: MariaDB's digests leave out statements
				// prepared on the server (COM_STMT_EXECUTE), which the
				// driver would use for an argument.
				_, err := app.ExecContext(ctx, "SELECT SLEEP(0.05)")
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
	t.Cleanup(func() { stop(); wg.Wait() })

	// The exporter's scrape runs a dozen queries: on a busy machine it
	// took over 250 ms, and a failed scrape is a gap in every series.
	const interval = 500 * time.Millisecond
	promURL, papi := scrapingPrometheus(t, interval, map[string]string{"mysqld": expAddr})
	const step, windows = 3 * time.Second, 3
	start := time.Now().Add(interval).Truncate(time.Second).Add(time.Second)
	end := start.Add(windows * step)
	scrapedPast(t, papi, end.Add(interval), windows*step+30*time.Second)
	stop()
	wg.Wait()
	require.NoError(t, loadErr)

	var sec map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(dbLatencySection), &sec))
	sec["prometheus"] = promURL
	server := []any{map[string]any{"instance": expAddr, "dbUser": "app"}}
	for _, tier := range []string{"userstat", "perfschema"} {
		sec["tiers"].(map[string]any)[tier].(map[string]any)["servers"] = server
	}
	r, err := NewPassive(sec, "/x/deployment.yaml")
	require.NoError(t, err)
	var log strings.Builder
	r.Log = &log
	d := algorithms.Deployment{Topology: "1/1", Tiers: []algorithms.Tier{
		{Name: "userstat", Role: "db", Replicas: 1, Cores: 1},
		{Name: "perfschema", Role: "db", Replicas: 1, Cores: 1},
	}}
	ws, err := r.Windows(context.Background(), d, start, end, step)
	require.NoError(t, err, log.String())
	require.Len(t, ws, windows)
	for k, w := range ws {
		require.Empty(t, w.Problem, w.Label)
		wEnd := start.Add(time.Duration(k+1) * step)
		for i, name := range []string{"userstat", "perfschema"} {
			sel := `mysql_info_schema_user_statistics_select_commands_total{user="app"}`
			if name == "perfschema" {
				sel = `mysql_perf_schema_events_statements_total{schema="app"}`
			}
			// The statements the client saw end between the samples rate() read.
			a, b, f := span(t, papi, sel, wEnd, step)
			n, wait, longest := 0, time.Duration(0), time.Duration(0)
			for _, s := range done {
				if s.end.After(a) && !s.end.After(b) {
					n, wait, longest = n+1, wait+s.d, max(longest, s.d)
				}
			}
			require.NotZero(t, n, "window %d: no statement ended in %s..%s", k, a, b)
			tput, clientRT := float64(n)/b.Sub(a).Seconds()*f, wait.Seconds()/float64(n)
			got := w.Observation.Servers[i]
			// A statement ending while the exporter reads its counters, up
			// to the scrape's duration after the sample's timestamp, counts
			// on either side of it: at each end of the span, up to the
			// statements of that long, and one a connection.
			v, _, _, err := papi.Query(context.Background(), fmt.Sprintf(`max_over_time(scrape_duration_seconds{job="mysqld"}[%dms])`, step.Milliseconds()), wEnd)
			require.NoError(t, err)
			scrape := float64(v.(model.Vector)[0].Value)
			delta := (conns + 2*tput*scrape) / b.Sub(a).Seconds() * f
			t.Logf("window %d, %s: %.2f statements/s (the client's %.2f, within %.2f for scrapes of up to %.0f ms), residence %.2f ms (the client waited %.2f ms)",
				k, name, got.Throughput, tput, delta, 1000*scrape, 1000*got.ResponseTime, 1000*clientRT)
			// performance_schema's digests lose counts when connections end
			// statements together: on MariaDB 10.11.19, against
			// COM_SELECT, 18 of 476 statements of four connections were
			// missing over 6 s (3.8%) and none of one connection's 133, and
			// here the preset read 0% to 7.5% under the client in
			// fourteen windows of five runs, its mean per statement up to 3.9% over the client's
			// wait. userstat, counted per statement under a lock, read the
			// client's figures. The digests may read low by up to digestLoss.
			low := 0.0
			if name == "perfschema" {
				low = digestLoss
			}
			assert.GreaterOrEqual(t, got.Throughput, tput*(1-low)-delta, "%s throughput, window %d", name, k)
			assert.LessOrEqual(t, got.Throughput, tput+delta, "%s throughput, window %d", name, k)
			assert.GreaterOrEqual(t, got.ResponseTime, sleep, "%s: the database spent at least the sleep in each, window %d", name, k)
			// The database's mean is over the statements its counters held at
			// the samples, which differ from the client's by up to delta's
			// share of them: each of those moves the mean by at most the
			// longest wait over the sleep (0.5 ms past the client's mean was
			// read when the bound was the client's mean alone).
			edge := (longest.Seconds() - sleep) * delta / tput
			// A lost count leaves its time in the sum: the mean reads high
			// by the share lost.
			assert.LessOrEqual(t, got.ResponseTime, (clientRT+edge)/(1-low), "%s: the database's time is within the client's wait, window %d", name, k)
		}
	}
}
