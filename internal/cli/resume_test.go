package cli_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// journalKeys reads the keys of a journal's records, in order.
func journalKeys(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var keys []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line == "" {
			continue
		}
		var r struct{ Key string }
		require.NoError(t, json.Unmarshal([]byte(line), &r), "every line is a whole record")
		keys = append(keys, r.Key)
	}
	return keys
}

// waitForRecords polls until the journal holds n finished experiments.
func waitForRecords(t *testing.T, path string, n int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		data, _ := os.ReadFile(path)
		if bytes.Count(data, []byte("\n")) >= n {
			return
		}
		require.True(t, time.Now().Before(deadline), "fewer than %d experiments finished within a minute", n)
		time.Sleep(5 * time.Millisecond)
	}
}

// A real SIGINT to a real process mid-campaign keeps every finished
// experiment; running the command again runs none of them twice and gives
// the same answer as an uninterrupted run.
func TestInterruptedCampaignResumes(t *testing.T) {
	bin := softallocBinary(t)
	// The paper mode runs dozens of experiments: time enough to interrupt one.
	args := []string{"recommend", "--topology", "1/2/1/2", "--mode", "paper", "--ramp-up", "10s", "--runtime", "20s", "--output", "json", "--quiet"}

	whole := t.TempDir()
	cmd := exec.Command(bin, args...)
	cmd.Dir = whole
	want, err := cmd.Output()
	require.NoError(t, err)
	wantKeys := journalKeys(t, filepath.Join(whole, ".softalloc", "journal.jsonl"))

	dir := t.TempDir()
	journalPath := filepath.Join(dir, ".softalloc", "journal.jsonl")
	var stderr bytes.Buffer
	cmd = exec.Command(bin, args...)
	cmd.Dir, cmd.Stderr = dir, &stderr
	require.NoError(t, cmd.Start())
	waitForRecords(t, journalPath, 5)
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	err = cmd.Wait()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "the interrupted run fails: %v", err)
	assert.Equal(t, 130, exit.ExitCode())
	assert.Contains(t, stderr.String(), "run the same command again to resume")
	assert.Equal(t, 1, countLines(stderr.String()), "one line says it: %q", stderr.String())
	before := journalKeys(t, journalPath)
	require.Less(t, len(before), len(wantKeys), "interrupted before the end")

	cmd = exec.Command(bin, args...)
	cmd.Dir = dir
	got, err := cmd.Output()
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(got), "the resumed campaign gives the uninterrupted answer")

	after := journalKeys(t, journalPath)
	seen := map[string]bool{}
	for _, k := range after {
		assert.False(t, seen[k], "experiment %s ran twice", k)
		seen[k] = true
	}
	assert.Equal(t, before, after[:len(before)], "finished experiments are kept as they were")
	assert.ElementsMatch(t, wantKeys, after, "the same experiments as the uninterrupted run")
}

// SIGTERM, what a CI job's timeout or a container stop sends, exits 143 as
// a shell reports it (128 + 15), with the finished experiments kept.
func TestTerminatedCampaignExits143(t *testing.T) {
	bin := softallocBinary(t)
	dir := t.TempDir()
	journalPath := filepath.Join(dir, "j.jsonl")
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "recommend", "--topology", "1/2/1/2", "--mode", "paper", "--ramp-up", "10s", "--runtime", "20s",
		"--journal", journalPath, "--quiet")
	cmd.Dir, cmd.Stderr = dir, &stderr
	require.NoError(t, cmd.Start())
	waitForRecords(t, journalPath, 1)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	err := cmd.Wait()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "the terminated run fails: %v", err)
	assert.Equal(t, 143, exit.ExitCode(), "stderr: %s", stderr.String())
	assert.Contains(t, stderr.String(), "run the same command again to resume")
	assert.Equal(t, 1, countLines(stderr.String()), "one line says it: %q", stderr.String())
	assert.NotEmpty(t, journalKeys(t, journalPath))
}

