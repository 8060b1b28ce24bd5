package live

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/freeport"
	"github.com/softalloc/softalloc/internal/promtest"
	"github.com/softalloc/softalloc/internal/testserver"
)

// phpStack is a php-fpm pool behind Apache's mod_proxy_fcgi, with the pool's
// status page on pm.status_listen proxied to HTTP, as the testbed's
// wordpress stack runs them.
type phpStack struct {
	web    string // Apache: /app/sleep.php?ms=N, /status?openmetrics
	status string // the proxy's address Prometheus scrapes ({instance})
	master int    // php-fpm's master process
}

// startPHPStack starts php-fpm (pm = static, children) and Apache on free
// loopback ports in a directory of the test's.
func startPHPStack(t *testing.T, children int) phpStack {
	t.Helper()
	fpm := testserver.Binary(t, "php-fpm8.2", "php8.2-fpm")
	apache := testserver.Binary(t, "apache2", "apache2")
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755)) // Apache's children (www-data) read nothing there, but may stat it
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sleep.php"),
		[]byte("<?php usleep((int)($_GET['ms'] ?? 100) * 1000); echo \"ok\\n\";\n"), 0o644))
	pool, status, web := freeport.Addr(t), freeport.Addr(t), freeport.Addr(t)
	conf := filepath.Join(dir, "php-fpm.conf")
	require.NoError(t, os.WriteFile(conf, []byte(fmt.Sprintf(`[global]
pid = %[1]s/php-fpm.pid
error_log = %[1]s/php-fpm.log
daemonize = no
[test]
listen = %[2]s
pm = static
pm.max_children = %[4]d
pm.status_path = /status
pm.status_listen = %[3]s
`, dir, pool, status, children)), 0o644))
	args := []string{"--nodaemonize", "-n", "-y", conf}
	if os.Geteuid() == 0 {
		args = append(args, "--allow-to-run-as-root")
	}
	master := testserver.Start(t, fpm, args...).Process.Pid

	mods := "/usr/lib/apache2/modules"
	user := ""
	if os.Geteuid() == 0 {
		user = "User www-data\nGroup www-data\n"
	}
	httpd := filepath.Join(dir, "httpd.conf")
	require.NoError(t, os.WriteFile(httpd, []byte(fmt.Sprintf(`ServerRoot %[1]s
ServerName 127.0.0.1
Listen %[2]s
PidFile %[1]s/httpd.pid
DefaultRuntimeDir %[1]s
ErrorLog %[1]s/error.log
%[6]sLoadModule mpm_event_module %[5]s/mod_mpm_event.so
LoadModule authz_core_module %[5]s/mod_authz_core.so
LoadModule proxy_module %[5]s/mod_proxy.so
LoadModule proxy_fcgi_module %[5]s/mod_proxy_fcgi.so
StartServers 1
ServerLimit 1
ThreadsPerChild 64
MaxRequestWorkers 64
ProxyPass /status fcgi://%[4]s/status
ProxyPass /app/ fcgi://%[3]s%[1]s/
`, dir, web, pool, status, mods, user)), 0o644))
	// -X: one process in the foreground, which the cleanup kills.
	testserver.Start(t, apache, "-X", "-f", httpd)
	s := phpStack{web: "http://" + web, status: web, master: master}
	require.Eventually(t, func() bool {
		return get(s.web+"/status?openmetrics") == nil && get(s.web+"/app/sleep.php?ms=0") == nil
	}, 30*time.Second, 100*time.Millisecond, "php-fpm behind Apache did not answer")
	return s
}

var phpClient = http.Client{Timeout: 10 * time.Second}

// poolChildren are the master's children that serve pool (not its
// pm.status_listen pool, pool_status).
func poolChildren(t *testing.T, master int, pool string) []int {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	require.NoError(t, err)
	var out []int
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // gone since the glob
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after its ')'.
		fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(master) {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join(filepath.Dir(f), "cmdline"))
		if err == nil && strings.TrimRight(string(cmdline), "\x00 ") == "php-fpm: pool "+pool {
			pid, err := strconv.Atoi(filepath.Base(filepath.Dir(f)))
			require.NoError(t, err)
			out = append(out, pid)
		}
	}
	return out
}

// signal sends sig to every process of pids.
func signal(t *testing.T, pids []int, sig syscall.Signal) {
	t.Helper()
	for _, pid := range pids {
		require.NoError(t, syscall.Kill(pid, sig), "signal %v to %d", sig, pid)
	}
}

