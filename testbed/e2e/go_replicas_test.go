package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/internal/syncbuf"
)

// replicaDeployment is the Go testbed's shape with the app tier's replicas
// as a range, the app's CPU well above the database's so that the replicas
// share the database's budget (per replica, the connections fall as the
// count grows), and a connection limit. recommend answers it on the
// simulator in seconds: the smoke test checks that watch applies the plan,
// not the plan's numbers.
const replicaDeployment = `name: testbed-replicas
tiers:
  - {name: web, role: web, replicas: 1, pools: {threads: 100}}
  - {name: app, role: app, replicas: 1..3, cores: 4, pools: {threads: 20, connections: 10}}
  - {name: db, role: db, replicas: 1, cores: 1, connectionLimit: 100}
`

// TestWatchFollowsTheTestbedsReplicas is softalloc watch's smoke test on
// the Go testbed (issue 37): watch applies the pools planned for one app
// replica, the testbed scales to two while a load runs, and each replica's
// pools become the plan's for two, read back from the replicas' own
// metrics through Prometheus.
func TestWatchFollowsTheTestbedsReplicas(t *testing.T) {
	requireTestbed(t)
	tb := filepath.Join(repo, "testbed", "testbed.sh")
	t.Cleanup(func() {
		// Later tests find the testbed as up leaves it.
		for _, args := range [][]string{{"scale", "app=1"}, {"apply", "100", "20", "10"}} {
			if out, err := exec.Command(tb, args...).CombinedOutput(); err != nil {
				t.Errorf("testbed.sh %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		}
	})
	run(t, exec.Command(tb, "scale", "app=1"))

	dir := t.TempDir()
	deployment := filepath.Join(dir, "deployment.yaml")
	require.NoError(t, os.WriteFile(deployment, []byte(replicaDeployment), 0o644))
	answer := run(t, exec.Command(binary, "recommend", "-f", deployment, "--output", "json", "--quiet"))
	plan := filepath.Join(dir, "answer.json")
	require.NoError(t, os.WriteFile(plan, answer, 0o644))
	var doc struct {
		Replicas struct {
			Counts []struct {
				Replicas   int                       `json:"replicas"`
				Allocation map[string]map[string]int `json:"allocation"`
			} `json:"counts"`
		} `json:"replicas"`
	}
	require.NoError(t, json.Unmarshal(answer, &doc), "%s", answer)
	conns := map[int]int{}
	for _, c := range doc.Replicas.Counts {
		conns[c.Replicas] = c.Allocation["app"]["connections"]
	}
	require.Len(t, conns, 3, "the plan's counts: %s", answer)
	require.NotEqual(t, conns[1], conns[2], "the replicas split the database's budget: the pools at 1 and 2 replicas differ")

	ctx, cancel := context.WithCancel(context.Background())
	var log syncbuf.Buffer
	watch := exec.CommandContext(ctx, binary, "watch", "--plan", plan, "--prometheus", "http://127.0.0.1:18090",
		"--replicas-query", `count(up{job="app"} == 1)`, "--interval", "1s", "--hold", "2",
		"--", tb, "apply", "{web.threads}", "{app.threads}", "{app.connections}")
	watch.Dir, watch.Stdout, watch.Stderr = dir, &log, &log
	require.NoError(t, watch.Start())
	defer func() {
		cancel()
		_ = watch.Wait()
		t.Logf("watch's decisions:\n%s", log.String())
	}()

	waitPools(t, 1, conns[1], 90*time.Second)

	// A load at a constant rate across the scaling, so that scale and the
	// hook run while pages are served.
	var ok, failed atomic.Int64
	loadCtx, stopLoad := context.WithCancel(ctx)
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		client := &http.Client{Timeout: 10 * time.Second}
		tick := time.NewTicker(20 * time.Millisecond) // 50 pages/s
		defer tick.Stop()
		for {
			select {
			case <-loadCtx.Done():
				return
			case <-tick.C:
				go func() {
					resp, err := client.Get("http://127.0.0.1:18080/rubbos/StoriesOfTheDay")
					if err == nil {
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
					if err == nil && resp.StatusCode == http.StatusOK {
						ok.Add(1)
					} else {
						failed.Add(1)
					}
				}()
			}
		}
	}()
	start := time.Now()
	run(t, exec.Command(tb, "scale", "app=2"))
	waitPools(t, 2, conns[2], 90*time.Second)
	followed := time.Since(start)
	stopLoad()
	<-loadDone
	t.Logf("scaled to 2 replicas; their pools followed %.1f s after the scale began; load: %d pages served, %d failed",
		followed.Seconds(), ok.Load(), failed.Load())
	// Prometheus may read the new pools before the hook has returned (its
	// graceful restart of Apache) and watch has logged the decision.
	assert.Eventually(t, func() bool { return strings.Contains(log.String(), "apply: app at 2 replicas (was 1)") },
		time.Minute, 200*time.Millisecond, "watch logs the decision it took")
}

// waitPools waits until Prometheus reads n app targets up, each with a
// database pool of conns.
func waitPools(t *testing.T, n, conns int, within time.Duration) {
	t.Helper()
	q := fmt.Sprintf(`count(bboard_pool_size{job="app",pool="connections"} == %d) == %d and count(up{job="app"} == 1) == %d`, conns, n, n)
	deadline := time.Now().Add(within)
	last := ""
	for time.Now().Before(deadline) {
		v, err := promValue("http://127.0.0.1:18090", q)
		if err == nil && v == float64(n) {
			return
		}
		last = fmt.Sprint(v, err)
		time.Sleep(500 * time.Millisecond)
	}
	pools, _ := promVector(`bboard_pool_size{job="app",pool="connections"}`)
	t.Fatalf("after %v Prometheus does not read %d app replicas with %d connections each (%s; the pools: %s)", within, n, conns, last, pools)
}

func promQuery(q string) ([]struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}, error) {
	resp, err := http.Get("http://127.0.0.1:18090/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var doc struct {
		Data struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return nil, fmt.Errorf("query %s: %w", q, err)
	}
	return doc.Data.Result, nil
}

func promVector(q string) (string, error) {
	r, err := promQuery(q)
	if err != nil {
		return "", err
	}
	var parts []string
	for _, s := range r {
		parts = append(parts, fmt.Sprintf("%s=%v", s.Metric["instance"], s.Value[1]))
	}
	return strings.Join(parts, " "), nil
}
