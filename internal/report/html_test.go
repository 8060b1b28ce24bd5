package report

import (
	"bytes"
	"html"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/topology"
)

// campaignReport is a recommend campaign of four trials on a three-tier
// chain whose front tier is named web: CPU utilisation grows with the
// workload until app's saturates at 30 users.
func campaignReport(t *testing.T, web string) HTMLReport {
	t.Helper()
	d := algorithms.Deployment{Topology: "1/1/1", Tiers: []algorithms.Tier{
		{Name: web, Role: algorithms.RoleWeb, Replicas: 1, Cores: 2, Pools: []string{algorithms.PoolThreads}},
		{Name: "app", Role: algorithms.RoleApp, Replicas: 1, Cores: 2, Pools: []string{algorithms.PoolThreads, algorithms.PoolConnections}},
		{Name: "db", Role: algorithms.RoleDB, Replicas: 1, Cores: 2},
	}}
	reserve := algorithms.Allocation{web: {Threads: 40}, "app": {Threads: 20, Connections: 10}}
	trial := func(proc string, users int) algorithms.Trial {
		u := float64(users)
		tp := min(u, 30) * 2 // pages/s
		o := algorithms.Observation{RuntimeSeconds: 60, Throughput: tp, ThroughputHalfWidth: 0.5, Errors: int64(users / 30),
			GoodputIntervals: []algorithms.GoodputInterval{{SLA: 1, Goodput: tp * 0.9}},
			Window:           &algorithms.MeasuredWindow{WarmUpSeconds: 10},
			Servers: []algorithms.ServerObservation{
				{Name: web + "-1", Tier: web, CPU: u / 100, Throughput: tp, ResponseTime: 0.05,
					Pools: []algorithms.PoolObservation{{Name: algorithms.PoolThreads, Size: 40, Busy: u / 10, FullShare: 0}}},
				{Name: "app-1", Tier: "app", CPU: min(u/31, 1), Throughput: tp, ResponseTime: 0.04, Resources: map[string]float64{"disk": u / 200},
					Pools: []algorithms.PoolObservation{{Name: algorithms.PoolThreads, Size: 20, Busy: u / 2, FullShare: max(0, u-25) / 10},
						{Name: algorithms.PoolConnections, Size: 10, Busy: u / 4, FullShare: -1}}},
				{Name: "db-1", Tier: "db", CPU: u / 150, Throughput: 3 * tp, ResponseTime: 0.002},
			}}
		var sat []string
		if users >= 30 {
			sat = []string{"app-1/cpu"}
		}
		return algorithms.Trial{Procedure: proc, Experiment: algorithms.Experiment{Deployment: d, Allocation: reserve, Workload: algorithms.Workload{Users: users}},
			Observation: o, Saturated: sat}
	}
	c := algorithms.Critical{Tier: "app", Server: "app-1", Resource: "cpu", Utilization: 0.97, SaturationWorkload: 30, MaxThroughput: 60,
		Reserve: reserve, Experiments: 3, Trials: []algorithms.Trial{trial("find-critical", 10), trial("find-critical", 20), trial("find-critical", 30)},
		Warnings: []string{"more than one tier nearly saturated"}}
	m := algorithms.MinJobs{MinJobs: 2.2, WLmin: 28, Reading: "knee", Knee: true, KneeThreshold: 0.5,
		Points: []algorithms.ScanPoint{{Workload: 26, Throughput: 52, SLOSatisfaction: 0.99}, {Workload: 28, Throughput: 56, SLOSatisfaction: 0.9},
			{Workload: 30, Throughput: 60, SLOSatisfaction: 0.6}},
		Measurements: []algorithms.TierMeasurement{{Tier: web, Throughput: 56, ResponseTime: 0.05}, {Tier: "app", Throughput: 56, ResponseTime: 0.04},
			{Tier: "db", Throughput: 168, ResponseTime: 0.002}},
		Trials: []algorithms.Trial{trial("infer-min-jobs", 28), trial("find-critical", 30)}}
	sz, err := algorithms.CalculateMinAllocation(d, "app", m.MinJobs, m.Measurements)
	require.NoError(t, err)
	alloc, tiers := algorithms.RecommendAllocation(d, sz, reserve)
	rec := algorithms.Recommendation{Critical: c, MinJobs: m, Sizing: sz, Allocation: alloc, Tiers: tiers, Experiments: 4,
		Range: &algorithms.PoolRange{Tier: "app", Pool: "threads", Recommended: 3, Low: 3, Source: "trials", Users: 36,
			Points: []algorithms.RangePoint{{Size: 1, Goodput: 30, Share: 0.5}, {Size: 3, Goodput: 60, Share: 1}, {Size: 6, Goodput: 60, Share: 1}}}}
	return HTMLReport{Command: "recommend", Deployment: d, DeploymentFile: "deploy/" + web + ".yaml", Runner: "sim", Seed: 7, Version: "v1.2.3",
		SLA: 1, HardwareThreshold: 0.95, Critical: c, Recommendation: &rec,
		Snippets: Snippets(d, tiers, SnippetFormats), Warnings: []string{"the runner reads no disk on " + web},
		Generated: time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC), Elapsed: 3 * time.Second}
}