// Issue 25: kill -9 of softalloc left the exec runner's program running (it
// has a process group of its own). On Linux it gets a parent-death signal.
func TestKilledRunnerStopsItsProgram(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("SKIPPED: the parent-death signal is Linux's")
	}
	bin := softallocBinary(t)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "program.pid")
	prog := filepath.Join(dir, "trial.sh")
	// The program records its pid and then is a long sleep (exec keeps the pid).
	require.NoError(t, os.WriteFile(prog, []byte("#!/bin/sh\necho $$ > "+pidFile+"\nexec sleep 600\n"), 0o755))
	cmd := exec.Command(bin, "simulate", "--topology", "1/2/1/2", "--users", "100", "--no-journal",
		"--runner", "exec", "--runner-cmd", prog, "--runtime", "10m", "--runner-retries", "0")
	cmd.Dir = dir
	require.NoError(t, cmd.Start())
	var pid int
	deadline := time.Now().Add(time.Minute)
	for pid == 0 {
		if b, err := os.ReadFile(pidFile); err == nil && bytes.HasSuffix(b, []byte("\n")) {
			pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
			require.NoError(t, err)
			break
		}
		require.True(t, time.Now().Before(deadline), "the program did not start within a minute")
		time.Sleep(10 * time.Millisecond)
	}
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	deadline = time.Now().Add(30 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		// A zombie waiting for init to reap it is gone for our purpose.
		if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && strings.Contains(string(st), ") Z ") {
			break
		}
		require.True(t, time.Now().Before(deadline), "program %d still runs 30 s after softalloc was killed", pid)
		time.Sleep(10 * time.Millisecond)
	}
}

// Issue 25: Ctrl-C while the metrics are pushed exited 1 ("capacity
// regressed" to check), not 130.
func TestInterruptDuringThePushExits130(t *testing.T) {
	bin := softallocBinary(t)
	arrived := make(chan struct{}, 1)
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read the body, so that the server notices the client leaving.
		_, _ = io.Copy(io.Discard, r.Body)
		arrived <- struct{}{}
		<-r.Context().Done()
	}))
	defer hang.Close()
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "simulate", "--topology", "1/2/1/2", "--users", "100", "--runtime", "1s", "--no-journal",
		"--pushgateway", hang.URL)
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	select {
	case <-arrived:
	case <-time.After(time.Minute):
		t.Fatal("the push never came")
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	err := cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 130, exit.ExitCode(), stderr.String())
	assert.Equal(t, 1, strings.Count(stderr.String(), "interrupted"), "one line says it: %q", stderr.String())
	assert.Contains(t, stderr.String(), "softalloc: interrupted: push to ")
}

// Ctrl-C on `softalloc ... 2>&1 | tee log` reaches tee too: softalloc's
// stderr is then a broken pipe. Its note on stopping the trial died of
// SIGPIPE before the trial's process group was stopped, and the exec
// program's children ran on. Here stderr's reader is gone before the signal.
func TestInterruptWithABrokenStderrStopsTheTrial(t *testing.T) {
	bin := softallocBinary(t)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	prog := filepath.Join(dir, "trial.sh")
	require.NoError(t, os.WriteFile(prog, []byte("#!/bin/sh\nsleep 1000 &\necho $! > "+pidFile+"\nwait\n"), 0o755))

	r, w, err := os.Pipe()
	require.NoError(t, err)
	cmd := exec.Command(bin, "simulate", "--topology", "1/2/1/2", "--users", "100", "--runner", "exec", "--runner-cmd", prog,
		"--runtime", "10s", "--ramp-up", "1s", "--no-journal", "--progress", "plain")
	cmd.Stderr = w
	require.NoError(t, cmd.Start())
	require.NoError(t, w.Close())
	require.NoError(t, r.Close()) // the reader is gone: every write to stderr fails

	var child int
	deadline := time.Now().Add(30 * time.Second)
	for child == 0 {
		require.True(t, time.Now().Before(deadline), "the program never started its child")
		if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
			child, err = strconv.Atoi(strings.TrimSpace(string(b)))
			require.NoError(t, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	err = cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 130, exit.ExitCode(), "interrupted, not killed by SIGPIPE")
	assert.Eventually(t, func() bool { return syscall.Kill(child, 0) != nil }, 10*time.Second, 10*time.Millisecond,
		"the trial's child %d was stopped", child)
	_ = syscall.Kill(child, syscall.SIGKILL)
}
