package cli_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/internal/cli"
)

// Issue 40: recommend ran three trials and then failed: tier "db":
// responseTime: want a finite number > 0, got 0 (the mysql preset reads no
// latency). It is refused before the hook runs or any load starts.
func TestRecommendRefusesATierWithoutLatencyBeforeAnyLoad(t *testing.T) {
	var requests atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { requests.Add(1) }))
	defer target.Close()
	dir := t.TempDir()
	marker := filepath.Join(dir, "applied")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hook.sh"), []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "workload.yaml"), []byte(`name: w
thinkTime: {mean: 100ms}
start: Home
interactions:
  - {name: Home, path: /, next: {EndOfSession: 1}}
`), 0o644))
	file := filepath.Join(dir, "deployment.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`name: stack
tiers:
  - {name: web, role: web, replicas: 1, pools: {threads: 100}}
  - {name: app, role: app, replicas: 1, pools: {threads: 20, connections: 10}}
  - {name: db, role: db, replicas: 1}
runner:
  name: live
  target: `+target.URL+`
  workload: workload.yaml
  prometheus: http://127.0.0.1:1
  hook: [./hook.sh, "{web.threads}"]
  tiers:
    web: {presets: [node, apache], servers: [{node: "a:9100", instance: "a:9117"}]}
    app: {presets: [node, bboard], servers: [{node: "b:9100", instance: "b:8081"}]}
    db: {presets: [node, mysql], servers: [{node: "c:9100", instance: "c:9104"}]}
`), 0o644))

	_, stderr, code := run(t, "", "recommend", "--runner", "live", "-f", file, "--no-journal", "--progress", "none", "--step", "1", "--scan-span", "1")
	assert.Equal(t, cli.ExitUsage, code, stderr)
	assert.Contains(t, stderr, "runner section: tiers.db: recommend needs its responseTime, which its presets (node, mysql) do not read")
	assert.Zero(t, requests.Load(), "no load before the refusal")
	assert.NoFileExists(t, marker, "the hook never ran")
}
