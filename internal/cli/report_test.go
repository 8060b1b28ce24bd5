package cli_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
)

// short trials keep a simulated campaign under a second.
var shortTrials = []string{"--ramp-up", "10s", "--runtime", "20s"}

// A --report the command could not write is refused before any trial, as
// every output path is: exit 2, nothing run, no journal.
func TestReportPathIsCheckedBeforeAnyTrial(t *testing.T) {
	dir := t.TempDir()
	j := filepath.Join(dir, "j.jsonl")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"missing directory", []string{"recommend", "--report", filepath.Join(dir, "missing", "r.html")}, `--report "` + filepath.Join(dir, "missing", "r.html") + `": directory`},
		{"not html", []string{"find-critical", "--report", filepath.Join(dir, "r.txt")}, "want a .html or .htm file"},
		{"a directory", []string{"find-critical", "--report", dir + "/"}, "want a .html or .htm file"},
		{"per-class pools", []string{"recommend", "--workload", filepath.Join(dir, "w.yaml"), "--report", filepath.Join(dir, "r.html")}, "--workload's per-class pools"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := run(t, "", append(append(tc.args, "--topology", "1/2/1/2", "--journal", j), shortTrials...)...)
			assert.Equal(t, 2, code, stderr)
			assert.Contains(t, stderr, tc.want)
			assert.Empty(t, out)
			assert.NoFileExists(t, j)
		})
	}
}
