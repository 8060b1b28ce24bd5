package cli_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --per-count is refused before any trial or journal where it cannot run:
// no range to run over, and beside the flags whose output covers one
// campaign.
func TestPerCountUsageErrors(t *testing.T) {
	dir := t.TempDir()
	ranged := filepath.Join(dir, "ranged.yaml")
	require.NoError(t, os.WriteFile(ranged, []byte(`tiers:
  - {name: web, role: web, replicas: 1, pools: {threads: 400}}
  - {name: app, role: app, replicas: 2..4, pools: {threads: 150, connections: 60}}
  - {name: db, role: db, replicas: 1}
`), 0o644))
	j := filepath.Join(dir, "j.jsonl")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-t", "1/2/1/2"}, `--per-count: deployment "1/2/1/2" has no replica range; give a tier replicas: min..max (e.g. 2..8)`},
		{[]string{"-f", ranged, "--format", "hikari"}, "--per-count with --ramp, --range, --report or --format"},
		{[]string{"-f", ranged, "--range"}, "--per-count with --ramp, --range, --report or --format"},
		{[]string{"-f", ranged, "--ramp"}, "--per-count with --ramp, --range, --report or --format"},
	} {
		_, stderr, code := run(t, "", append([]string{"recommend", "--per-count", "--journal", j, "--progress", "none"}, tc.args...)...)
		assert.Equal(t, 2, code, "%v: %s", tc.args, stderr)
		assert.Contains(t, stderr, tc.want, tc.args)
		assert.NoFileExists(t, j, "refused before the journal opens")
	}
}

// evaluate --replicas refuses, before measuring anything, a topology
// without a range and the flags of the other evaluation.
func TestEvaluateReplicasUsageErrors(t *testing.T) {
	out := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--topologies", "1/2/1/2"}, `--topologies: ranged topology "1/2/1/2": want a topology with one tier's replicas as a range min..max, e.g. 1/2..8/1/2`},
		{[]string{"--topologies", "1/2..8/1/2,1/8..2/1/4"}, `range "8..2": the lower end 8 is above the upper end 2`},
		{[]string{"--fixed"}, "--replicas with --fixed: the replicas evaluation judges each count on a grid of its own"},
		{[]string{"--precision", "0"}, "--replicas with --precision 0"},
	} {
		stdout, stderr, code := run(t, "", append([]string{"evaluate", "--replicas", "--out", out, "--progress", "none"}, tc.args...)...)
		assert.Equal(t, 2, code, "%v: %s", tc.args, stderr)
		assert.Contains(t, stderr, tc.want, tc.args)
		assert.Empty(t, stdout, tc.args)
	}
	assert.NoFileExists(t, filepath.Join(out, "replicas-evaluation.md"))
}
