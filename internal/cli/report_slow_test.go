//go:build !race

// Whole campaigns on the simulator (tens of trials): the race detector
// makes them ten times slower and finds nothing in a page's writing, so
// they run in make test's second pass (TestSlow*).

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

func readReport(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err, "the report")
	page := string(b)
	require.True(t, strings.HasPrefix(page, "<!DOCTYPE html>"), "an HTML page")
	return page
}

// trialRows counts the rows of the page's table of every experiment.
func trialRows(t *testing.T, page string) int {
	t.Helper()
	m := regexp.MustCompile(`(?s)<table id="trials">.*?</table>`).FindString(page)
	require.NotEmpty(t, m, "the table of experiments")
	return strings.Count(m, "<tr><td")
}

// A real recommend on the embedded simulator writes the page with the
// answer its JSON gives and the evidence it was read from.
func TestSlowRecommendWritesAnHTMLReport(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	out, stderr, code := run(t, "", append([]string{"recommend", "--topology", "1/1/1/1", "--range", "--output", "json",
		"--journal", filepath.Join(dir, "j.jsonl"), "--seed", "3", "--report", page}, shortTrials...)...)
	require.Equal(t, 0, code, stderr)
	var doc struct {
		Critical struct {
			Tier, Server, Resource string
			SaturationWorkload     int
		}
		MinJobs     float64
		Experiments int
		Allocation  string
		Tiers       []struct {
			Name             string
			ThreadsPerServer int
		}
		Evidence struct{ WLmin int }
		Version  string
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	html := readReport(t, page)

	answer := html[strings.Index(html, `id="answer"`):strings.Index(html, `id="evidence"`)]
	assert.Contains(t, answer, fmt.Sprintf("%s %s (%s at", doc.Critical.Tier, doc.Critical.Resource, doc.Critical.Server))
	assert.Contains(t, answer, fmt.Sprintf(`<dd id="saturation">%d users</dd>`, doc.Critical.SaturationWorkload))
	assert.Contains(t, answer, fmt.Sprintf("%.1f concurrent jobs in the %s tier at %d users", doc.MinJobs, doc.Critical.Tier, doc.Evidence.WLmin))
	assert.Contains(t, answer, fmt.Sprintf(`<dd id="recommended">%s</dd>`, doc.Allocation))
	for _, tier := range doc.Tiers {
		if tier.ThreadsPerServer > 0 {
			assert.Regexp(t, fmt.Sprintf(`<tr><td>%s</td>.*<td>threads[^<]*</td><td class="n">%d</td>`, tier.Name, tier.ThreadsPerServer), answer)
		}
	}
	for _, id := range []string{"fig-throughput", "fig-slo", "fig-utilisation", "fig-pools", "fig-full", "fig-range"} {
		assert.Regexp(t, `<figure id="`+id+`">\s*<svg `, html, "figure %s", id)
	}
	for _, want := range []string{"<text[^>]*>app cpu</text>", "<text[^>]*>cluster cpu</text>", "<text[^>]*>app connections</text>",
		fmt.Sprintf("<text[^>]*>saturation: %d users</text>", doc.Critical.SaturationWorkload)} {
		assert.Regexp(t, want, html)
	}
	assert.Contains(t, html, "MaxRequestWorkers", "the snippets, every format without --format")
	assert.Contains(t, html, `<tr><th>runner</th><td>sim</td></tr>`)
	assert.Contains(t, html, `<tr><th>seed</th><td>3</td></tr>`)
	assert.Contains(t, html, fmt.Sprintf(`<td id="experiments">%d</td>`, doc.Experiments))
	assert.Contains(t, html, doc.Version)
	// Every experiment once; --range's sizes are in their own table.
	assert.Equal(t, doc.Experiments, trialRows(t, html)+strings.Count(regexp.MustCompile(`(?s)<table id="range">.*?</table>`).FindString(html), "<tr><td"))
	leftovers, err := filepath.Glob(filepath.Join(dir, ".report.html.tmp-*"))
	require.NoError(t, err)
	assert.Empty(t, leftovers, "written atomically, no temporary file left")
}

// A campaign resumed from its journal writes the whole campaign's page:
// the report comes from the result, which holds the trials the journal
// answered, not from what this run measured.
func TestSlowFindCriticalReportOfAResumedCampaign(t *testing.T) {
	dir := t.TempDir()
	j := filepath.Join(dir, "j.jsonl")
	base := append([]string{"find-critical", "--topology", "1/1/1/1", "--output", "json", "--journal", j}, shortTrials...)
	out, stderr, code := run(t, "", base...)
	require.Equal(t, 0, code, stderr)
	var whole struct {
		Experiments int
		Critical    struct{ SaturationWorkload int }
	}
	require.NoError(t, json.Unmarshal([]byte(out), &whole))
	require.Greater(t, whole.Experiments, 2)

	// Interrupted after two experiments: the journal keeps those.
	b, err := os.ReadFile(j)
	require.NoError(t, err)
	lines := strings.SplitAfter(string(b), "\n")
	require.NoError(t, os.WriteFile(j, []byte(strings.Join(lines[:2], "")), 0o644))

	page := filepath.Join(dir, "find-critical.html")
	_, stderr, code = run(t, "", append(base, "--report", page)...)
	require.Equal(t, 0, code, stderr)
	html := readReport(t, page)
	assert.Equal(t, whole.Experiments, trialRows(t, html), "every experiment of the campaign, the journal's two included")
	assert.Contains(t, html, fmt.Sprintf(`<td id="experiments">%d</td>`, whole.Experiments))
	assert.Contains(t, html, fmt.Sprintf(`<dd id="saturation">%d users</dd>`, whole.Critical.SaturationWorkload))
	assert.Contains(t, html, `<dd id="reserve">`)
	assert.Contains(t, html, `<figure id="fig-utilisation">`)
}

// What the user names reaches the page as text: a deployment file whose
// path is markup.
func TestSlowReportEscapesTheDeploymentsPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "<script>alert(1)")
	require.NoError(t, os.Mkdir(dir, 0o755))
	file := filepath.Join(dir, "deployment.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`name: shop
tiers:
  - {name: front, role: web, replicas: 1, cores: 1, pools: {threads: 400}}
  - {name: shop, role: app, replicas: 1, cores: 1, pools: {threads: 150, connections: 60}}
  - {name: data, role: db, replicas: 1, cores: 1}
`), 0o644))
	page := filepath.Join(dir, "r.html")
	_, stderr, code := run(t, "", append([]string{"find-critical", "-f", file, "--no-journal", "--report", page}, shortTrials...)...)
	require.Equal(t, 0, code, stderr)
	html := readReport(t, page)
	assert.NotRegexp(t, `(?i)<script`, html)
	assert.Contains(t, html, "&lt;script&gt;alert(1)/deployment.yaml")
	assert.Regexp(t, `<text[^>]*>shop cpu</text>`, html, "the deployment's own tier names")
}
