package e2e

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A test binary that dies other than by returning from TestMain (go test's
// -timeout panics it, Ctrl-C and kill -9 end it at once) never runs TestMain's
// teardown, and left the testbed's servers running. The watchdog is a process
// of its own session that outlives the test binary: it reads the write end of
// a pipe that only the test binary holds. A normal end writes "disarm" first;
// any other end closes the pipe with nothing written, and the watchdog runs
// the teardown. It takes the testbed's lock first, so it waits for nothing
// (the dead process's lock is released) but keeps a later run from bringing
// the testbed up under it.
type watchdog struct{ w *os.File }

// armWatchdog starts the teardown command's watchdog; its output goes to log.
func armWatchdog(teardown []string, env []string, lock, log string) (*watchdog, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("watchdog: %w", err)
	}
	defer r.Close()
	out, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("watchdog: %w", err)
	}
	defer out.Close()
	// "$@" is the teardown; flock(1) waits for the lock the test binary held.
	script := `IFS= read -r word; [ "$word" = disarm ] && exit 0
echo "softalloc e2e: the test process ended without its teardown; running: $*" >&2
exec flock "$LOCK" "$@"`
	cmd := exec.Command("sh", append([]string{"-c", script, "watchdog"}, teardown...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = r, out, out
	cmd.Env = append(append(os.Environ(), env...), "LOCK="+lock)
	// Its own session: a signal to the test's process group spares it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil, fmt.Errorf("watchdog: %w", err)
	}
	// Not waited for: it outlives this process when it has work to do.
	_ = cmd.Process.Release()
	return &watchdog{w: w}, nil
}

// disarm tells the watchdog that the teardown ran (or was not needed).
func (d *watchdog) disarm() {
	if d == nil {
		return
	}
	fmt.Fprintln(d.w, "disarm")
	d.w.Close()
}

// TestWatchdogTearsDownAfterAKill kills a process that armed a watchdog, as
// go test's timeout or kill -9 would, and waits for the teardown to run; a
// process that disarms it leaves nothing run.
func TestWatchdogTearsDownAfterAKill(t *testing.T) {
	if os.Getenv("SOFTALLOC_WATCHDOG_CHILD") != "" {
		return // the child's run of this test: see watchdogChild
	}
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("SKIPPED: flock(1) (util-linux) is not installed")
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		name, end string
		want      string
	}{
		{"killed", "kill", "torn down\n"},
		{"returned", "disarm", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, tc.name+".out")
			fifo := filepath.Join(dir, tc.name+".done")
			require.NoError(t, syscall.Mkfifo(fifo, 0o600))
			// The teardown writes out, then signals the fifo; a disarmed
			// watchdog signals it without the teardown.
			child := exec.Command(os.Args[0], "-test.run", "^TestMain$")
			child.Env = append(os.Environ(), "SOFTALLOC_WATCHDOG_CHILD="+tc.end, "WATCHDOG_OUT="+out, "WATCHDOG_FIFO="+fifo,
				"WATCHDOG_LOCK="+filepath.Join(dir, tc.name+".lock"), "WATCHDOG_LOG="+filepath.Join(dir, tc.name+".log"))
			res, err := child.CombinedOutput()
			if tc.end == "kill" {
				var exit *exec.ExitError
				require.ErrorAs(t, err, &exit, "%s", res)
				require.Equal(t, "signal: killed", exit.Error())
			} else {
				require.NoError(t, err, "%s", res)
			}
			done := make(chan string, 1)
			go func() {
				f, err := os.Open(fifo) // blocks until the watchdog opens it
				if err != nil {
					done <- err.Error()
					return
				}
				defer f.Close()
				line, _ := bufio.NewReader(f).ReadString('\n')
				done <- line
			}()
			select {
			case line := <-done:
				require.Equal(t, "watchdog done\n", line)
			case <-time.After(time.Minute):
				log, _ := os.ReadFile(filepath.Join(dir, tc.name+".log"))
				t.Fatalf("the watchdog did not finish within a minute; its log: %s", log)
			}
			got, err := os.ReadFile(out)
			if tc.want == "" {
				require.ErrorIs(t, err, os.ErrNotExist, "a disarmed watchdog ran the teardown")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, string(got))
		})
	}
}

// watchdogChild is the child of TestWatchdogTearsDownAfterAKill, run from
// TestMain before anything else: it arms a watchdog whose teardown writes a
// file and signals the test, then dies by SIGKILL; or it disarms that one and
// returns, leaving a second watchdog whose teardown only signals the test,
// which then checks that the first wrote nothing.
func watchdogChild(end string) int {
	lock, log := os.Getenv("WATCHDOG_LOCK"), os.Getenv("WATCHDOG_LOG")
	const signal = `echo "watchdog done" > "$WATCHDOG_FIFO"`
	d, err := armWatchdog([]string{"sh", "-c", `echo "torn down" > "$WATCHDOG_OUT" && ` + signal}, nil, lock, log)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if end == "kill" {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // SIGKILL cannot be caught
	}
	d.disarm()
	if _, err := armWatchdog([]string{"sh", "-c", signal}, nil, lock, log); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
