package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeLocust writes a "locust" that starts and never opens a port: a master
// (or worker) stuck before it listens. Real Locust is not needed.
func fakeLocust(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "fake-locust")
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\nexec sleep 600\n"), 0o755))
	return path
}

// fakeTrial runs runLocust on the fake Locust with the settings' workers
// for users, and returns what it logged, the attempt's directory and its
// error. The context only keeps a regression from hanging the test.
func fakeTrial(t *testing.T, settings string, users int) ([]string, string, error) {
	t.Helper()
	dir := t.TempDir()
	c, err := loadConfig(writeFile(t, filepath.Join(dir, "s.yaml"),
		fmt.Sprintf("deployment: d.yaml\nlocust: %s\n%s", fakeLocust(t, dir), settings)))
	require.NoError(t, err)
	p := plan{Target: "http://127.0.0.1:1", Users: users, Workers: len(c.active(users)), ReplyTimeout: 1}
	p.Timing.RampUp, p.Timing.Runtime, p.Timing.RampDown = 2, 4, 1
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var logged []string
	attempt := filepath.Join(dir, "attempt-1")
	_, err = runLocust(ctx, c, p, attempt, func(format string, a ...any) { logged = append(logged, fmt.Sprintf(format, a...)) })
	return logged, attempt, err
}

// Issue 35: a master that never opened its port was waited for until the
// exec runner's timeout (40 s for a short trial), whatever connectTimeout
// said; no worker can connect to it, so connectTimeout bounds the wait.
func TestAMasterThatNeverListensFailsAfterConnectTimeout(t *testing.T) {
	_, _, err := fakeTrial(t, "workers: [local]\nconnectTimeout: 1s\n", 5)
	require.Error(t, err)
	assert.Regexp(t, `^the Locust master did not listen on 127\.0\.0\.1:[0-9]+ within connectTimeout 1s, so no worker could connect; `+
		`it was still running \(last output: none; log .*master\.log\)$`, err.Error())
}

// Issue 35: a 5-user trial on a settings file of 10,000 workers started
// them all (20,002 files; with real Locust, a fork bomb). A trial starts at
// most one worker per user, the first of the list.
func TestATrialStartsAtMostOneWorkerPerUser(t *testing.T) {
	logged, attempt, err := fakeTrial(t, "workers: [local, h2, h3, h4]\nremote: ['{locust}', '{workerArgs}']\nconnectTimeout: 1s\n", 2)
	require.ErrorContains(t, err, "connectTimeout")
	logs, err := filepath.Glob(filepath.Join(attempt, "worker-*.log"))
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(attempt, "worker-1.log"), filepath.Join(attempt, "worker-2.log")}, logs)
	require.NotEmpty(t, logged)
	assert.Contains(t, logged[0], "locust: 2 users on 2 of 4 workers (local, h2), master 127.0.0.1:")
}

// More worker processes on one machine than it has cores only compete for
// them (a worker uses at most one); a remote host listed more than
// maxWorkersPerHost times is a mistake, not a load generator.
func TestWorkersPerHostAreBounded(t *testing.T) {
	dir := t.TempDir()
	locals := strings.TrimSuffix(strings.Repeat("local, ", runtime.NumCPU()+1), ", ")
	_, err := loadConfig(writeFile(t, filepath.Join(dir, "s.yaml"), "deployment: d.yaml\nworkers: ["+locals+"]\n"))
	require.EqualError(t, err, fmt.Sprintf(`settings %q: workers: %d entries "local", want at most %d, the cores of this machine (a worker uses at most one)`,
		filepath.Join(dir, "s.yaml"), runtime.NumCPU()+1, runtime.NumCPU()))

	hosts := strings.TrimSuffix(strings.Repeat("lg-2, ", maxWorkersPerHost+1), ", ")
	_, err = loadConfig(writeFile(t, filepath.Join(dir, "s.yaml"), "deployment: d.yaml\nworkers: [local, "+hosts+"]\n"))
	require.EqualError(t, err, fmt.Sprintf(`settings %q: workers: %d entries "lg-2", want at most %d per host`,
		filepath.Join(dir, "s.yaml"), maxWorkersPerHost+1, maxWorkersPerHost))

	// As many as allowed are fine.
	locals = strings.TrimSuffix(strings.Repeat("local, ", runtime.NumCPU()), ", ")
	hosts = strings.TrimSuffix(strings.Repeat("lg-2, ", maxWorkersPerHost), ", ")
	_, err = loadConfig(writeFile(t, filepath.Join(dir, "s.yaml"), "deployment: d.yaml\nworkers: ["+locals+", "+hosts+"]\n"))
	require.NoError(t, err)
}
