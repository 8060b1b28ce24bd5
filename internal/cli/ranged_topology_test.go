package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recommend --topology 1/2..8/1/2 answers as a deployment file of the
// same tiers with the app's replicas: 2..8 does: the same campaign at 2
// replicas and the same answer over the range, in JSON and in the table.
func TestRecommendTakesARangedTopologyAsTheFile(t *testing.T) {
	file := rangedFile(t)
	args := []string{"recommend", "--ramp-up", "10s", "--runtime", "20s", "--no-journal", "--progress", "none"}
	for _, output := range []string{"json", "table"} {
		want, stderr, code := run(t, "", append(args, "-f", file, "-o", output)...)
		require.Equal(t, 0, code, stderr)
		require.Contains(t, want, map[string]string{"json": `"max": 8`, "table": "2..8"}[output], "the file's answer covers the range")
		got, stderr, code := run(t, "", append(args, "--topology", "1/2..8/1/2", "-o", output)...)
		require.Equal(t, 0, code, stderr)
		assert.Equal(t, want, got, "-o %s", output)
	}
}

// rangedFile is 1/2..8/1/2 as a deployment file.
func rangedFile(t *testing.T) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "ranged.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`name: ranged
tiers:
  - {name: web, role: web, replicas: 1, pools: {threads: 400}}
  - {name: app, role: app, replicas: 2..8, pools: {threads: 150, connections: 60}}
  - {name: cluster, role: cluster, replicas: 1}
  - {name: db, role: db, replicas: 2}
`), 0o644))
	return file
}

// So does advise, from the observations of 1/2/1/2.
func TestAdviseTakesARangedTopologyAsTheFile(t *testing.T) {
	obs := writeFile(t, t.TempDir(), "obs.jsonl", adviseObservations(t))
	want, stderr, code := run(t, "", "advise", "-f", rangedFile(t), "--observations", obs, "-o", "json")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, want, `"max": 8`, "the file's answer covers the range")
	got, stderr, code := run(t, "", "advise", "-t", "1/2..8/1/2", "--observations", obs, "-o", "json")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, want, got)
}

// A bad range in --topology is one line naming the value and what is
// wanted (exit 2), and the commands that measure one count refuse a range
// rather than measure its lower end unsaid.
func TestRangedTopologyUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"recommend", "-t", "1/2..8/1..2/2"}, `topology "1/2..8/1..2/2": two ranges, "2..8" and "1..2"; softalloc answers for one autoscaled tier at a time`},
		{[]string{"recommend", "-t", "1/8..2/1/2"}, `topology "1/8..2/1/2": range "8..2": the lower end 8 is above the upper end 2; want min..max, e.g. 2..8`},
		{[]string{"recommend", "--topology", "1/2..2/1/2"}, `topology "1/2..2/1/2": range "2..2": want min below max, e.g. 2..8 (a single count is written 2)`},
		{[]string{"recommend", "-t", "1/0..2/1/2"}, `topology "1/0..2/1/2": range "0..2": lower end 0 is not a positive integer (want at least 1 replica)`},
		{[]string{"find-critical", "-t", "1/2..8/1/2"}, `--topology 1/2..8/1/2: find-critical measures one replica count; give one, e.g. --topology 1/2/1/2 (the range's lower end), or ask recommend or advise, which answer for the range`},
		{[]string{"simulate", "-t", "1/2..8/1/2", "--users", "10"}, `--topology 1/2..8/1/2: simulate measures one replica count`},
		{[]string{"validate", "-t", "1/2..8/1/2"}, `--topology 1/2..8/1/2: validate measures one replica count`},
	} {
		stdout, stderr, code := run(t, "", append(tc.args, "--no-journal", "--progress", "none")...)
		assert.Equal(t, 2, code, "%v: %s", tc.args, stderr)
		assert.Contains(t, stderr, tc.want, tc.args)
		assert.Equal(t, 1, strings.Count(strings.TrimSpace(stderr), "\n")+1, "one line: %q", stderr)
		assert.Empty(t, stdout, tc.args)
	}
}
