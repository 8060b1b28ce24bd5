package metrics_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/fuzzcheck"
	"github.com/softalloc/softalloc/internal/metrics"
)

func sampleSet() *metrics.Set {
	c := 8
	set := metrics.New("recommend", "1/4/1/4", "sim")
	set.Recommendation(algorithms.Recommendation{
		Critical: algorithms.Critical{Tier: "cluster", Resource: "cpu", Utilization: 0.97, SaturationWorkload: 6500, MaxThroughput: 921.9},
		MinJobs:  algorithms.MinJobs{MinJobs: 22.4, WLmin: 6200},
		Tiers: []algorithms.TierRecommendation{
			{Name: "web", ThreadsPerServer: 400}, {Name: "app", ThreadsPerServer: 8, ConnectionsPerServer: &c},
		},
	})
	set.Experiments(33)
	set.Duration(1500 * time.Millisecond)
	set.Goodput("400-150-60", 2, 910.5)
	return set
}

func TestMetricsFileParsesAndFollowsConventions(t *testing.T) {
	set := sampleSet()
	problems, err := testutil.GatherAndLint(set.Registry(true))
	require.NoError(t, err)
	assert.Empty(t, problems, "client_golang's linter")

	path := filepath.Join(t.TempDir(), "capacity.prom")
	require.NoError(t, set.WriteFile(path))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(f)
	require.NoError(t, err)

	pool := families["softalloc_recommended_pool_size"]
	require.NotNil(t, pool)
	found := map[string]float64{}
	for _, m := range pool.Metric {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		assert.Equal(t, "recommend", labels["command"])
		assert.Equal(t, "1/4/1/4", labels["topology"])
		assert.Equal(t, "sim", labels["runner"])
		found[labels["tier"]+"/"+labels["pool"]] = m.GetGauge().GetValue()
	}
	assert.Equal(t, map[string]float64{"web/threads": 400, "app/threads": 8, "app/connections": 8}, found)
	// One campaign's count is a gauge (issue 24: it was a counter named _total).
	assert.Equal(t, 33.0, families["softalloc_experiments"].Metric[0].GetGauge().GetValue())
	assert.Equal(t, 1.0, families["softalloc_critical_resource_info"].Metric[0].GetGauge().GetValue())
	assert.Equal(t, 6500.0, families["softalloc_saturation_workload_users"].Metric[0].GetGauge().GetValue())
	assert.Equal(t, 1.5, families["softalloc_campaign_duration_seconds"].Metric[0].GetGauge().GetValue())
	for _, name := range []string{"softalloc_max_throughput_pages_per_second", "softalloc_goodput_pages_per_second", "softalloc_min_jobs"} {
		assert.Contains(t, families, name)
	}
	// No temporary file is left beside it (written by rename).
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	assert.Len(t, entries, 1)

	if promtool, err := exec.LookPath("promtool"); err == nil {
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin, _ = os.Open(path)
		out, err := cmd.CombinedOutput()
		assert.NoError(t, err, "promtool check metrics: %s", out)
	} else if os.Getenv("CI") != "" {
		t.Fatal("promtool is not installed in CI: .ci/run installs Debian's prometheus package")
	} else {
		t.Log("promtool not installed: skipped `promtool check metrics`")
	}
}

func TestParseGrouping(t *testing.T) {
	g, err := metrics.ParseGrouping([]string{"branch=main", "env=ci"})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"branch": "main", "env": "ci"}, g)
	_, err = metrics.ParseGrouping([]string{"branch"})
	assert.EqualError(t, err, `--grouping "branch": want LABEL=VALUE`)
	assert.True(t, strings.HasPrefix(mustErr(metrics.ParseGrouping([]string{"=x"})).Error(), "--grouping"))
}

func mustErr(_ map[string]string, err error) error { return err }

// A grouping label may not repeat a label the pushed series carry: the
// Pushgateway refuses the push, and that at a campaign's end.
func TestGroupingRefusesTheSeriesLabels(t *testing.T) {
	for label, want := range map[string]string{
		"command": "softalloc groups every push by command, topology, runner itself",
		"check":   "softalloc's series carry a check label",
		"tier":    "softalloc's series carry a tier label",
		"server":  "softalloc's series carry a server label",
	} {
		_, err := metrics.ParseGrouping([]string{label + "=x"})
		require.Error(t, err, label)
		assert.Contains(t, err.Error(), want)
	}
}

// Every series has a help text and follows the naming conventions; the
// table of docs/commands.md lists them all.
func TestSeriesAreDocumented(t *testing.T) {
	readme, err := os.ReadFile("../../docs/commands.md")
	require.NoError(t, err)
	for name, s := range metrics.Series {
		assert.NotEmpty(t, s.Help, name)
		assert.NotContains(t, name, "requests", "the docs count pages")
		assert.False(t, strings.HasSuffix(name, "_total"), "%s: softalloc writes one campaign's figures: gauges, no counters", name)
		assert.Contains(t, string(readme), "`"+name+"`", "docs/commands.md's metrics table lists %s", name)
	}
}

// Issue 35: a URL's password never reaches a message.
func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"http://ci:s3cret@gw:9091":    "http://ci:xxxxx@gw:9091",
		"http://gw:9091/prefix":       "http://gw:9091/prefix",
		"http://ci:s3%zzcret@gw:9091": "http://xxxxx@gw:9091", // does not parse
		"ci:s3cret@gw:9091/%zz":       "xxxxx@gw:9091/%zz",
		"not a url %zz":               "not a url %zz",
		"http://":                     "http://",
		"http://ci@gw:9091":           "http://ci@gw:9091",
		"http://gw:9091/a@b":          "http://gw:9091/a@b",
	} {
		assert.Equal(t, want, metrics.Redact(in), in)
	}
}

// Issue 35: a repeated grouping label pushed its last value alone.
func TestParseGroupingRefusesARepeatedLabel(t *testing.T) {
	_, err := metrics.ParseGrouping([]string{"branch=main", "pr=1", "branch=dev"})
	require.EqualError(t, err, `--grouping "branch=dev": branch is already given (branch=main); want each label once`)
	g, err := metrics.ParseGrouping([]string{"branch=main", "pr=1"})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"branch": "main", "pr": "1"}, g)
}

// A grouping label with a control character is named in one line, quoted
// (FuzzFlagValues found "\r=0" breaking the message in two).
func TestGroupingErrorsAreOneLine(t *testing.T) {
	for _, bad := range []string{"\r=0", "a\nb=1", "__x\r=1"} {
		_, err := metrics.ParseGrouping([]string{bad})
		require.Error(t, err, "%q", bad)
		fuzzcheck.RequireOneLine(t, err)
	}
}
