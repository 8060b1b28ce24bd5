package sim

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/internal/sim/engine"
	"github.com/softalloc/softalloc/internal/workload"
)

func TestDefaultModel(t *testing.T) {
	m := DefaultModel()
	require.NoError(t, m.validate())
	assert.Equal(t, AdmissionBounded, m.Admission.Mode)
	assert.InDelta(t, 2.4673e-3, float64(m.App.ServletDemand), 1e-12)
	assert.InDelta(t, 0.33537e-3, float64(m.Cluster.QueryDemand), 1e-12)
	assert.InDelta(t, 2.2e-6, float64(m.Web.FINWait.PerUser), 1e-15)
	assert.Equal(t, 128, m.Web.Backlog)
	assert.Equal(t, 100, m.App.Backlog)
	// GC: 1.0% of a saturated CPU at 24 units, 9.0% at 800 (the paper's two measurements).
	share := func(n int) float64 { g := m.Cluster.GC.share(n); return g / (1 + g) }
	assert.InDelta(t, 0.010, share(24), 0.0005)
	assert.InDelta(t, 0.090, share(800), 0.0005)

	// A fresh copy each time: changing one does not change the next.
	m.Web.Backlog = 1
	assert.Equal(t, 128, DefaultModel().Web.Backlog)
}

func TestDefaultMix(t *testing.T) {
	mx := DefaultModel().Mix
	require.Len(t, mx.Interactions, 11)
	assert.InDelta(t, 3.22, mx.queriesPerServletPageMean(), 1e-9)
	// The stationary page mix of RUBBOS.md (Monte Carlo of the client logic).
	want := map[string]float64{
		"ViewComment": 0.279, "ViewStory": 0.267, "StoriesOfTheDay": 0.221, "SearchInStories": 0.038,
		"Search": 0.037, "Browse": 0.037, "BrowseStoriesInCategory": 0.036, "OlderStories": 0.034,
		"SearchInComments": 0.028, "BrowseCategories": 0.017, "SearchInUsers": 0.007,
	}
	shares := mx.shares
	for i, it := range mx.Interactions {
		assert.InDelta(t, want[it.Name], shares[i], 0.005, it.Name)
	}
	assert.True(t, mx.Interactions[1].Static, "Browse is a static page")
	assert.Equal(t, 0.0, mx.states[1].q)
	// Think time: exponential, mean 7 s, over 70 s becomes 0.
	r := engine.NewStream(3, purposeMix, 1)
	var sum float64
	const n = 200_000
	for i := 0; i < n; i++ {
		z := mx.think(&r)
		require.LessOrEqual(t, z, 70.0)
		sum += z
	}
	assert.InDelta(t, 7.0, sum/n, 0.05)
}

func TestLoadModel(t *testing.T) {
	m, err := LoadModel(filepath.Join("testdata", "small.yaml"))
	require.NoError(t, err)
	assert.Equal(t, "small", m.Name)
	assert.Equal(t, 2, m.Cores)
	assert.Equal(t, BalanceRandom, m.LoadBalancing)
	assert.InDelta(t, 1e-3, float64(m.App.ServletDemand), 1e-15)
	require.NotNil(t, m.Mix)
	assert.Equal(t, "two-pages", m.Mix.Name)
	assert.InDelta(t, 2.0, m.Mix.states[0].q, 1e-12, "no queriesPerServletPage: counts as given")

	// A model that names no mix gets the embedded RUBBoS mix.
	m2, err := LoadModel(filepath.Join("testdata", "no-mix.yaml"))
	require.NoError(t, err)
	assert.Equal(t, "browse-only", m2.Mix.Name)

	// A mix can be loaded on its own and set on another model.
	mx, err := readMix(filepath.Join("testdata", "small-mix.yaml"))
	require.NoError(t, err)
	m3 := DefaultModel()
	m3.Mix = mx
	require.NoError(t, m3.validate())
	m3.Mix = &Mix{Workload: workload.Workload{Name: "not loaded"}}
	require.ErrorContains(t, m3.validate(), "no workload mix loaded")

	// It runs.
	o, _ := trial(t, m, "1/2/1/2", "50-10-5", 100, 5*time.Second, 20*time.Second, 1)
	assert.Greater(t, o.Throughput, 0.0)
	assert.Zero(t, o.Drops, "unbounded admission never drops")
}

