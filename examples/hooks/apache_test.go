package hooks

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/softalloc/softalloc/internal/freeport"
	"github.com/softalloc/softalloc/internal/testserver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// apacheStack is Apache with mpm_event, its pools in a file of their own
// (one child holding every thread, as the testbed has it) and a ProxyPass
// to a backend, its status page on.
type apacheStack struct {
	config, pools, status string
	port, backend         int // Apache's port and its ProxyPass /app/ backend's
}

func startApache(t *testing.T, threads, perChild int) apacheStack {
	t.Helper()
	apache := testserver.Binary(t, "apache2", "apache2")
	testserver.Binary(t, "curl", "curl")
	dir := shortTempDir(t)
	s := apacheStack{config: filepath.Join(dir, "httpd.conf"), pools: filepath.Join(dir, "pools.conf")}
	port, backend := freeport.Port(t), freeport.Port(t)
	s.port, s.backend = port, backend
	mods := "/usr/lib/apache2/modules"
	writeFile(t, s.config, fmt.Sprintf(`ServerRoot %[1]q
ServerName 127.0.0.1
Listen 127.0.0.1:%[2]d
PidFile %[1]s/httpd.pid
DefaultRuntimeDir %[1]s
ErrorLog %[1]s/error.log
User www-data
Group www-data
LoadModule mpm_event_module %[3]s/mod_mpm_event.so
LoadModule authz_core_module %[3]s/mod_authz_core.so
LoadModule status_module %[3]s/mod_status.so
LoadModule proxy_module %[3]s/mod_proxy.so
LoadModule proxy_http_module %[3]s/mod_proxy_http.so
LoadModule proxy_fcgi_module %[3]s/mod_proxy_fcgi.so
<Location /server-status>
  SetHandler server-status
</Location>
Include %[1]s/pools.conf
`, dir, port, mods))
	writeFile(t, s.pools, fmt.Sprintf(`# the test's pools
StartServers 1
ServerLimit 4
ThreadLimit 64
ThreadsPerChild %[4]d
MaxRequestWorkers %[1]d
MinSpareThreads 1
MaxSpareThreads %[2]d
MaxConnectionsPerChild 0
ProxyPass /server-status !
ProxyPass /app/ http://127.0.0.1:%[3]d/ max=%[1]d timeout=60 keepalive=On
# php-fpm behind SetHandler, as the WordPress stack has it
<Proxy "fcgi://127.0.0.1:%[3]d">
  ProxySet max=%[1]d timeout=60
</Proxy>
`, threads, threads+1, backend, perChild))
	testserver.Start(t, apache, "-f", s.config, "-DFOREGROUND")
	s.status = fmt.Sprintf("http://127.0.0.1:%d/server-status", port)
	testserver.WaitFor(t, "Apache's status page", 30*time.Second, func() error { _, err := testserver.HTTPGet(s.status + "?auto"); return err })
	return s
}

func (s apacheStack) env() []string {
	return []string{"APACHE_POOLS=" + s.pools, "APACHE_CONFIG=" + s.config, "APACHE_STATUS=" + s.status}
}

// statusField reads a number from Apache's own status page.
func (s apacheStack) statusField(t *testing.T, name string) int {
	t.Helper()
	return s.statusFields(t, name)[0]
}

// statusFields reads numbers from one reading of the status page.
func (s apacheStack) statusFields(t *testing.T, names ...string) []int {
	t.Helper()
	body, err := testserver.HTTPGet(s.status + "?auto")
	require.NoError(t, err)
	var ns []int
	for _, name := range names {
		m := regexp.MustCompile(`(?m)^` + name + `: (\d+)$`).FindStringSubmatch(body)
		require.NotNil(t, m, "%s in %s", name, body)
		n, err := strconv.Atoi(m[1])
		require.NoError(t, err)
		ns = append(ns, n)
	}
	return ns
}

// threads are the threads of the server's processes not stopping.
func (s apacheStack) threads(t *testing.T) int {
	t.Helper()
	f := s.statusFields(t, "BusyWorkers", "IdleWorkers", "Stopping")
	require.Zero(t, f[2], "no process stopping")
	return f[0] + f[1]
}

// The Apache hook sets MaxRequestWorkers, ThreadsPerChild, MaxSpareThreads
// and ProxyPass max=, has apache2 -t check them, restarts gracefully and
// returns once the status page shows the new generation's threads; sizes
// ThreadLimit does not allow leave everything as it was.
func TestApacheHook(t *testing.T) {
	t.Parallel()
	s := startApache(t, 10, 10)
	gen := s.statusField(t, "ParentServerConfigGeneration")

	r := runHook(t, s.env(), "apache.sh", "20", "15")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "apache: MaxRequestWorkers 10 -> 20 (graceful restart, 20 threads)\n"+
		"apache: ThreadsPerChild 10 -> 20\napache: MaxSpareThreads 11 -> 21\n"+
		"apache: proxy max= 10 -> 15 ("+s.pools+")\n", r.stdout)
	assert.Greater(t, s.statusField(t, "ParentServerConfigGeneration"), gen)
	assert.Equal(t, 20, s.threads(t), "Apache's own status page")
	body, err := os.ReadFile(s.pools)
	require.NoError(t, err)
	assert.Contains(t, string(body), "ThreadsPerChild 20\nMaxRequestWorkers 20\nMinSpareThreads 1\nMaxSpareThreads 21\n")
	assert.Contains(t, string(body), "/ max=15 timeout=60 keepalive=On\n")
	assert.Contains(t, string(body), "  ProxySet max=15 timeout=60\n")

	r = runHook(t, s.env(), "apache.sh", "20", "15")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "apache: MaxRequestWorkers 20 (unchanged)\napache: proxy max= 15 (unchanged)\n", r.stdout)

	gen = s.statusField(t, "ParentServerConfigGeneration")
	r = runHook(t, s.env(), "apache.sh", "100")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "ThreadsPerChild 100 exceeds ThreadLimit 64")
	after, err := os.ReadFile(s.pools)
	require.NoError(t, err)
	assert.Equal(t, string(body), string(after))
	assert.Equal(t, gen, s.statusField(t, "ParentServerConfigGeneration"), "no restart")

	r = runHook(t, s.env(), "apache.sh", "ten")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "threads 'ten': want a positive integer")

	// A file apache2 -t refuses (a directive misspelt in it by hand) is
	// put back as it was, and the server is not restarted.
	broken := string(body) + "MaxRequestWorker 3\n"
	writeFile(t, s.pools, broken)
	r = runHook(t, s.env(), "apache.sh", "12")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "apache2 -t refuses the new configuration")
	after, err = os.ReadFile(s.pools)
	require.NoError(t, err)
	assert.Equal(t, broken, string(after))
	entries, err := os.ReadDir(filepath.Dir(s.pools))
	require.NoError(t, err)
	for _, e := range entries {
		assert.NotRegexp(t, `^\.apache-hook`, e.Name(), "no temporary file left")
	}
	assert.Equal(t, gen, s.statusField(t, "ParentServerConfigGeneration"))
	assert.Equal(t, 20, s.threads(t))
}

