package hooks

import (
	"fmt"
	"net"
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

// The nginx hook sets worker_connections, an upstream's max_conns and
// keepalive, has nginx -t check them and reloads; the running nginx then
// refuses clients past the new worker_connections, and a file nginx -t
// refuses is put back as it was.
func TestNginxHook(t *testing.T) {
	t.Parallel()
	nginx := testserver.Binary(t, "nginx", "nginx")
	dir := shortTempDir(t)
	conf := filepath.Join(dir, "nginx.conf")
	port, backend := freeport.Port(t), freeport.Port(t)
	writeFile(t, conf, fmt.Sprintf(`# the test's nginx
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log notice;
events {
  worker_connections 64;
}
http {
  access_log off;
  client_body_temp_path %[1]s/body;
  proxy_temp_path %[1]s/proxy;
  fastcgi_temp_path %[1]s/fastcgi;
  uwsgi_temp_path %[1]s/uwsgi;
  scgi_temp_path %[1]s/scgi;
  upstream other {
    server 127.0.0.1:%[3]d max_conns=3;
    keepalive 2;
  }
  upstream app {
    server 127.0.0.1:%[3]d max_conns=10;
    keepalive 4;
  }
  server {
    listen 127.0.0.1:%[2]d;
    location / { return 200 "ok\n"; }
    location /app/ { proxy_pass http://app/; proxy_http_version 1.1; proxy_set_header Connection ""; }
  }
}
`, dir, port, backend))
	testserver.Start(t, nginx, "-c", conf, "-p", dir, "-g", "daemon off;")
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	testserver.WaitFor(t, "nginx", 30*time.Second, func() error { _, err := testserver.HTTPGet(url); return err })
	env := []string{"NGINX_CONF=" + conf, "NGINX_PREFIX=" + dir, "NGINX_UPSTREAM=app"}

	r := runHook(t, env, "nginx.sh", "16", "20", "6")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "nginx: worker_connections 64 -> 16 (reloaded, new workers running, old ones shutting down)\n"+
		"nginx: max_conns 10 -> 20 (upstream app in "+conf+")\nnginx: keepalive 4 -> 6 (upstream app in "+conf+")\n", r.stdout)
	body, err := os.ReadFile(conf)
	require.NoError(t, err)
	assert.Contains(t, string(body), "worker_connections 16;")
	assert.Contains(t, string(body), "max_conns=20;\n    keepalive 6;")
	assert.Contains(t, string(body), "max_conns=3;\n    keepalive 2;", "the other upstream is left alone")

	// The running nginx holds 16 connections a worker, its listening
	// socket among them: 20 idle clients are more than it takes, and it says
	// so (closing idle ones to make room).
	var conns []net.Conn
	t.Cleanup(func() {
		for _, c := range conns {
			_ = c.Close()
		}
	})
	for range 20 {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		require.NoError(t, err)
		conns = append(conns, c)
	}
	testserver.WaitFor(t, "nginx's own complaint", 10*time.Second, func() error {
		log, err := os.ReadFile(filepath.Join(dir, "error.log"))
		if err == nil && !strings.Contains(string(log), "16 worker_connections are not enough") {
			err = fmt.Errorf("error.log: %s", log)
		}
		return err
	})

	r = runHook(t, env, "nginx.sh", "16")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "nginx: worker_connections 16 (unchanged)\n", r.stdout)

	r = runHook(t, env, "nginx.sh", "16", "5", "0")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "keepalive '0': want a positive integer")

	r = runHook(t, append(env, "NGINX_UPSTREAM=nosuch"), "nginx.sh", "16", "5")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "no server line with max_conns= in upstream nosuch")

	broken := strings.Replace(string(body), "access_log off;", "access_logg off;", 1)
	writeFile(t, conf, broken)
	r = runHook(t, env, "nginx.sh", "32")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "nginx -t refuses the new configuration")
	assert.Contains(t, r.stderr, `unknown directive "access_logg"`)
	after, err := os.ReadFile(conf)
	require.NoError(t, err)
	assert.Equal(t, broken, string(after))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		assert.NotRegexp(t, `^\.nginx-hook`, e.Name(), "no temporary file left")
	}
}
