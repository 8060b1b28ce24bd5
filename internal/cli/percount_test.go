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