func writeHTML(t *testing.T, r HTMLReport) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, WriteHTML(&b, r))
	return b.String()
}

// svgTexts are the texts each figure draws, by the figure's id.
func svgTexts(page string) map[string][]string {
	out := map[string][]string{}
	for _, m := range regexp.MustCompile(`(?s)<figure id="([^"]+)">(.*?)</figure>`).FindAllStringSubmatch(page, -1) {
		svg := m[2]
		if !strings.Contains(svg, "<svg") {
			continue
		}
		for _, tm := range regexp.MustCompile(`<text[^>]*>([^<]*)</text>`).FindAllStringSubmatch(svg, -1) {
			out[m[1]] = append(out[m[1]], html.UnescapeString(tm[1]))
		}
	}
	return out
}

// The page leads with the answer and holds the evidence: each figure with
// its series, the allocations compared, the snippets, the run, the notes.
func TestHTMLReportShowsTheAnswerAndTheEvidence(t *testing.T) {
	r := campaignReport(t, "web")
	page := writeHTML(t, r)
	answer := page[strings.Index(page, `id="answer"`):strings.Index(page, `id="evidence"`)]
	for _, want := range []string{"app cpu (app-1 at 97.0%)", "30 users", "2.2 concurrent jobs in the app tier at 28 users",
		r.Recommendation.Allocation.String(), "connections"} {
		assert.Contains(t, answer, want)
	}
	figures := svgTexts(page)
	for id, series := range map[string][]string{
		"fig-throughput":  {"allocation " + r.Critical.Reserve.String(), "saturation: 30 users", "WLmin (knee): 28 users"},
		"fig-slo":         {"within 0.5 s", "WLmin: 28 users"},
		"fig-utilisation": {"web cpu", "app cpu", "app disk", "db cpu", "saturation threshold 0.95"},
		"fig-pools":       {"web threads", "app threads", "app connections"},
		"fig-full":        {"web threads", "app threads"},
		"fig-range":       {"app threads", "recommended: 3"},
	} {
		require.Contains(t, figures, id)
		for _, s := range series {
			assert.Contains(t, figures[id], s, id)
		}
	}
	assert.NotContains(t, figures["fig-full"], "app connections", "a full share the runner did not measure is not drawn as 0")
	for _, want := range []string{
		`id="allocations"`, `id="range"`, `id="tiers-at-wlmin"`, `id="trials"`,
		"MaxRequestWorkers", // the snippets
		"more than one tier nearly saturated", "the runner reads no disk on web",
		"the runner did not measure how long app-1&#39;s connections pool was full",
		"v1.2.3", "<td>7</td>", "deploy/web.yaml", `<td id="experiments">4</td>`, "4m0s of measured windows after 40s of warm-up",
	} {
		assert.Contains(t, page, want)
	}
	// A find-critical page has the answer without minJobs, and the reserve;
	// an allocation the search doubled from is compared with the reserve.
	r.Command, r.Recommendation = "find-critical", nil
	small := r.Critical.Trials[0]
	small.Experiment.Allocation = algorithms.Allocation{"web": {Threads: 20}, "app": {Threads: 10, Connections: 5}}
	r.Critical.Trials = append([]algorithms.Trial{small}, r.Critical.Trials...)
	page = writeHTML(t, r)
	assert.Contains(t, page, `<dd id="reserve">`+html.EscapeString(r.Critical.Reserve.String()))
	assert.NotContains(t, page, `id="minjobs"`)
	assert.NotContains(t, svgTexts(page)["fig-throughput"], "WLmin (knee): 28 users")
	assert.Contains(t, svgTexts(page)["fig-throughput"], "allocation "+small.Experiment.Allocation.String())
	assert.Contains(t, svgTexts(page)["fig-throughput"], "allocation "+r.Critical.Reserve.String())
	compared := regexp.MustCompile(`(?s)<table id="allocations">.*?</table>`).FindString(page)
	assert.Equal(t, 2, strings.Count(compared, "<tr><td>"), "the two allocations tried")
	assert.Contains(t, compared, "<td>20-10-5</td>")
	// A live deployment has no seed: a seed on its page would claim one.
	r.Runner = "live"
	assert.NotContains(t, writeHTML(t, r), "<th>seed</th>")
}

// Names come from the deployment file: a tier named <script> is text on
// the page and in its figures, never markup.
func TestHTMLReportEscapesNamesFromTheDeployment(t *testing.T) {
	const evil = `<script>alert(1)</script>`
	page := writeHTML(t, campaignReport(t, evil))
	assert.NotRegexp(t, `(?i)<script`, page)
	assert.Contains(t, page, "&lt;script&gt;alert(1)&lt;/script&gt;")
	assert.Contains(t, svgTexts(page)["fig-utilisation"], evil+" cpu", "the legend shows the name, escaped in the SVG")
}

