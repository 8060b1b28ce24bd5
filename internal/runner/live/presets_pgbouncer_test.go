package live

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/testserver"
)

const pgbouncerPresetSection = `
tiers:
  pooler:
    presets: [pgbouncer]
    queries: {cpu: vector(0)}
pages:
  throughput: vector(1)
`

// xact is one transaction a client ran through PgBouncer: when its COMMIT
// returned and how long it took from BEGIN.
type xact = statement

// The pgbouncer preset reads a PgBouncer tier through the real
// prometheus-pgbouncer-exporter 2.1.2 and Prometheus, PgBouncer in
// transaction pooling with a pool of 4 in front of a real PostgreSQL. Two
// clients running BEGIN; SELECT pg_sleep(0.2); COMMIT back to back read
// the transactions they completed per second, a mean transaction of at
// least the sleep and at most the clients' wait, two busy server connections
// of the pool's 4 and no client waiting; then seven clients read 4 busy of
// 4, clients waiting throughout (the pool's full share), and a mean
// transaction that holds the wait for a server: longer than the server's
// share of it (busy / throughput, Little's law on the pool).
func TestPgBouncerPresetAgainstPgBouncer(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPED under -short: a PostgreSQL and PgBouncer of its own take 15-25 s to start and measure")
	}
	promBinaries(t)
	const pool, sleep = 4, 0.2
	pgb := testserver.StartPgBouncer(t, testserver.PgBouncerOptions{PoolSize: pool})
	app, expAddr := pgb.App, pgb.Exporter

	// load runs clients, each on a connection of its own, until stopped.
	var mu sync.Mutex
	var done []xact
	var loadErr error
	load := func(clients int) (stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				conn, err := app.Conn(ctx)
				if err != nil {
					mu.Lock()
					loadErr = err
					mu.Unlock()
					return
				}
				defer conn.Close()
				for ctx.Err() == nil {
					t0 := time.Now()
					err := func() error {
						tx, err := conn.BeginTx(ctx, nil)
						if err != nil {
							return err
						}
						if _, err := tx.ExecContext(ctx, fmt.Sprintf("SELECT pg_sleep(%g)", sleep)); err != nil {
							_ = tx.Rollback()
							return err
						}
						return tx.Commit()
					}()
					mu.Lock()
					if err == nil {
						done = append(done, xact{end: time.Now(), d: time.Since(t0)})
					} else if ctx.Err() == nil {
						loadErr = err
					}
					mu.Unlock()
				}
			}()
		}
		stopped := false
		stop = func() {
			if !stopped {
				stopped = true
				cancel()
				wg.Wait()
			}
		}
		t.Cleanup(stop)
		return stop
	}

	const interval = 500 * time.Millisecond
	promURL, papi := scrapingPrometheus(t, interval, map[string]string{"pgbouncer": expAddr})
	var sec map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(pgbouncerPresetSection), &sec))
	sec["prometheus"] = promURL
	sec["tiers"].(map[string]any)["pooler"].(map[string]any)["servers"] = []any{map[string]any{"instance": expAddr}}
	r, err := NewPassive(sec, "/x/deployment.yaml")
	require.NoError(t, err)
	d := algorithms.Deployment{Topology: "1", Tiers: []algorithms.Tier{{Name: "pooler", Role: algorithms.RolePooler, Replicas: 1, Cores: 1}}}

	const step, windows = 3 * time.Second, 2
	for _, clients := range []int{2, 7} {
		t.Run(fmt.Sprintf("%d clients", clients), func(t *testing.T) {
			stop := load(clients)
			// The first window starts after every client's first transaction.
			start := time.Now().Add(time.Second).Truncate(time.Second).Add(time.Second)
			end := start.Add(windows * step)
			scrapedPast(t, papi, end.Add(interval), windows*step+30*time.Second)
			stop()
			mu.Lock()
			require.NoError(t, loadErr)
			mu.Unlock()
			var log strings.Builder
			r.Log = &log
			ws, err := r.Windows(context.Background(), d, start, end, step)
			require.NoError(t, err, log.String())
			require.Len(t, ws, windows)
			for k, w := range ws {
				require.Empty(t, w.Problem, w.Label)
				wEnd := start.Add(time.Duration(k+1) * step)
				// The transactions the clients saw end between the samples
				// rate() read.
				a, b, f := span(t, papi, `pgbouncer_stats_transactions_total{database="app"}`, wEnd, step)
				n, wait, longest := 0, time.Duration(0), time.Duration(0)
				for _, x := range done {
					if x.end.After(a) && !x.end.After(b) {
						n, wait, longest = n+1, wait+x.d, max(longest, x.d)
					}
				}
				require.NotZero(t, n, "window %d: no transaction ended in %s..%s", k, a, b)
				tput, clientRT := float64(n)/b.Sub(a).Seconds()*f, wait.Seconds()/float64(n)
				// As in TestPostgresPresetsAgainstPostgreSQL: a transaction
				// PgBouncer counted before its client saw it end sits on
				// either side of a sample, and one ending while the
				// exporter reads counts in its scrape.
				v, _, _, err := papi.Query(context.Background(), fmt.Sprintf(`max_over_time(scrape_duration_seconds{job="pgbouncer"}[%dms])`, step.Milliseconds()), wEnd)
				require.NoError(t, err)
				scrape := float64(v.(model.Vector)[0].Value)
				delta := (float64(clients) + 2*tput*scrape) / b.Sub(a).Seconds() * f
				got := w.Observation.Servers[0]
				var conns algorithms.PoolObservation
				for _, p := range got.Pools {
					if p.Name == "connections" {
						conns = p
					}
				}
				require.Equal(t, "connections", conns.Name, "window %d: the pgbouncer preset's pool", k)
				t.Logf("window %d: %.2f transactions/s (the clients' %.2f, within %.2f for scrapes of up to %.0f ms), %.2f ms each (the clients waited %.2f ms), busy server connections %.2f of %d, clients waiting in %.0f%% of the window",
					k, got.Throughput, tput, delta, 1000*scrape, 1000*got.ResponseTime, 1000*clientRT, conns.Busy, conns.Size, 100*conns.FullShare)
				assert.InDelta(t, tput, got.Throughput, delta, "throughput, window %d", k)
				assert.GreaterOrEqual(t, got.ResponseTime, sleep, "each transaction held at least the sleep, window %d", k)
				edge := (longest.Seconds() - sleep) * delta / tput
				assert.LessOrEqual(t, got.ResponseTime, clientRT+edge, "PgBouncer's time is within the clients' wait, window %d", k)
				assert.Equal(t, pool, conns.Size, "default_pool_size, window %d", k)
				// A server connection is linked to its client from BEGIN to
				// COMMIT's answer: idle only in the client's few
				// microseconds between one transaction and the next, which
				// the samples rarely catch.
				busy := float64(min(clients, pool))
				assert.LessOrEqual(t, conns.Busy, busy, "busy server connections, window %d", k)
				assert.GreaterOrEqual(t, conns.Busy, busy-0.5, "busy server connections, window %d", k)
				if clients <= pool {
					assert.Zero(t, conns.FullShare, "no client waits for a server with %d clients and a pool of %d, window %d", clients, pool, k)
					continue
				}
				// Clients beyond the pool wait at every instant but those
				// (rare) when each of them is between two transactions. With
				// transactions of 0.05 s make test's race pass once read no
				// client waiting in one of a window's four steps (0.75): as
				// in TestPostgresPresetsAgainstPostgreSQL, where it was
				// measured, a scrape loads the machine and holds clients in
				// those gaps, and a stall of 50 ms ends four transactions of
				// 0.05 s but one of 0.2 s. Under two busy loops alone both
				// read 100% in 12 of 12 windows.
				assert.GreaterOrEqual(t, conns.FullShare, 0.8, "clients waiting with %d clients and a pool of %d, window %d", clients, pool, k)
				assert.Greater(t, got.ResponseTime, 1.1*conns.Busy/got.Throughput,
					"a transaction's time in PgBouncer holds its wait for a server, beyond the server's share of it, window %d", k)
			}
		})
	}
}
