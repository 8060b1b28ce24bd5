package hooks

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// shortTempDir is a directory of the test's with a short path (a Unix
// socket's is limited to 107 bytes), readable by the servers' own users.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "hooks")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755))
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// writeFile writes a test's configuration file.
func writeFile(t *testing.T, path, text string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
}

// hookResult is one run of a hook.
type hookResult struct {
	code           int
	stdout, stderr string
}

// runHook runs the hook script with env added to the test's environment.
func runHook(t *testing.T, env []string, script string, args ...string) hookResult {
	t.Helper()
	cmd := exec.Command("./"+script, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	r := hookResult{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		r.code = exit.ExitCode()
	} else {
		require.NoError(t, err, "running %s", script)
	}
	t.Logf("%s %s: exit %d\nstdout: %sstderr: %s", script, strings.Join(args, " "), r.code, r.stdout, r.stderr)
	return r
}

// Every hook refuses a size that is not a positive integer, in any of its
// places, with exit 2 and a message naming the value, before it reads or
// touches anything (no server runs here, and none is asked).
func TestHooksRefuseBadSizes(t *testing.T) {
	t.Parallel()
	hooks := map[string][]string{ // each hook's sizes, by the name its message gives
		"phpfpm.sh":        {"children"},
		"apache.sh":        {"threads", "proxy_max"},
		"nginx.sh":         {"worker_connections", "max_conns", "keepalive"},
		"mariadb.sh":       {"max_connections"},
		"postgresql.sh":    {"max_connections"},
		"pgbouncer.sh":     {"default_pool_size", "max_client_conn"},
		"tomcat-hikari.sh": {"threads", "connections"},
	}
	for script, names := range hooks {
		for i, name := range names {
			for _, bad := range []string{"0", "-3", "abc", "1.5", "07", "", "4 4"} {
				args := make([]string, len(names))
				for j := range args {
					args[j] = "4"
				}
				args[i] = bad
				r := runHook(t, []string{"PATH=/usr/bin:/bin"}, script, args...)
				assert.Equal(t, 2, r.code, "%s %q", script, args)
				assert.Contains(t, r.stderr, fmt.Sprintf("%s: %s '%s': want a positive integer", strings.TrimSuffix(script, ".sh"), name, bad), "%s names the value", script)
				assert.Empty(t, r.stdout)
			}
		}
		r := runHook(t, nil, script)
		assert.Equal(t, 2, r.code, "%s without arguments", script)
		assert.Contains(t, r.stderr, "usage: "+script)
	}
}
