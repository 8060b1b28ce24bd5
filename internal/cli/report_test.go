package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// advise's page: its windows are the evidence (utilisation against page
// throughput with the fitted law), no experiment ran.
func TestAdviseWritesAnHTMLReport(t *testing.T) {
	dir := t.TempDir()
	obs := writeFile(t, dir, "obs.jsonl", adviseObservations(t))
	page := filepath.Join(dir, "advice.html")
	out, stderr, code := run(t, "", "advise", "-t", "1/2/1/2", "--observations", obs, "-o", "json", "--report", page)
	require.Equal(t, 0, code, stderr)
	var doc struct {
		Critical   struct{ Tier, Resource, Server string }
		Allocation string
		Advice     struct {
			SaturationThroughput float64
			Used, Windows        int
			Fits                 []struct{ Server, Resource string }
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	b, err := os.ReadFile(page)
	require.NoError(t, err)
	html := string(b)
	assert.Contains(t, html, fmt.Sprintf("%s %s (%s at", doc.Critical.Tier, doc.Critical.Resource, doc.Critical.Server))
	assert.Contains(t, html, fmt.Sprintf(`<dd id="predicted">%.1f pages/s`, doc.Advice.SaturationThroughput))
	assert.Contains(t, html, fmt.Sprintf("from %d of %d windows", doc.Advice.Used, doc.Advice.Windows))
	assert.Contains(t, html, fmt.Sprintf(`<dd id="recommended">%s</dd>`, doc.Allocation))
	assert.Regexp(t, `<figure id="fig-utilisation">\s*<svg `, html)
	assert.Regexp(t, fmt.Sprintf(`<text[^>]*>%s %s fit \(%s\)</text>`, doc.Critical.Tier, doc.Critical.Resource, doc.Critical.Server), html)
	assert.Regexp(t, `<text[^>]*>predicted saturation: [0-9.]+ pages/s</text>`, html)
	assert.Regexp(t, `<figure id="fig-pools">\s*<svg `, html)
	fits := regexp.MustCompile(`(?s)<table id="fits">.*?</table>`).FindString(html)
	assert.Equal(t, len(doc.Advice.Fits), strings.Count(fits, "<tr><td>"), "every fit")
	assert.NotContains(t, html, `id="trials"`, "no experiment ran")

	_, stderr, code = run(t, "", "advise", "-t", "1/2/1/2", "--observations", obs, "--report", filepath.Join(dir, "advice.txt"))
	assert.Equal(t, 2, code, stderr)
	assert.Contains(t, stderr, "want a .html or .htm file")
}
