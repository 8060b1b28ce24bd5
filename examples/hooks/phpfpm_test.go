package hooks

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/softalloc/softalloc/internal/freeport"
	"github.com/softalloc/softalloc/internal/testserver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fpmStack is a php-fpm pool and, in front of its status listener, an
// Apache that speaks HTTP to it (Prometheus and curl speak no FastCGI).
type fpmStack struct {
	dir, pool, conf, pid, status string
}

func startPHPFPM(t *testing.T, pm string) fpmStack {
	t.Helper()
	fpm := testserver.Binary(t, "php-fpm8.2", "php8.2-fpm")
	apache := testserver.Binary(t, "apache2", "apache2")
	dir := shortTempDir(t)
	s := fpmStack{dir: dir, pool: filepath.Join(dir, "pool.d", "www.conf"), conf: filepath.Join(dir, "php-fpm.conf"), pid: filepath.Join(dir, "fpm.pid")}
	require.NoError(t, os.Mkdir(filepath.Join(dir, "pool.d"), 0o755))
	listen, statusPort, httpPort := freeport.Port(t), freeport.Port(t), freeport.Port(t)
	writeFile(t, s.conf, fmt.Sprintf(`[global]
pid = %s
error_log = %s/fpm.log
daemonize = no
include = %s/pool.d/*.conf
`, s.pid, dir, dir))
	writeFile(t, s.pool, fmt.Sprintf(`; the test's pool
[www]
user = www-data
group = www-data
listen = 127.0.0.1:%d
%s
pm.status_path = /status
pm.status_listen = 127.0.0.1:%d
`, listen, pm, statusPort))
	cmd := testserver.Start(t, fpm, "--nodaemonize", "-n", "-y", s.conf)
	_ = cmd
	mods := "/usr/lib/apache2/modules"
	writeFile(t, filepath.Join(dir, "httpd.conf"), fmt.Sprintf(`ServerRoot %[1]q
ServerName 127.0.0.1
Listen 127.0.0.1:%[2]d
PidFile %[1]s/httpd.pid
DefaultRuntimeDir %[1]s
ErrorLog %[1]s/httpd-error.log
User www-data
Group www-data
LoadModule mpm_event_module %[3]s/mod_mpm_event.so
LoadModule authz_core_module %[3]s/mod_authz_core.so
LoadModule proxy_module %[3]s/mod_proxy.so
LoadModule proxy_fcgi_module %[3]s/mod_proxy_fcgi.so
StartServers 1
ServerLimit 1
ThreadsPerChild 4
MaxRequestWorkers 4
ProxyPass /status fcgi://127.0.0.1:%[4]d/status timeout=5
`, dir, httpPort, mods, statusPort))
	testserver.Start(t, apache, "-X", "-f", filepath.Join(dir, "httpd.conf"))
	s.status = fmt.Sprintf("http://127.0.0.1:%d/status", httpPort)
	testserver.WaitFor(t, "php-fpm's status page", 30*time.Second, func() error { _, err := testserver.HTTPGet(s.status); return err })
	return s
}

func (s fpmStack) env() []string {
	return []string{"PHPFPM_POOL=" + s.pool, "PHPFPM_CONF=" + s.conf, "PHPFPM_PID=" + s.pid, "PHPFPM_STATUS=" + s.status, "PHPFPM_INI="}
}

// totalProcesses reads the pool's processes from php-fpm's own status page.
func (s fpmStack) totalProcesses() (int, error) {
	body, err := testserver.HTTPGet(s.status + "?json")
	if err != nil {
		return 0, err
	}
	var st struct {
		Total int `json:"total processes"`
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		return 0, fmt.Errorf("status page %q: %w", body, err)
	}
	return st.Total, nil
}

// The php-fpm hook rewrites pm.max_children, has php-fpm check it, reloads,
// and returns once the status page shows the new children; a size php-fpm
// refuses leaves the file and the running pool as they were.
func TestPHPFPMHook(t *testing.T) {
	t.Parallel()
	t.Run("static", func(t *testing.T) {
		t.Parallel()
		s := startPHPFPM(t, "pm = static\npm.max_children = 3")
		testserver.WaitFor(t, "3 children", 30*time.Second, func() error {
			n, err := s.totalProcesses()
			if err == nil && n != 3 {
				err = fmt.Errorf("%d processes", n)
			}
			return err
		})

		r := runHook(t, s.env(), "phpfpm.sh", "5")
		require.Equal(t, 0, r.code, r.stderr)
		assert.Regexp(t, `^phpfpm: pm.max_children 3 -> 5 \(.*www.conf, reloaded, 5 processes\)\n$`, r.stdout)
		n, err := s.totalProcesses()
		require.NoError(t, err)
		assert.Equal(t, 5, n, "php-fpm's own status page")

		r = runHook(t, s.env(), "phpfpm.sh", "5")
		require.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stdout, "pm.max_children 5 (unchanged")

		// Without a status page the hook counts the master's children.
		noStatus := append(s.env(), "PHPFPM_STATUS=")
		r = runHook(t, noStatus, "phpfpm.sh", "2")
		require.Equal(t, 0, r.code, r.stderr)
		assert.Regexp(t, `^phpfpm: pm.max_children 5 -> 2 \(.*www.conf, reloaded, 2 processes\)\n$`, r.stdout)
		n, err = s.totalProcesses()
		require.NoError(t, err)
		assert.Equal(t, 2, n, "php-fpm's own status page")
		r = runHook(t, s.env(), "phpfpm.sh", "5")
		require.Equal(t, 0, r.code, r.stderr)

		r = runHook(t, s.env(), "phpfpm.sh", "0")
		assert.Equal(t, 2, r.code)
		assert.Contains(t, r.stderr, "children '0': want a positive integer")
		body, err := os.ReadFile(s.pool)
		require.NoError(t, err)
		assert.Contains(t, string(body), "pm.max_children = 5")
		n, err = s.totalProcesses()
		require.NoError(t, err)
		assert.Equal(t, 5, n)
	})
	t.Run("RefusedByPHPFPM", func(t *testing.T) {
		t.Parallel()
		// pm = dynamic with 3 children started: php-fpm -t refuses fewer
		// than pm.start_servers.
		s := startPHPFPM(t, "pm = dynamic\npm.max_children = 4\npm.start_servers = 3\npm.min_spare_servers = 1\npm.max_spare_servers = 3")
		before, err := os.ReadFile(s.pool)
		require.NoError(t, err)
		r := runHook(t, s.env(), "phpfpm.sh", "2")
		assert.Equal(t, 1, r.code)
		assert.Contains(t, r.stderr, "php-fpm refuses pm.max_children = 2")
		assert.Contains(t, r.stderr, "left at 4")
		after, err := os.ReadFile(s.pool)
		require.NoError(t, err)
		assert.Equal(t, string(before), string(after), "the old pool file is back")
		entries, err := os.ReadDir(filepath.Dir(s.pool))
		require.NoError(t, err)
		assert.Len(t, entries, 1, "no temporary file left beside the pool's")
		n, err := s.totalProcesses()
		require.NoError(t, err)
		assert.Equal(t, 3, n, "the running pool is untouched")
		assert.NotContains(t, strings.ToLower(r.stdout), "->")
	})
}
