package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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
// for users, and returns its error, what it logged and the attempt's
// directory. The context only keeps a regression from hanging the test.
func fakeTrial(t *testing.T, settings string, users int) (error, []string, string) {
	t.Helper()
	dir := t.TempDir()
	c, err := loadConfig(writeFile(t, filepath.Join(dir, "s.yaml"),
		fmt.Sprintf("deployment: d.yaml\nlocust: %s\n%s", fakeLocust(t, dir), settings)))
	require.NoError(t, err)
	p := plan{Target: "http://127.0.0.1:1", Users: users, Workers: len(c.Workers), ReplyTimeout: 1}
	p.Timing.RampUp, p.Timing.Runtime, p.Timing.RampDown = 2, 4, 1
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var logged []string
	attempt := filepath.Join(dir, "attempt-1")
	_, err = runLocust(ctx, c, p, attempt, func(format string, a ...any) { logged = append(logged, fmt.Sprintf(format, a...)) })
	return err, logged, attempt
}

// Issue 35: a master that never opened its port was waited for until the
// exec runner's timeout (40 s for a short trial), whatever connectTimeout
// said; no worker can connect to it, so connectTimeout bounds the wait.
func TestAMasterThatNeverListensFailsAfterConnectTimeout(t *testing.T) {
	err, _, _ := fakeTrial(t, "workers: [local]\nconnectTimeout: 1s\n", 5)
	require.Error(t, err)
	assert.Regexp(t, `^the Locust master did not listen on 127\.0\.0\.1:[0-9]+ within connectTimeout 1s, so no worker could connect; `+
		`it was still running \(last output: none; log .*master\.log\)$`, err.Error())
}