// Nothing on the page is fetched: no element loads a URL, the style is
// inline, the fonts are data, and there is no script.
func TestHTMLReportFetchesNothing(t *testing.T) {
	page := writeHTML(t, campaignReport(t, "web"))
	assert.NotRegexp(t, `(?i)\s(src|href|srcset|action|poster|data)\s*=`, page)
	assert.NotRegexp(t, `(?i)<(script|link|iframe|img|object|embed)\b`, page)
	assert.NotRegexp(t, `(?i)@import`, page)
	assert.NotRegexp(t, `(?i)https?://`, page)
	for _, u := range regexp.MustCompile(`url\(([^)]{0,20})`).FindAllStringSubmatch(page, -1) {
		assert.True(t, strings.HasPrefix(u[1], "data:"), "url(%s...) is not data", u[1])
	}
	assert.Contains(t, page, "@font-face", "the figures' font travels with the page")
}

// advise's page: the windows against page throughput with the fitted law,
// the fits, the windows left out; no experiment.
func TestHTMLReportOfAnAdvice(t *testing.T) {
	r := campaignReport(t, "web")
	rec := *r.Recommendation
	rec.Experiments, rec.Range.Source, rec.Range.Users = 0, "model", 0
	rec.MinJobs.WLmin = 0
	const label = `<b>monday</b>`
	a := algorithms.Advice{Recommendation: rec, Model: "open", Windows: 5, Used: 3, LoadRange: [2]float64{20, 40}, SaturationThroughput: 58,
		Dropped: []algorithms.DroppedWindow{{Label: label, Problem: "a counter reset"}},
		Fits: []algorithms.DemandFit{{Server: "app-1", Tier: "app", Resource: "cpu", Cores: 2, PerPage: 0.016, Demand: 0.032, Idle: 0.02, RSquared: 0.99, MaxUtilization: 0.66, SaturationThroughput: 58},
			{Server: "web-1", Tier: "web", Resource: "cpu", Cores: 2, PerPage: 0.01, RSquared: 0.98, MaxUtilization: 0.4, SaturationThroughput: 95}}}
	for _, tr := range r.Critical.Trials {
		r.Windows = append(r.Windows, algorithms.Window{Label: "w", Observation: tr.Observation})
	}
	r.Windows = append(r.Windows, algorithms.Window{Label: label, Problem: "a counter reset"})
	r.Command, r.Advice, r.Recommendation, r.Critical = "advise", &a, nil, algorithms.Critical{}
	page := writeHTML(t, r)

	assert.Contains(t, page, `<dd id="predicted">58.0 pages/s (30 users), from 3 of 5 windows of 20.0 to 40.0 pages/s; no experiment run</dd>`)
	assert.Contains(t, page, "concurrent jobs in the app tier (predicted by the open model")
	assert.Contains(t, page, `app cpu (app-1 at 97.0%)`, "the critical resource is the advice's")
	figures := svgTexts(page)
	for id, series := range map[string][]string{
		"fig-utilisation": {"app cpu", "app cpu fit (app-1)", "web cpu fit (web-1)", "predicted saturation: 58.0 pages/s", "saturation threshold 0.95"},
		"fig-pools":       {"app threads", "app connections"},
		"fig-range":       {"recommended: 3"},
	} {
		require.Contains(t, figures, id)
		for _, s := range series {
			assert.Contains(t, figures[id], s, id)
		}
	}
	assert.NotContains(t, figures, "fig-throughput", "no workload was set")
	fits := regexp.MustCompile(`(?s)<table id="fits">.*?</table>`).FindString(page)
	assert.Equal(t, 2, strings.Count(fits, "<tr><td>"))
	assert.Contains(t, fits, "<td>app-1</td><td>cpu</td><td class=\"n\">32.000</td>")
	assert.Contains(t, page, "window &lt;b&gt;monday&lt;/b&gt; left out: a counter reset")
	assert.False(t, strings.Contains(page, `id="trials"`), "no table of experiments")
	assert.False(t, strings.Contains(page, `id="allocations"`), "no allocations compared")
}

// On a deployment the notation cannot name (its front tier is not "web"),
// the page names allocations as find-critical's table does (48bd0c7), the
// deployment's pools, never the journal's key: the reserve, the trials,
// the allocations compared and the figures' legends.
func TestHTMLReportNamesAllocationsByTheDeploymentsPools(t *testing.T) {
	r := campaignReport(t, "front")
	r.Command, r.Recommendation = "find-critical", nil // the page that shows the reserve
	page := writeHTML(t, r)
	want := html.EscapeString(topology.FormatAllocationIn(r.Deployment, r.Critical.Reserve))
	key := html.EscapeString(r.Critical.Reserve.Key())
	require.NotContains(t, want, ";", "the deployment's pools, not the key")
	// The page is long (its fonts inline): the messages quote what was looked for.
	assert.True(t, strings.Contains(page, `<dd id="reserve">`+want+" "), "the reserve is %s", want)
	assert.True(t, strings.Contains(page, "<td>"+want+"</td>"), "the trials and the allocations compared name %s", want)
	assert.False(t, strings.Contains(page, key), "the page holds the journal's key %s", key)
	for id, texts := range svgTexts(page) {
		for _, s := range texts {
			assert.NotContains(t, s, "threads=40,connections=0", "figure %s: the journal's key", id)
		}
	}
}