func TestLoadModelErrors(t *testing.T) {
	for _, tc := range []struct {
		file string
		want []string
	}{
		{"unknown-field.yaml", []string{"unknown-field.yaml", `line 11: unknown field "backlogg" in web; want one of: pageDemand, staticDemand, imageDemand, forwardDelay, backlog, finWait`}},
		{"bad-value.yaml", []string{"bad-value.yaml", "web.backlog", "-1"}},
		{"infinite-value.yaml", []string{"infinite-value.yaml", "admission.retryFactor: want a number >= 1, got +Inf"}},
		{"bad-enum.yaml", []string{"bad-enum.yaml", "app.acceptOrder", `"lifo"`}},
		{"bad-duration.yaml", []string{"bad-duration.yaml", "web.pageDemand", `"fast"`}},
		{"bad-mix.yaml", []string{"bad-mix.yaml", "bad-mix-mix.yaml", "Nowhere"}},
		{"missing.yaml", []string{"missing.yaml"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			_, err := LoadModel(filepath.Join("testdata", tc.file))
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestLoadModelNoGoTypeNames(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "m.yaml")
	require.NoError(t, os.WriteFile(p, []byte("web: {foo: 1}\n"), 0o600))
	_, err := LoadModel(p)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "sim.WebModel")
	assert.Contains(t, err.Error(), `unknown field "foo" in web; want one of: pageDemand,`)
}

// A model file is complete (the README's --model row, Model's comment): a
// field left out is named as missing, after any bad value the file holds.
func TestLoadModelEmptyOrShort(t *testing.T) {
	full, err := os.ReadFile(filepath.Join("testdata", "small.yaml"))
	require.NoError(t, err)
	for _, tc := range []struct{ name, doc, want string }{
		{"empty", "", `load model "m.yaml": the file is empty; a model file holds every parameter`},
		{"comments only", "# nothing yet\n", "the file is empty; a model file holds every parameter"},
		{"bad value first", "web: {pageDemand: -1ms}\n", `load model "m.yaml": web.pageDemand: want a time > 0, got -0.001`},
		{"missing sections", "web: {pageDemand: 1ms, staticDemand: 1ms, imageDemand: 1ms}\n",
			`load model "m.yaml": missing cores, loadBalancing, admission, app, cluster, db: a model file holds every parameter`},
		{"missing in a section", strings.Replace(string(full), "  servletDemand: 1ms\n", "", 1),
			`load model "m.yaml": missing app.servletDemand: a model file holds every parameter`},
		{"zero present is a bad value", strings.Replace(string(full), "cores: 2", "cores: 0", 1),
			`load model "m.yaml": cores: want an integer >= 1, got 0`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseModel([]byte(tc.doc), "m.yaml", func(string) (*Mix, error) { return DefaultModel().Mix, nil })
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestLoadModelAnchorsCountAsGiven(t *testing.T) {
	full, err := os.ReadFile(filepath.Join("testdata", "small.yaml"))
	require.NoError(t, err)
	// Through a merge key db.queryDemand is given, not missing.
	doc := strings.Replace(string(full), "cluster: {queryDemand: 0.3ms,", "cluster: {<<: &q {queryDemand: 0.3ms},", 1)
	doc = strings.Replace(doc, "db: {queryDemand: 0.3ms}", "db: {<<: *q}", 1)
	m, err := parseModel([]byte(doc), "m.yaml", func(string) (*Mix, error) { return DefaultModel().Mix, nil })
	require.NoError(t, err)
	assert.InDelta(t, 0.3e-3, float64(m.DB.QueryDemand), 1e-12)
}

// A workload file for the live runner is a mix too: its embedded paths
// count as images, its paths are ignored, and its stationary page mix is the
// browse-only one it transcribes.
func TestLiveWorkloadIsAMix(t *testing.T) {
	mx, err := readMix("../../testbed/workload.yaml")
	require.NoError(t, err)
	for i, it := range mx.Interactions {
		assert.Equal(t, len(it.Embedded), int(mx.states[i].images), it.Name)
	}
	shares := mx.shares
	assert.InDelta(t, 0.279, shares[slices.IndexFunc(mx.Interactions, func(it workload.Interaction) bool { return it.Name == "ViewComment" })], 0.005)
}

// Query counts too small to scale to queriesPerServletPage are an error,
// not infinite query means.
func TestMixQueriesTooFewToScale(t *testing.T) {
	_, err := parseMix([]byte("queriesPerServletPage: 1e308\nthinkTime: {mean: 1s}\nstart: A\ninteractions: [{name: A, queries: 5e-324}]\n"), "m.yaml")
	require.ErrorContains(t, err, `load mix "m.yaml": queriesPerServletPage: 1e+308 asked, but the servlet pages' queries are too few to scale to it`)
}

func TestLoadMixEmpty(t *testing.T) {
	_, err := parseMix([]byte("# nothing\n"), "mix.yaml")
	require.Error(t, err)
	assert.Equal(t, `load mix "mix.yaml": the file is empty; want a workload mix: thinkTime, start and interactions (as in internal/sim/rubbos-browse-only.yaml)`, err.Error())
}

func TestDefaultTiming(t *testing.T) {
	tm := DefaultTiming()
	assert.Equal(t, 60*time.Second, tm.RampUp)
	assert.Equal(t, 12*time.Minute, tm.Runtime)
	assert.Zero(t, tm.RampDown)
}
