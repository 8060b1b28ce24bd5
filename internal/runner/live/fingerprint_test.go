package live

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/journal"
)

// countingExperimenter stands for the deployment: it counts the trials the
// journal did not answer.
type countingExperimenter struct{ n atomic.Int32 }

func (c *countingExperimenter) RunExperiment(context.Context, algorithms.Experiment) (algorithms.Observation, error) {
	c.n.Add(1)
	return algorithms.Observation{RuntimeSeconds: 1, Throughput: 10,
		Servers: []algorithms.ServerObservation{{Name: "app-1", Tier: "app", CPU: 0.5}}}, nil
}

// A change the user makes to the application changes the fingerprint, and
// the journal then measures again instead of answering with the old
// application's records; the same application reuses them.
func TestAChangedFingerprintMeasuresAgain(t *testing.T) {
	for name, fp := range map[string]any{
		"files":   map[string]any{"files": []any{"app"}},
		"command": []any{"sh", "-c", "cat app/version.php"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "w.yaml"), []byte(
				"thinkTime: {mean: 1s}\nstart: A\ninteractions:\n  - {name: A, path: /a, next: {A: 1}}\n"), 0o644))
			require.NoError(t, os.Mkdir(filepath.Join(dir, "app"), 0o755))
			version := filepath.Join(dir, "app", "version.php")
			require.NoError(t, os.WriteFile(version, []byte("<?php $v = 1;"), 0o644))
			sec := section(map[string]any{"fingerprint": fp})
			e := algorithms.Experiment{
				Deployment: algorithms.Deployment{Topology: "1/1/1", Tiers: []algorithms.Tier{{Name: "app", Role: "app", Replicas: 1, Cores: 1}}},
				Workload:   algorithms.Workload{Users: 5}, Timing: algorithms.Timing{Runtime: time.Second}}
			x := &countingExperimenter{}
			measure := func() {
				t.Helper()
				r, err := New(sec, filepath.Join(dir, "deployment.yaml"))
				require.NoError(t, err)
				require.NotEmpty(t, r.Settings()["fingerprint"])
				j, err := journal.Open(filepath.Join(dir, "journal.jsonl"), journal.Identity{Runner: "live", Settings: r.Settings()}, journal.Options{})
				require.NoError(t, err)
				defer j.Close()
				_, err = j.Wrap(x).RunExperiment(context.Background(), e)
				require.NoError(t, err)
			}
			measure()
			measure()
			assert.Equal(t, int32(1), x.n.Load(), "the same application: the record is reused")
			require.NoError(t, os.WriteFile(version, []byte("<?php $v = 2;"), 0o644))
			measure()
			assert.Equal(t, int32(2), x.n.Load(), "a changed application: measured again")
		})
	}
}

func TestFingerprintErrors(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "w.yaml"), []byte(
		"thinkTime: {mean: 1s}\nstart: A\ninteractions:\n  - {name: A, path: /a, next: {A: 1}}\n"), 0o644))
	for _, tc := range []struct{ yaml, want string }{
		{"fingerprint: [sh, -c, 'echo broken >&2; exit 3']", "fingerprint.command sh -c echo broken >&2; exit 3: exit status 3; its last output: broken"},
		{"fingerprint: {files: [missing]}", "fingerprint.files: lstat " + filepath.Join(dir, "missing") + ": no such file or directory"},
		{"fingerprint: {}", "fingerprint: empty; want a command"},
		{"fingerprint: {file: [x]}", `fingerprint: unknown key "file"`},
		{"fingerprint: git", "fingerprint: want a command as a list"},
	} {
		var extra map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(tc.yaml), &extra))
		_, err := New(section(extra), filepath.Join(dir, "deployment.yaml"))
		assert.ErrorContains(t, err, tc.want, tc.yaml)
	}
}
