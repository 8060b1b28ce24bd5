package live

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/softalloc/softalloc/algorithms"
)

// The apache fixture: apache_exporter fetches /server-status once per
// scrape, and Apache counts that request, and its duration, as any other.
const (
	apacheIdle        = 3 // windows 0..2 serve no page: the accesses are the scrapes alone
	apacheScrapeMs    = 0.5
	apacheScrapesPerS = float64(perWindow) / 60 // a sample of apache_up per scrape
)

func fixturePages(k int) float64 {
	if k < apacheIdle {
		return 0
	}
	return 4 * float64(k)
}

// apacheNoise is half a request in idle window 1: rate()'s extrapolation to
// the window's edges against the count of scrapes in it, not a page.
func apacheNoise(k int) float64 {
	if k == 1 {
		return 0.5 / fixtureStep.Seconds()
	}
	return 0
}

func apacheRT(k int) float64 { return 0.05 + 0.002*float64(k) }

func apacheFixture() []series {
	lbl := `instance="web:9117",job="apache"`
	return []series{
		{family: "cpu_seconds", labels: `server="web-1"`, counter: true, rate: func(k int) float64 { return 0.1 + 0.01*float64(k) }, resetIn: -1},
		{family: "apache_accesses", labels: lbl, counter: true, rate: func(k int) float64 { return apacheScrapesPerS + fixturePages(k) + apacheNoise(k) }, resetIn: -1},
		{family: "apache_duration_ms", labels: lbl, counter: true, resetIn: -1,
			rate: func(k int) float64 { return 1000*fixturePages(k)*apacheRT(k) + apacheScrapesPerS*apacheScrapeMs }},
		{family: "apache_up", labels: lbl, value: func(int, int) float64 { return 1 }, resetIn: -1},
		{family: "apache_workers", labels: lbl + `,state="busy"`, value: func(k, _ int) float64 { return 1 + float64(k) }, resetIn: -1},
		{family: "apache_workers", labels: lbl + `,state="idle"`, value: func(k, _ int) float64 { return 20 - float64(k) }, resetIn: -1},
	}
}

const apacheSection = `
tiers:
  web:
    presets: [apache]
    servers: [{instance: "web:9117"}]
    queries:
      cpu: rate(cpu_seconds_total{server="{server}"}[{window}])
`

// The exporter's own scrapes of /server-status are not web throughput: a
// Apache serving no page reads 0 pages/s (it read the scrape rate, 1
// request/s at a 1 s scrape interval), and under load it reads the pages.
func TestApachePresetLeavesOutTheExportersScrapes(t *testing.T) {
	t0 := time.Now().Add(-3 * time.Hour).Truncate(time.Minute).UTC()
	promURL := startPrometheus(t, openMetrics(t0, apacheFixture()))
	var sec map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(apacheSection), &sec))
	sec["prometheus"] = promURL
	r, err := NewPassive(sec, "/x/deployment.yaml")
	require.NoError(t, err)
	var log strings.Builder
	r.Log = &log
	d := algorithms.Deployment{Topology: "1", Tiers: []algorithms.Tier{{Name: "web", Role: "web", Replicas: 1, Cores: 1, Pools: []string{"threads"}}}}
	ws, err := r.Windows(context.Background(), d, t0, t0.Add(fixtureWindows*fixtureStep), fixtureStep)
	require.NoError(t, err, log.String())
	require.Len(t, ws, fixtureWindows)
	for k, w := range ws {
		require.Len(t, w.Observation.Servers, 1)
		web := w.Observation.Servers[0]
		assert.Empty(t, w.Problem, w.Label)
		assert.InDelta(t, fixturePages(k), web.Throughput, 1e-9, "web throughput in window %d", k)
		assert.InDelta(t, fixturePages(k), w.Observation.Throughput, 1e-9, "page throughput (the web tier's) in window %d", k)
		if k < apacheIdle {
			assert.Zero(t, web.ResponseTime, "no page served: no response time, not the scrapes' over nothing")
			continue
		}
		// The scrapes' own durations stay in: half a millisecond a second
		// beside seconds of pages.
		want := (1000*fixturePages(k)*apacheRT(k) + apacheScrapesPerS*apacheScrapeMs) / fixturePages(k) / 1000
		assert.InDelta(t, want, web.ResponseTime, 1e-9, "window %d", k)
		assert.InEpsilon(t, apacheRT(k), web.ResponseTime, 1e-4, "window %d", k)
		assert.InDelta(t, 1+float64(k), web.Pools[0].Busy, 1e-9)
		assert.Equal(t, 21, web.Pools[0].Size)
	}
}

// {windowSeconds} is the window in seconds wherever {window} is set: a
// trial's runtime, an adaptive trial's two intervals, advise's step and the
// check before any load.
func TestWindowSecondsPlaceholder(t *testing.T) {
	tier := algorithms.Tier{Name: "web", Replicas: 1, Cores: 2}
	for window, want := range map[string]string{"6000ms": "6", "500ms": "0.5", "1s": "1", "300000ms": "300"} {
		vars := serverVars(tier, 0, TierConfig{}, window)
		assert.Equal(t, window, vars["window"])
		assert.Equal(t, want, vars["windowSeconds"], window)
	}
	q, err := expand(Presets["apache"].Throughput, map[string]string{"instance": "h:1", "window": "6000ms", "windowSeconds": "6"})
	require.NoError(t, err)
	assert.Contains(t, q, `count_over_time(apache_up{instance="h:1"}[6000ms])) / 6`)
	// A page query may name it too.
	_, err = NewPassive(map[string]any{"prometheus": "http://127.0.0.1:9090", "tiers": map[string]any{},
		"pages": map[string]any{"throughput": "sum(increase(pages_total[{window}])) / {windowSeconds}"}}, "d.yaml")
	require.NoError(t, err)
	_, err = NewPassive(map[string]any{"prometheus": "http://127.0.0.1:9090", "tiers": map[string]any{},
		"pages": map[string]any{"throughput": "sum(rate(pages_total[{window}])) / {cores}"}}, "d.yaml")
	require.ErrorContains(t, err, fmt.Sprintf("placeholder %s has no value", "{cores}"))
}
