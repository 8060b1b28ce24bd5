package accesslog

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/internal/freeport"
	"github.com/softalloc/softalloc/internal/runner/live"
	"github.com/softalloc/softalloc/internal/testserver"
)

// TestTheRealApachesLog runs Debian's Apache with ApacheLogConfig (what
// softalloc workload --help prints) and
// Apache's own combined format with %D, drives it with the load generator,
// and reads both logs: every line parses, and the workload comes back.
func TestTheRealApachesLog(t *testing.T) {
	bin := testserver.Binary(t, "apache2", "apache2")
	dir := t.TempDir()
	// Apache's children (www-data) read the pages: the test's directories must let them.
	require.NoError(t, os.Chmod(dir, 0o755))
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o755))
	docs := filepath.Join(dir, "docs")
	require.NoError(t, os.Mkdir(docs, 0o755))
	for name, body := range map[string]string{"index.html": "<html>home</html>", "story.html": "<html>story</html>", "logo.gif": "GIF89a"} {
		require.NoError(t, os.WriteFile(filepath.Join(docs, name), []byte(body), 0o644))
	}
	addr := freeport.Addr(t)
	user := ""
	if os.Geteuid() == 0 {
		user = "User www-data\nGroup www-data\n"
	}
	conf := filepath.Join(dir, "httpd.conf")
	require.NoError(t, os.WriteFile(conf, []byte(fmt.Sprintf(`ServerRoot %[1]s
ServerName 127.0.0.1
Listen %[2]s
PidFile %[1]s/httpd.pid
DefaultRuntimeDir %[1]s
ErrorLog %[1]s/error.log
%[3]sLoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so
LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so
DocumentRoot %[1]s/docs
<Directory />
  AllowOverride None
</Directory>
<Directory %[1]s/docs>
  Require all granted
</Directory>
KeepAlive On
%[4]sLogFormat "%%h %%l %%u %%t \"%%r\" %%>s %%b \"%%{Referer}i\" \"%%{User-Agent}i\" %%D" combinedD
CustomLog %[1]s/access-seconds.log combinedD
`, dir, addr, user, ApacheLogConfig(filepath.Join(dir, "access.log")))), 0o644))
	// -X: one process in the foreground, which the cleanup stops.
	cmd := exec.Command(bin, "-X", "-f", conf)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			errLog, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			if len(errLog) > 4000 {
				errLog = errLog[len(errLog)-4000:]
			}
			t.Logf("apache2: %s\n%s", out.String(), errLog)
		}
	})
	target, err := url.Parse("http://" + addr)
	require.NoError(t, err)
	// Listening is not enough: the port, free when the test chose it, may
	// have been taken by another program since, and the load would go to
	// it. The server answers as Apache.
	require.Eventually(t, func() bool { return servesAs(target, "Apache") }, 30*time.Second, 50*time.Millisecond,
		"Apache did not answer on %s (a port another program took?)", addr)

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

	read := func(name string) *Result {
		// Apache writes its log as each request ends: wait until every
		// page the users had answered is there.
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
			require.True(t, e.HasDuration, "%+v", e)
			in.Add(e)
		}
		require.NoError(t, r.Err())
		require.Zero(t, r.Bad, "%s: %+v", name, r.FirstBad)
		res, err := in.Finish(name)
		require.NoError(t, err)
		_, err = live.ParseWorkload(res.YAML)
		require.NoError(t, err)
		return res
	}
	for _, name := range []string{"access.log", "access-seconds.log"} {
		res := read(name)
		s := res.Summary
		assert.Equal(t, "apache", s.Format, name)
		assert.EqualValues(t, users, s.Sessions, name)
		got := byName(res)
		require.Len(t, got, 2, "%s: %v", name, got)
		assert.Equal(t, []string{"/logo.gif"}, got["/index.html"].Embedded, name)
		assert.True(t, strings.HasPrefix(got["/story.html?id=*"].Path, "/story.html?id={rand:"), got["/story.html?id=*"].Path)
		t.Logf("%s: %d pages, think %.2f ms (the clients' gaps %.2f ms, slept %.2f ms), %d negative",
			name, s.Pages, s.ThinkTime.Mean*1e3, ld.gap*1e3, ld.slept*1e3, s.ThinkTime.Negative)
		// The log's gaps are the clients' and the delays on the way: never
		// shorter. Logged to the millisecond, a gap is negative only when the
		// think time drawn was under a millisecond (1 in 20 draws of a 20 ms
		// exponential); to the second, most of the test's 20 ms gaps are
		// negative or a second long, and only their mean holds.
		if name == "access.log" {
			assert.GreaterOrEqual(t, s.ThinkTime.Mean, 0.95*ld.gap, name)
			assert.LessOrEqual(t, float64(s.ThinkTime.Negative), 0.05*float64(s.ThinkTime.Count))
		} else {
			se := s.ThinkTime.StdDev / math.Sqrt(float64(s.ThinkTime.Count))
			assert.InDelta(t, ld.gap, s.ThinkTime.Mean, 4*se+0.1*ld.gap, "%s: the mean of gaps to the second", name)
		}
	}
}

func sum(xs []int64) int64 {
	var n int64
	for _, x := range xs {
		n += x
	}
	return n
}

// servesAs reports whether the server at target is server (nginx, Apache):
// its Server header, on a path that is no page (404), so that the check
// adds no session to the log.
func servesAs(target *url.URL, server string) bool {
	resp, err := http.Get(target.String() + "/softalloc-ready")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode == http.StatusNotFound && strings.HasPrefix(resp.Header.Get("Server"), server)
}