// waitIdle waits until php-fpm counts no active child of the pool: a
// child that has answered its last request still counts active while it
// finishes, and stopped then it read busy through the stalled window
// (make test of 1e120cc: 2 of 4, with 3 requests queued behind the 2 idle).
func waitIdle(t *testing.T, web string) {
	t.Helper()
	require.Eventually(t, func() bool {
		resp, err := phpClient.Get(web + "/status?json")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var st struct {
			Active int `json:"active processes"`
		}
		if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&st) != nil {
			return false
		}
		return st.Active == 0
	}, 10*time.Second, 10*time.Millisecond, "php-fpm's children did not go idle")
}

func get(url string) error {
	resp, err := phpClient.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}

// load keeps users requests running back to back until ctx ends; wait
// returns each completed request's end and duration as the client saw it.
func load(ctx context.Context, url string, users int) (wait func() []completion) {
	var mu sync.Mutex
	var out []completion
	var wg sync.WaitGroup
	for i := 0; i < users; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				t0 := time.Now()
				if get(url) == nil {
					mu.Lock()
					out = append(out, completion{end: time.Now(), took: time.Since(t0)})
					mu.Unlock()
				}
			}
		}()
	}
	return func() []completion { wg.Wait(); return out }
}

type completion struct {
	end  time.Time
	took time.Duration
}