// With several children of ThreadsPerChild threads, the hook keeps
// ThreadsPerChild, sets MaxRequestWorkers and refuses more children than
// ServerLimit allows.
func TestApacheHookSeveralChildren(t *testing.T) {
	t.Parallel()
	s := startApache(t, 10, 5)
	gen := s.statusField(t, "ParentServerConfigGeneration")
	r := runHook(t, s.env(), "apache.sh", "20")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `^apache: MaxRequestWorkers 10 -> 20 \(graceful restart, \d+ threads\)\n`+
		`apache: proxy max= 10 -> 20 \(.*pools.conf\)\n$`, r.stdout)
	assert.Greater(t, s.statusField(t, "ParentServerConfigGeneration"), gen)
	body, err := os.ReadFile(s.pools)
	require.NoError(t, err)
	assert.Contains(t, string(body), "ThreadsPerChild 5\nMaxRequestWorkers 20\n")

	r = runHook(t, s.env(), "apache.sh", "25")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "25 threads need 5 children of 5 threads, more than ServerLimit 4")
	after, err := os.ReadFile(s.pools)
	require.NoError(t, err)
	assert.Equal(t, string(body), string(after))
}

// With --full-restart the hook restarts Apache at once (-k restart, its
// SIGHUP: the children end without finishing their requests) rather than
// gracefully, as the testbed does when its web threads change, and waits
// for the new generation's threads as after a graceful one.
func TestApacheHookFullRestart(t *testing.T) {
	t.Parallel()
	s := startApache(t, 10, 10)
	gen := s.statusField(t, "ParentServerConfigGeneration")
	errorLog := filepath.Join(filepath.Dir(s.config), "error.log")

	r := runHook(t, s.env(), "apache.sh", "--full-restart", "16")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "apache: MaxRequestWorkers 10 -> 16 (restart, 16 threads)\n"+
		"apache: ThreadsPerChild 10 -> 16\napache: MaxSpareThreads 11 -> 17\n"+
		"apache: proxy max= 10 -> 16 ("+s.pools+")\n", r.stdout)
	assert.Greater(t, s.statusField(t, "ParentServerConfigGeneration"), gen)
	assert.Equal(t, 16, s.threads(t), "Apache's own status page")
	log, err := os.ReadFile(errorLog)
	require.NoError(t, err)
	assert.Contains(t, string(log), "SIGHUP received.  Attempting to restart", "Apache's own word for -k restart")
	assert.NotContains(t, string(log), "SIGUSR1 received.  Doing graceful restart", "-k graceful's")

	// The environment's way says the same; a mode it does not know is refused.
	r = runHook(t, append(s.env(), "APACHE_RESTART=full"), "apache.sh", "12")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "apache: MaxRequestWorkers 16 -> 12 (restart, 12 threads)\n")
	assert.Equal(t, 12, s.threads(t))
	r = runHook(t, append(s.env(), "APACHE_RESTART=hard"), "apache.sh", "14")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "APACHE_RESTART 'hard': want graceful or full")
	assert.Equal(t, 12, s.threads(t))
}

// An old child that does not stop (it serves a request its backend never
// answers) keeps the new generation from showing alone: the hook fails at
// HOOK_WAIT and says what the status page showed, so that a restart that
// hangs in CI names what held it.
func TestApacheHookSaysWhatHeldTheRestart(t *testing.T) {
	t.Parallel()
	s := startApache(t, 10, 10)
	backend, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", s.backend))
	require.NoError(t, err)
	held := make(chan net.Conn, 1)
	go func() {
		if c, err := backend.Accept(); err == nil {
			held <- c // read nothing, answer nothing
		}
	}()
	t.Cleanup(func() {
		backend.Close()
		select {
		case c := <-held:
			c.Close()
		default:
		}
	})
	go func() { _, _ = testserver.HTTPGet(fmt.Sprintf("http://127.0.0.1:%d/app/slow", s.port)) }()
	require.Eventually(t, func() bool { return len(held) == 1 }, 10*time.Second, 20*time.Millisecond, "the request reached the backend")

	r := runHook(t, append(s.env(), "HOOK_WAIT=2"), "apache.sh", "12")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "Apache did not show generation")
	assert.Contains(t, r.stderr, "ParentServerConfigGeneration 2, ")
	assert.Contains(t, r.stderr, "Processes 2, Stopping 1, ", "the old child, stopping, with its one request")
}
