package live

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/freeport"
	"github.com/softalloc/softalloc/internal/testserver"
)

// A status page that is not there: php-fpm without pm.status_path behind
// Apache's proxy (Prometheus's scrape gets 404), and Apache without
// mod_status behind apache_exporter (the exporter answers and counts its
// failures). A trial's reading and doctor name what is missing; before, the trial
// read the tier's throughput, response time and pool as 0 with a warning.
func TestAMissingStatusPageIsNamedNotReadAsZero(t *testing.T) {
	promBin, _ := promBinaries(t)
	fpm := testserver.Binary(t, "php-fpm8.2", "php8.2-fpm")
	apache := testserver.Binary(t, "apache2", "apache2")
	exporter := testserver.Binary(t, "prometheus-apache-exporter", "prometheus-apache-exporter")
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755))

	// php-fpm with no status page: its pool answers /status as a script
	// it cannot find.
	pool, web := freeport.Addr(t), freeport.Addr(t)
	conf := filepath.Join(dir, "php-fpm.conf")
	require.NoError(t, os.WriteFile(conf, []byte(fmt.Sprintf(`[global]
pid = %[1]s/php-fpm.pid
error_log = %[1]s/php-fpm.log
daemonize = no
[test]
listen = %[2]s
pm = static
pm.max_children = 2
`, dir, pool)), 0o644))
	args := []string{"--nodaemonize", "-n", "-y", conf}
	if os.Geteuid() == 0 {
		args = append(args, "--allow-to-run-as-root")
	}
	testserver.Start(t, fpm, args...)
	// Apache without mod_status, proxying /status to the pool as the
	// testbed's proxies it to pm.status_listen.
	user := ""
	if os.Geteuid() == 0 {
		user = "User www-data\nGroup www-data\n"
	}
	mods := "/usr/lib/apache2/modules"
	httpd := filepath.Join(dir, "httpd.conf")
	require.NoError(t, os.WriteFile(httpd, []byte(fmt.Sprintf(`ServerRoot %[1]s
ServerName 127.0.0.1
Listen %[2]s
PidFile %[1]s/httpd.pid
DefaultRuntimeDir %[1]s
ErrorLog %[1]s/error.log
%[5]sLoadModule mpm_event_module %[4]s/mod_mpm_event.so
LoadModule authz_core_module %[4]s/mod_authz_core.so
LoadModule proxy_module %[4]s/mod_proxy.so
LoadModule proxy_fcgi_module %[4]s/mod_proxy_fcgi.so
StartServers 1
ServerLimit 1
ThreadsPerChild 8
MaxRequestWorkers 8
ProxyPass /status fcgi://%[3]s/status
`, dir, web, pool, mods, user)), 0o644))
	testserver.Start(t, apache, "-X", "-f", httpd)
	exp := freeport.Addr(t)
	testserver.Start(t, exporter, "--scrape_uri=http://"+web+"/server-status?auto", "--telemetry.address="+exp)

	config := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(config, []byte(fmt.Sprintf(`global: {scrape_interval: 250ms, scrape_timeout: 250ms}
scrape_configs:
  - job_name: phpfpm
    metrics_path: /status
    params: {openmetrics: ['']}
    static_configs: [{targets: [%[1]q]}]
  - job_name: apache
    static_configs: [{targets: [%[2]q]}]
`, web, exp)), 0o644))
	addr := freeport.Addr(t)
	testserver.Start(t, promBin, "--config.file="+config, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"), "--web.listen-address="+addr)
	client, err := api.NewClient(api.Config{Address: "http://" + addr})
	require.NoError(t, err)
	papi := v1.NewAPI(client)
	// Both jobs scraped: php-fpm's down, Apache's exporter up counting
	// its failures (Debian's 0.12 keeps apache_up at 1 on a 404).
	require.Eventually(t, func() bool {
		v, _, _, err := papi.Query(context.Background(), `up{job="phpfpm"} == 0 or increase(apache_exporter_scrape_failures_total[2s]) > 0`, time.Now())
		return err == nil && len(v.(model.Vector)) == 2
	}, 60*time.Second, 100*time.Millisecond, "Prometheus did not scrape both: %s", func() string {
		v, _, _, err := papi.Query(context.Background(), `up or apache_up`, time.Now())
		return fmt.Sprint(v, err)
	}())

	require.NoError(t, os.WriteFile(filepath.Join(dir, "workload.yaml"), []byte(`name: status
thinkTime: {mean: 100ms}
start: A
interactions:
  - {name: A, path: /status, next: {A: 1}}
`), 0o644))
	var sec map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(fmt.Sprintf(`
name: live
target: http://%[1]s
workload: workload.yaml
prometheus: http://%[3]s
runtime: 1s
interval: 250ms
scrapeTimeout: 10s
tiers:
  web:
    presets: [apache]
    servers: [{instance: %[2]q}]
    queries: {cpu: vector(0.5)}
  app:
    presets: [phpfpm]
    servers: [{instance: %[1]q}]
    queries: {cpu: vector(0.5)}
`, web, exp, addr)), &sec))
	r, err := New(sec, filepath.Join(dir, "deployment.yaml"))
	require.NoError(t, err)
	var log strings.Builder
	r.Log = &log
	d := algorithms.Deployment{Topology: "1/1", Tiers: []algorithms.Tier{
		{Name: "web", Role: algorithms.RoleWeb, Replicas: 1, Cores: 1, Pools: []string{algorithms.PoolThreads}},
		{Name: "app", Role: algorithms.RoleApp, Replicas: 1, Cores: 1, Pools: []string{algorithms.PoolThreads}, Software: algorithms.SoftwarePHPFPM, Children: true},
	}}
	a := algorithms.Allocation{"web": {Threads: 8}, "app": {Threads: 2}}
	ctx := context.Background()

	t.Run("a trial's reading fails naming it", func(t *testing.T) {
		end := time.Now()
		for _, c := range []struct {
			tier int
			want []string
		}{
			{0, []string{fmt.Sprintf("apache_exporter_scrape_failures_total{instance=%q} rose by", exp), "Apache's status page"}},
			{1, []string{"Prometheus cannot scrape " + web + " (job phpfpm)", "404 Not Found"}},
		} {
			tier := d.Tiers[c.tier]
			tc, q, err := r.tier(tier)
			require.NoError(t, err)
			_, err = r.server(ctx, &downTargets{}, tier, 0, q, serverVars(tier, 0, tc, "2000ms"), a[tier.Name], end)
			require.Error(t, err, "%s: the trial read its figures as 0 instead; log: %s", tier.Name, log.String())
			assert.ErrorAs(t, err, new(permanent), "no retry brings a status page back")
			for _, w := range c.want {
				assert.Contains(t, err.Error(), w, tier.Name)
			}
		}
		assert.NotContains(t, log.String(), "read as 0")
	})

	t.Run("doctor names the exporter that cannot read its server", func(t *testing.T) {
		rep, err := r.Doctor(ctx, d, a, DoctorOptions{})
		require.NoError(t, err)
		problems := strings.Join(rep.Problems, "\n")
		assert.Contains(t, problems, fmt.Sprintf("prometheus: target %s (job phpfpm) is down: server returned HTTP status 404 Not Found", web))
		assert.Contains(t, problems, fmt.Sprintf("prometheus: apache_exporter_scrape_failures_total{instance=%q} rose by", exp))
	})
}