// The phpfpm preset read through a real php-fpm 8.2, Apache and Prometheus:
// 3 users on a pool of 4 children keep 3 busy; 3 requests queued behind 4
// idle children that cannot accept (stopped, as a CPU cap stalls them) do
// not fill the pool; 10 users keep all 4 busy with requests queued (the
// client waits longer than a child works), and the status page, served by
// pm.status_listen's pool of its own, still answers every scrape.
func TestPHPFPMPresetAgainstARealPool(t *testing.T) {
	promtest.Binary(t, "TestPHPFPMPresetAgainstARealPool")
	const children, ms = 4, 200
	s := startPHPStack(t, children)
	workers := poolChildren(t, s.master, "test")
	require.Len(t, workers, children, "php-fpm's children of pool test")

	const interval = 250 * time.Millisecond
	prom := promtest.ScrapingJobs(t, "TestPHPFPMPresetAgainstARealPool", interval, 2*interval,
		promtest.Job{Name: "phpfpm", Target: s.status, Path: "/status", Params: url.Values{"openmetrics": {""}}})
	client, err := api.NewClient(api.Config{Address: prom})
	require.NoError(t, err)
	papi := v1.NewAPI(client)
	require.Eventually(t, func() bool {
		v, _, _, err := papi.Query(context.Background(), `phpfpm_up == 1`, time.Now())
		return err == nil && len(v.(model.Vector)) == 1
	}, 60*time.Second, 100*time.Millisecond, "Prometheus did not read php-fpm's status page")

	// Four windows of 3 s: 3 users; the children stopped with 3 requests
	// in the listen queue; 10 users for two windows (the first sample of a
	// window that starts a load reads the one before).
	const step, windows = 3 * time.Second, 4
	url := fmt.Sprintf("%s/app/sleep.php?ms=%d", s.web, ms)
	start := time.Now().Add(time.Second).Truncate(time.Second)
	time.Sleep(time.Until(start))
	var done []completion
	var stalled sync.WaitGroup
	for _, phase := range []struct{ users, windows int }{{3, 1}, {0, 1}, {10, 2}} {
		until := start.Add(time.Duration(phase.windows) * step)
		if phase.users == 0 {
			waitIdle(t, s.web)
			signal(t, workers, syscall.SIGSTOP)
			for range 3 {
				stalled.Add(1)
				go func() { defer stalled.Done(); _ = get(url) }()
			}
			time.Sleep(time.Until(until))
			signal(t, workers, syscall.SIGCONT)
			start = until
			continue
		}
		ctx, cancel := context.WithDeadline(context.Background(), until)
		wait := load(ctx, url, phase.users)
		<-ctx.Done()
		done = append(done, wait()...)
		cancel()
		start = until
	}
	stalled.Wait()
	start = start.Add(-windows * step)
	// Each window's requests (those that ended in it) and their mean time.
	var counts [windows]int
	var means [windows]time.Duration
	for _, c := range done {
		if k := int(c.end.Sub(start) / step); k >= 0 && k < windows {
			counts[k]++
			means[k] += c.took
		}
	}
	for k := range means {
		if counts[k] > 0 {
			means[k] /= time.Duration(counts[k])
		}
	}
	end := start.Add(windows * step)
	require.Eventually(t, func() bool {
		v, _, _, err := papi.Query(context.Background(), `timestamp(phpfpm_up)`, time.Now())
		return err == nil && len(v.(model.Vector)) == 1 && float64(v.(model.Vector)[0].Value) > float64(end.Add(interval).Unix())
	}, 30*time.Second, 50*time.Millisecond, "Prometheus did not scrape past the last window")

	sec := map[string]any{
		"prometheus": prom,
		"tiers": map[string]any{"php": map[string]any{
			"presets": []any{"phpfpm"},
			"servers": []any{map[string]any{"instance": s.status}},
			"queries": map[string]any{"cpu": "vector(0.5)"},
		}},
	}
	r, err := NewPassive(sec, "/x/deployment.yaml")
	require.NoError(t, err)
	var log strings.Builder
	r.Log = &log
	d := algorithms.Deployment{Topology: "1", Tiers: []algorithms.Tier{
		{Name: "php", Role: "app", Replicas: 1, Cores: 1, Pools: []string{algorithms.PoolThreads}, Software: algorithms.SoftwarePHPFPM, Children: true},
	}}
	ws, err := r.Windows(context.Background(), d, start, end, step)
	require.NoError(t, err, log.String())
	require.Len(t, ws, windows)
	for k, w := range ws {
		php := w.Observation.Servers[0]
		require.Len(t, php.Pools, 1)
		pool := php.Pools[0]
		t.Logf("window %d: %d requests (%.1f/s, %.0f ms each at the client): throughput %.2f/s, responseTime %.0f ms, busy %.2f of %d, fullShare %.2f",
			k, counts[k], float64(counts[k])/step.Seconds(), means[k].Seconds()*1000, php.Throughput, php.ResponseTime*1000, pool.Busy, pool.Size, pool.FullShare)
		assert.Equal(t, children, pool.Size, "window %d: the pool's size is pm.max_children", k)
		if k == 1 {
			// The stalled window: requests waited in the listen queue
			// (php-fpm counted them), and no child was busy.
			v, _, _, err := papi.Query(context.Background(), fmt.Sprintf(`max_over_time(phpfpm_listen_queue[%ds])`, int(step.Seconds())), start.Add(2*step))
			require.NoError(t, err)
			require.Len(t, v.(model.Vector), 1)
			assert.GreaterOrEqual(t, float64(v.(model.Vector)[0].Value), 1.0, "the stopped children left requests in the listen queue")
			assert.Less(t, pool.FullShare, 0.3, "3 requests queued behind 4 idle children: not full")
			continue
		}
		require.Empty(t, w.Problem, w.Label)
		assert.InEpsilon(t, float64(counts[k])/step.Seconds(), php.Throughput, 0.25, "window %d: requests/s against the client's count", k)
		// Little's law gives the time in a child: at least the script's
		// sleep, and no more than the client saw (which adds Apache and,
		// when all children are busy, the listen queue).
		assert.GreaterOrEqual(t, php.ResponseTime, 0.9*ms/1000.0, "window %d", k)
		if k == 0 {
			assert.LessOrEqual(t, php.ResponseTime, 1.25*means[k].Seconds(), "window %d", k)
			// Each user spends at least the child's 200 ms of its cycle (the
			// client's mean time) in a child: 3 users keep 3 x 200 ms / mean
			// to 3 children busy. On a loaded machine the time outside the
			// children (Apache, the client's scheduling) grows: a run at a
			// load of 20 read 2.09, which a fixed 3 +- 0.6 refused.
			lower := 3 * float64(ms) / float64(means[k].Milliseconds())
			assert.GreaterOrEqual(t, pool.Busy, lower-0.3, "3 users keep at least 3 x %d ms / %v children busy", ms, means[k])
			assert.LessOrEqual(t, pool.Busy, 3.3, "3 users keep at most 3 children busy")
			assert.Less(t, pool.FullShare, 0.3, "3 users on 4 children: seldom full")
		} else {
			assert.Less(t, php.ResponseTime, means[k].Seconds(), "10 users on 4 children wait in the queue, which Little's law over the children leaves out")
			assert.Greater(t, pool.Busy, 3.4, "10 users keep all 4 children busy")
			if k == 3 {
				assert.Greater(t, pool.FullShare, 0.8, "10 users on 4 children: full")
			}
		}
	}
	// The status page answered every scrape while every child was busy.
	v, _, _, err := papi.Query(context.Background(), fmt.Sprintf(`min_over_time(up{job="phpfpm"}[%ds])`, int(2*step.Seconds())), end)
	require.NoError(t, err)
	require.Len(t, v.(model.Vector), 1)
	assert.Equal(t, model.SampleValue(1), v.(model.Vector)[0].Value, "a scrape failed while the pool was full")
}
