package live

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/duration"
)

func section(extra map[string]any) map[string]any {
	s := map[string]any{"name": "live", "target": "http://127.0.0.1:1", "prometheus": "http://127.0.0.1:2", "workload": "w.yaml"}
	for k, v := range extra {
		s[k] = v
	}
	return s
}

func TestParseConfig(t *testing.T) {
	c, err := ParseConfig(section(map[string]any{"rampUp": "2s", "runtime": 30, "retries": 3}), "/x/deployment.yaml")
	require.NoError(t, err)
	assert.Equal(t, duration.Seconds(2), c.RampUp)
	assert.Equal(t, duration.Seconds(30), c.Runtime, "plain numbers are seconds")
	assert.Equal(t, "/x/w.yaml", c.path(c.Workload))
	d := c.withDefaults()
	assert.Equal(t, duration.Of(DefaultRampDown), d.RampDown)
	assert.Equal(t, duration.Of(DefaultInterval), d.Interval)
	assert.True(t, *d.KeepAlive)
	assert.Equal(t, algorithms.DefaultPrecision, (&Runner{cfg: d}).DefaultTiming().Precision, "adaptive by default")
	c, err = ParseConfig(section(map[string]any{"precision": 0}), "d.yaml")
	require.NoError(t, err)
	assert.Zero(t, (&Runner{cfg: c.withDefaults()}).DefaultTiming().Precision, "a file may ask for fixed trials")

	c, err = ParseConfig(section(map[string]any{"pages": map[string]any{"throughput": "sum(rate(pages_total[{window}]))", "users": "sessions"}}), "d.yaml")
	require.NoError(t, err)
	assert.Equal(t, PageQueries{Throughput: "sum(rate(pages_total[{window}]))", Users: "sessions"}, c.Pages)

	// Reading recorded metrics needs Prometheus, not a target or a workload.
	_, err = parseConfig(map[string]any{"prometheus": "http://127.0.0.1:2"}, "d.yaml", true)
	require.NoError(t, err)
	_, err = parseConfig(map[string]any{"prometheus": "http://127.0.0.1:2"}, "d.yaml", false)
	require.ErrorContains(t, err, "target: missing")

	for _, tc := range []struct {
		name string
		sec  map[string]any
		want string
	}{
		{"misspelt key", section(map[string]any{"promethus": "x"}), `runner section: unknown field "promethus"`},
		{"no target", map[string]any{"prometheus": "http://127.0.0.1:2", "workload": "w"}, "target: missing"},
		{"bad url", section(map[string]any{"target": "ftp://h"}), "want an http:// or https:// URL"},
		{"unknown preset", section(map[string]any{"tiers": map[string]any{"web": map[string]any{"presets": []any{"nginx"}}}}), `unknown preset "nginx"`},
		{"bad duration", section(map[string]any{"runtime": "soon"}), "want a duration"},
		{"misspelt pages key", section(map[string]any{"pages": map[string]any{"throughtput": "x"}}), `runner section: unknown field "throughtput"`},
		{"a page query with a server's placeholder", section(map[string]any{"pages": map[string]any{"users": `sessions{instance="{instance}"}`}}),
			"runner section: pages.users: placeholder {instance} has no value; a page query has only {window}"},
		{"bad precision", section(map[string]any{"precision": 0.7}), "precision: want a share in [0, 0.5] such as 0.02 (0: fixed trials), got 0.7"},
		{"bad interval", section(map[string]any{"interval": -1}), "interval: want a duration >= 0"},
		// A wrong type is named by its path in the section (it said "want a string, got a list").
		{"a list for a string", section(map[string]any{"target": []any{"x"}}), "runner section: target: want a string, got a list"},
		{"a string for a list", section(map[string]any{"hook": "./hook.sh"}), "runner section: hook: want a list, got `./hook.sh`"},
		{"a nested misspelt key", section(map[string]any{"tiers": map[string]any{"web": map[string]any{"queries": map[string]any{"cpuu": "x"}}}}),
			`runner section: unknown field "cpuu" in tiers.web.queries; want one of: cpu,`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig(tc.sec, "d.yaml")
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "live.", "no Go type names")
		})
	}
}

func TestPresetsMergeAndExpand(t *testing.T) {
	tc := TierConfig{Presets: []string{"cgroup", "bboard"}, Queries: Queries{Throughput: "my_rate"}}
	q := tc.queries()
	assert.Contains(t, q.CPU, "softalloc_testbed_cpu_usage_seconds_total")
	assert.Equal(t, "my_rate", q.Throughput, "the file's query wins over the preset's")
	assert.Contains(t, q.Pools["connections"].Busy, `pool="connections"`)

	got, err := expand(q.Pools["threads"].FullShare, map[string]string{"instance": "h:1", "window": "6000ms"})
	require.NoError(t, err)
	assert.Equal(t, `rate(bboard_pool_full_seconds_total{pool="threads",instance="h:1"}[6000ms])`, got)
	_, err = expand(Presets["node"].CPU, map[string]string{"window": "1s"})
	assert.ErrorContains(t, err, "{node}")
	for _, name := range PresetNames() {
		assert.NotEmpty(t, Presets[name], name)
	}
}

func TestGuard(t *testing.T) {
	g, err := newGuard([]string{"10.1.0.0/16", "192.0.2.7"})
	require.NoError(t, err)
	for addr, ok := range map[string]bool{"127.0.0.1": true, "127.8.9.1": true, "::1": true, "10.1.200.3": true,
		"192.0.2.7": true, "10.2.0.1": false, "192.0.2.8": false, "8.8.8.8": false} {
		assert.Equal(t, ok, g.allows(netip.MustParseAddr(addr)), addr)
	}
	assert.NoError(t, g.checkURL("target", "http://127.0.0.1:8080/x"))
	assert.NoError(t, g.checkURL("target", "http://localhost:8080/x"))
	err = g.checkURL("target", "http://10.2.0.1/")
	assert.ErrorContains(t, err, "allowedHosts")
	assert.Error(t, g.control("tcp", "10.2.0.1:80", nil), "a dial elsewhere is refused")
	assert.NoError(t, g.control("tcp", "127.0.0.1:80", nil))

	_, err = newGuard([]string{"http://x/"})
	assert.ErrorContains(t, err, "not a host name")
}
