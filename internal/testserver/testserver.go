// Package testserver starts the real servers tests talk to (Apache, nginx,
// php-fpm, MariaDB, PostgreSQL, the exporters): their binaries from Debian's
// packages, in the foreground, for the test's life.
package testserver

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/softalloc/softalloc/internal/procattr"
	"github.com/softalloc/softalloc/internal/syncbuf"
)

// Binary finds a Debian binary a test needs: a skip outside CI, a failure
// in it (.ci/run installs pkg through scripts/test-deps.sh).
func Binary(t testing.TB, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed in CI: scripts/test-deps.sh installs Debian's %s", name, pkg)
		}
		t.Skipf("SKIPPED: %s is not installed (apt-get install %s, or scripts/test-deps.sh); the test against the real server did not run", name, pkg)
	}
	return p
}

// Start runs a server in a process group of its own until the test ends,
// its output kept for the failure message. The cleanup kills the group:
// a master's children (php-fpm's, Apache's) hold the output pipe open
// after the master dies, and Wait, which waits for the pipe, hung a
// package for ten minutes.
func Start(t testing.TB, name string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(name, args...)
	var out syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = procattr.Child()
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s's output:\n%s", filepath.Base(name), out.String())
		}
	})
	return cmd
}

// WaitFor polls ready until it answers nil, failing the test with what, the
// timeout and ready's last error once the timeout has passed: the one
// deadline loop of the tests that wait for a server to start or to take a
// change.
func WaitFor(t testing.TB, what string, timeout time.Duration, ready func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := ready()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %v", what, timeout, err)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// HTTPGet is the body of a GET of url, an error naming the status and the
// body unless the answer is 200. It keeps no connection: an idle one holds
// an old nginx worker or Apache child past a reload, which the hooks'
// tests would count.
func HTTPGet(url string) (string, error) {
	c := http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s: %s", url, resp.Status, b)
	}
	return string(b), nil
}
