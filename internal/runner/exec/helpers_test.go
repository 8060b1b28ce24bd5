package exec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/softalloc/softalloc/internal/syncbuf"

	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/wire"
)

// testExperiment is a 1/2/2 chain: servers web-1, app-1, app-2, db-1, db-2.
func testExperiment() algorithms.Experiment {
	return algorithms.Experiment{
		Deployment: algorithms.Deployment{Topology: "1/2/2", Tiers: []algorithms.Tier{
			{Name: "web", Role: algorithms.RoleWeb, Replicas: 1, Cores: 1, Pools: []string{algorithms.PoolThreads}},
			{Name: "app", Role: algorithms.RoleApp, Replicas: 2, Cores: 1, Pools: []string{algorithms.PoolThreads, algorithms.PoolConnections}},
			{Name: "db", Role: algorithms.RoleDB, Replicas: 2, Cores: 1},
		}},
		Allocation: algorithms.Allocation{"web": {Threads: 400}, "app": {Threads: 150, Connections: 60}},
		Workload:   algorithms.Workload{Users: 6000},
		Timing:     algorithms.Timing{RampUp: 2 * time.Second, Runtime: 10 * time.Second, RampDown: time.Second},
	}
}

// testObservation is a valid observation of testExperiment.
func testObservation() algorithms.Observation {
	pool := func(name string, size int, busy float64) algorithms.PoolObservation {
		return algorithms.PoolObservation{Name: name, Size: size, Busy: busy, FullShare: -1}
	}
	return algorithms.Observation{
		RuntimeSeconds: 10, Throughput: 800,
		ResponseTimes: algorithms.Histogram{Buckets: []algorithms.Bucket{{LE: 0.1, Count: 7000}, {LE: 1, Count: 1000}}, Sum: 900},
		Servers: []algorithms.ServerObservation{
			{Name: "web-1", Tier: "web", CPU: 0.4, Throughput: 1600, ResponseTime: 0.2, Pools: []algorithms.PoolObservation{pool("threads", 400, 300)}},
			{Name: "app-1", Tier: "app", CPU: 0.95, Throughput: 400, ResponseTime: 0.3, GCShare: 0.03,
				Pools: []algorithms.PoolObservation{pool("threads", 150, 120), pool("connections", 60, 50)}},
			{Name: "app-2", Tier: "app", CPU: 0.96, Throughput: 400, ResponseTime: 0.3,
				Pools: []algorithms.PoolObservation{pool("threads", 150, 121), pool("connections", 60, 51)}},
			{Name: "db-1", Tier: "db", CPU: 0.3, Throughput: 1200, ResponseTime: 0.001},
			{Name: "db-2", Tier: "db", CPU: 0.31, Throughput: 1200, ResponseTime: 0.001, Resources: map[string]float64{"disk": 0.2}},
		},
		Drops: 2, Retries: 2,
	}
}

// observationJSON is the message a program prints, as a generic map, so
// that tests can break it field by field.
func observationJSON(t *testing.T) map[string]any {
	t.Helper()
	b, err := json.Marshal(Response{ProtocolVersion: ProtocolVersion, Observation: wire.FromObservation(testObservation())})
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

// set replaces the value at a path like "servers.2.cpu"; a nil value deletes it.
func set(t *testing.T, m map[string]any, path string, v any) map[string]any {
	t.Helper()
	parts := strings.Split(path, ".")
	var cur any = m
	for _, p := range parts[:len(parts)-1] {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[p]
		case []any:
			i, err := strconv.Atoi(p)
			require.NoError(t, err)
			cur = c[i]
		}
	}
	obj, ok := cur.(map[string]any)
	require.True(t, ok, "path %s", path)
	last := parts[len(parts)-1]
	if v == nil {
		delete(obj, last)
	} else {
		obj[last] = v
	}
	return m
}

func marshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// writeFile writes a file in dir and returns its path.
func writeFile(t *testing.T, dir, name string, data []byte, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, data, mode))
	return p
}

// script writes an executable /bin/sh script; $DIR in it is dir.
func script(t *testing.T, dir, body string) string {
	t.Helper()
	return writeFile(t, dir, "trial.sh", []byte("#!/bin/sh\nDIR='"+dir+"'\n"+body+"\n"), 0o755)
}

// testRunner runs command with short grace and backoff, logging to a buffer.
func testRunner(t *testing.T, command ...string) (*Runner, *syncbuf.Buffer) {
	t.Helper()
	r, err := New(command)
	require.NoError(t, err)
	log := &syncbuf.Buffer{}
	r.Log, r.Grace, r.Backoff = log, 200*time.Millisecond, time.Millisecond
	return r, log
}

// readPID waits for a pid file (written atomically by mv) and returns the pid.
func readPID(t *testing.T, path string) int {
	t.Helper()
	var pid int
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	}, 10*time.Second, 5*time.Millisecond, "pid file %s never appeared", path)
	return pid
}

// gone reports whether pid no longer runs. A zombie counts as gone: it is
// dead and waits only for its new parent to collect it.
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	rest := b[bytes.LastIndexByte(b, ')')+1:]
	f := strings.Fields(string(rest))
	return len(f) > 0 && f[0] == "Z"
}

func requireGone(t *testing.T, pids ...int) {
	t.Helper()
	for _, pid := range pids {
		require.Eventually(t, func() bool { return gone(pid) }, 5*time.Second, 10*time.Millisecond, "process %d still runs", pid)
	}
}
