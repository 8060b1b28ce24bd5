package accesslog

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/internal/freeport"
	"github.com/softalloc/softalloc/internal/runner/live"
	"github.com/softalloc/softalloc/internal/testserver"
)

// TestTheRealNginxsLog runs Debian's nginx with NginxLogConfig (what
// softalloc workload --help prints) and with $time_local, drives it with
// the load generator, and reads both logs: every line parses, the times are
// the requests' ends, and the workload comes back.
func TestTheRealNginxsLog(t *testing.T) {
	bin := testserver.Binary(t, "nginx", "nginx")
	dir := t.TempDir()
	// nginx's workers (nobody when root starts it) read the pages.
	require.NoError(t, os.Chmod(dir, 0o755))
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o755))
	docs := filepath.Join(dir, "docs")
	require.NoError(t, os.Mkdir(docs, 0o755))
	for name, body := range map[string]string{"index.html": "<html>home</html>", "story.html": "<html>story</html>", "logo.gif": "GIF89a"} {
		require.NoError(t, os.WriteFile(filepath.Join(docs, name), []byte(body), 0o644))
	}
	addr := freeport.Addr(t)
	conf := filepath.Join(dir, "nginx.conf")
	require.NoError(t, os.WriteFile(conf, []byte(fmt.Sprintf(`worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log;
events { worker_connections 256; }
http {
  client_body_temp_path %[1]s/body;
  proxy_temp_path %[1]s/proxy;
  fastcgi_temp_path %[1]s/fastcgi;
  uwsgi_temp_path %[1]s/uwsgi;
  scgi_temp_path %[1]s/scgi;
%[3]s  log_format local '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" $request_time';
  access_log %[1]s/access-local.log local;
  server {
    listen %[2]s;
    root %[1]s/docs;
  }
}
`, dir, addr, NginxLogConfig(filepath.Join(dir, "access.log")))), 0o644))
	cmd := exec.Command(bin, "-p", dir, "-e", filepath.Join(dir, "error.log"), "-c", conf, "-g", "daemon off;")
	// A file, not a pipe: the workers hold the master's output too, and
	// Wait would wait for them.
	out, err := os.Create(filepath.Join(dir, "nginx.out"))
	require.NoError(t, err)
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		// SIGTERM: the master stops its workers, then itself; a SIGKILL
		// would leave the workers running.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			o, _ := os.ReadFile(filepath.Join(dir, "nginx.out"))
			errLog, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Logf("nginx: %s\n%s", o, errLog)
		}
	})
	target, err := url.Parse("http://" + addr)
	require.NoError(t, err)
	// Listening is not enough: the port, free when the test chose it, may
	// have been taken by another program since, and the load would go to
	// it. The server answers as nginx.
	require.Eventually(t, func() bool { return servesAs(target, "nginx") }, 30*time.Second, 50*time.Millisecond,
		"nginx did not answer on %s (a port another program took?)", addr)

	w, err := live.ParseWorkload([]byte(`
thinkTime: {mean: 20ms}
start: Home
interactions:
  - {name: Home, path: /index.html, embedded: [/logo.gif], next: {Story: 0.7, EndOfSession: 0.1}}
  - {name: Story, path: "/story.html?id={rand:1:1000}", embedded: [/logo.gif], next: {Home: 0.5, Story: 0.3}}
`))
	require.NoError(t, err)
	const users = 10
	ld := runUsers(t, w, target, users, 20*time.Millisecond, 2*time.Second)
	require.Zero(t, ld.errs.Total(), "%+v", ld.errs)
	for _, name := range []string{"access.log", "access-local.log"} {
		// Each page and its logo, but a user's last logo: the load's end
		// can cut it before it reaches the server (on a loaded machine 1,217
		// of 2 x 610 were logged).
		var b []byte
		var served int64
		ok := assert.Eventually(t, func() bool {
			b, err = os.ReadFile(filepath.Join(dir, name))
			served = int64(bytes.Count(b, []byte(" 200 ")))
			return err == nil && served >= 2*sum(ld.pages)-users
		}, 10*time.Second, 50*time.Millisecond)
		require.True(t, ok, "%s holds %d requests served, for %d pages of %d users", name, served, sum(ld.pages), users)
		r := NewReader(bytes.NewReader(b), UnitAuto)
		in := NewInferrer(Options{})
		for {
			e, ok := r.Next()
			if !ok {
				break
			}
			require.True(t, e.HasDuration && e.DecimalDuration, "%+v", e)
			in.Add(e)
		}
		require.NoError(t, r.Err())
		require.Zero(t, r.Bad, "%s: %+v", name, r.FirstBad)
		res, err := in.Finish(name)
		require.NoError(t, err)
		_, err = live.ParseWorkload(res.YAML)
		require.NoError(t, err)
		s := res.Summary
		assert.Equal(t, "nginx", s.Format, name)
		assert.EqualValues(t, users, s.Sessions, name)
		got := byName(res)
		require.Len(t, got, 2, "%s: %v", name, got)
		assert.Equal(t, []string{"/logo.gif"}, got["/index.html"].Embedded, name)
		assert.True(t, strings.HasPrefix(got["/story.html?id=*"].Path, "/story.html?id={rand:"), got["/story.html?id=*"].Path)
		t.Logf("%s: %d pages, think %.2f ms (the clients' gaps %.2f ms, slept %.2f ms), %d negative",
			name, s.Pages, s.ThinkTime.Mean*1e3, ld.gap*1e3, ld.slept*1e3, s.ThinkTime.Negative)
		if name == "access.log" {
			// $msec and $request_time are to the millisecond: a gap is
			// off by 2 ms at most.
			assert.GreaterOrEqual(t, s.ThinkTime.Mean, ld.gap-0.002, name)
		}
	}
}
