package live

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// advise's closed model takes the users' think time from the workload file
// the runner section names, relative to the deployment file.
func TestWorkloadThinkTimeReadsTheSectionsWorkloadFile(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "stacks"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "stacks", "w.yaml"), []byte(`name: w
thinkTime: {mean: 1500ms, cap: 10s}
start: A
interactions:
  - {name: A, path: /a, next: {A: 1}}
`), 0o644))
	sec := map[string]any{"name": "live", "prometheus": "http://127.0.0.1:9090", "workload": "stacks/w.yaml", "tiers": map[string]any{}}
	think, file, err := WorkloadThinkTime(sec, filepath.Join(dir, "deployment.yaml"))
	require.NoError(t, err)
	assert.Equal(t, 1500*time.Millisecond, think)
	assert.Equal(t, "stacks/w.yaml", file)

	delete(sec, "workload")
	think, file, err = WorkloadThinkTime(sec, filepath.Join(dir, "deployment.yaml"))
	require.NoError(t, err)
	assert.Zero(t, think)
	assert.Empty(t, file)

	sec["workload"] = "missing.yaml"
	_, _, err = WorkloadThinkTime(sec, filepath.Join(dir, "deployment.yaml"))
	assert.ErrorContains(t, err, "missing.yaml")
}
