// Package testserver starts the real servers tests talk to (Apache, nginx,
// php-fpm, MariaDB, PostgreSQL, the exporters): their binaries from Debian's
// packages, in the foreground, for the test's life.
package testserver

import (
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