// Whether a failed scrape may heal rests on what Prometheus's targets API
// says of it where it can: a scrape whose duration reached its timeout
// timed out, whatever its message (a proxy's, another Prometheus
// version's words); the message is read only for a refused or cut
// connection, which no field tells apart, and for a timeout when an older
// Prometheus gives no scrapeTimeout.
func TestTransientScrapeRestsOnTheScrapesDuration(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name      string
		target    downTarget
		transient bool
	}{
		{"timed out, in other words", downTarget{lastError: `Get "http://a/metrics": upstream gave up`, duration: 250 * ms, timeout: 250 * ms}, true},
		{"timed out", downTarget{lastError: `Get "http://a/metrics": context deadline exceeded`, duration: 251 * ms, timeout: 250 * ms}, true},
		{"404 at once", downTarget{lastError: "server returned HTTP status 404 Not Found", duration: 2 * ms, timeout: 250 * ms}, false},
		{"a body it cannot parse", downTarget{lastError: `"INVALID" is not a valid start token`, duration: 3 * ms, timeout: 250 * ms}, false},
		{"refused", downTarget{lastError: `Get "http://a/metrics": dial tcp 127.0.0.1:9: connect: connection refused`, duration: ms, timeout: 250 * ms}, true},
		{"reset", downTarget{lastError: `read tcp 127.0.0.1:1->127.0.0.1:9: read: connection reset by peer`, duration: ms, timeout: 250 * ms}, true},
		{"closed before answering", downTarget{lastError: `Get "http://a/metrics": EOF`, duration: ms, timeout: 250 * ms}, true},
		{"no timeout known: the message", downTarget{lastError: `Get "http://a/metrics": context deadline exceeded`}, true},
		{"no timeout known, 404", downTarget{lastError: "server returned HTTP status 404 Not Found"}, false},
	} {
		assert.Equal(t, tc.transient, transientScrape(tc.target), tc.name)
	}
}
