package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startPushgateway runs Debian's prometheus-pushgateway on loopback.
func startPushgateway(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus-pushgateway")
	if err != nil {
		if bin, err = exec.LookPath("pushgateway"); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatal("prometheus-pushgateway is not installed in CI: .ci/run must install it")
			}
			t.Skip("SKIPPED: prometheus-pushgateway is not installed (apt-get install prometheus-pushgateway); the Pushgateway end-to-end test did not run")
		}
	}
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--web.listen-address="+addr)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	url := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(url + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return url
			}
		}
		require.True(t, time.Now().Before(deadline), "the Pushgateway did not become ready: %v", err)
		time.Sleep(20 * time.Millisecond)
	}
}

// A campaign's metrics pushed to a real Pushgateway are scraped back from it.
func TestPushgatewayEndToEnd(t *testing.T) {
	url := startPushgateway(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "capacity.prom")
	out, stderr, code := run(t, "", "recommend", "--topology", "1/2/1/2", "--ramp-up", "10s", "--runtime", "20s", "--journal", filepath.Join(dir, "j"),
		"--output", "json", "--pushgateway", url, "--job", "softalloc-ci", "--grouping", "branch=main", "--metrics-file", file)
	require.Equal(t, 0, code, stderr)
	var doc struct {
		Tiers []struct {
			Name             string
			ThreadsPerServer int
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))

	resp, err := http.Get(url + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	pool := families["softalloc_recommended_pool_size"]
	require.NotNil(t, pool, "the pushed metrics are on the gateway")
	got := map[string]float64{}
	for _, m := range pool.Metric {
		l := map[string]string{}
		for _, p := range m.Label {
			l[p.GetName()] = p.GetValue()
		}
		assert.Equal(t, "softalloc-ci", l["job"])
		assert.Equal(t, "main", l["branch"])
		assert.Equal(t, "1/2/1/2", l["topology"])
		if l["pool"] == "threads" {
			got[l["tier"]] = m.GetGauge().GetValue()
		}
	}
	for _, tr := range doc.Tiers {
		assert.Equal(t, float64(tr.ThreadsPerServer), got[tr.Name], tr.Name)
	}
	for _, name := range []string{"softalloc_critical_resource_info", "softalloc_experiments_total", "softalloc_campaign_duration_seconds", "softalloc_saturation_workload_users"} {
		assert.Contains(t, families, name)
	}
	_, err = os.Stat(file)
	assert.NoError(t, err, "the metrics file is written too")
}

// A failed push is a clear error and a non-zero exit; the file is still written.
func TestFailedPushKeepsTheMetricsFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "capacity.prom")
	dead := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	out, stderr, code := run(t, "", "find-critical", "--topology", "1/4/1/4", "--ramp-up", "10s", "--runtime", "20s", "--journal", filepath.Join(dir, "j"),
		"--pushgateway", dead, "--metrics-file", file)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "critical resource:", "the answer is printed before the push")
	assert.Contains(t, stderr, "push to "+dead)
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Contains(t, string(data), "softalloc_critical_resource_info")

	_, stderr, code = run(t, "", "find-critical", "--topology", "1/4/1/4", "--grouping", "branch")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "want LABEL=VALUE")
}

func TestCheckExitCodes(t *testing.T) {
	dir := t.TempDir()
	j := filepath.Join(dir, "journal.jsonl")
	common := []string{"check", "--topology", "1/2/1/2", "--ramp-up", "10s", "--runtime", "20s", "--journal", j}

	baseline, stderr, code := run(t, "", append(common, "--output", "json")...)
	require.Equal(t, 0, code, stderr)
	basePath := filepath.Join(dir, "capacity.json")
	require.NoError(t, os.WriteFile(basePath, []byte(baseline), 0o644))
	var doc struct {
		Capacity struct {
			MaxGoodput float64
			Critical   string
		}
	}
	require.NoError(t, json.Unmarshal([]byte(baseline), &doc))
	require.Equal(t, "app/cpu", doc.Capacity.Critical)

	// Capacity holds: exit 0.
	out, stderr, code := run(t, "", append(common, "--min-goodput", fmt.Sprint(doc.Capacity.MaxGoodput*0.9), "--critical", "app/cpu",
		"--baseline", basePath, "--max-regression", "5%")...)
	assert.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "min-goodput")
	assert.Empty(t, stderr)

	// Two violated checks: exit 1 and one line each on stderr.
	_, stderr, code = run(t, "", append(common, "--min-goodput", fmt.Sprint(doc.Capacity.MaxGoodput*1.2), "--critical", "cluster/cpu")...)
	assert.Equal(t, 1, code)
	assert.Equal(t, 2, countLines(stderr), stderr)
	assert.Contains(t, stderr, "check min-goodput failed")
	assert.Contains(t, stderr, "check critical failed: critical resource is app/cpu; expected cluster/cpu")

	// A regression: too few Tomcat threads move the bottleneck to the pool.
	_, stderr, code = run(t, "", "check", "--topology", "1/2/1/2", "--alloc", "400-3-3", "--ramp-up", "10s", "--runtime", "20s", "--journal", j,
		"--baseline", basePath, "--max-regression", "5%", "--critical", "app/cpu")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "check max-regression-goodput failed")
	assert.Contains(t, stderr, "critical resource is app/threads")

	// From the journal alone, no experiment run.
	_, stderr, code = run(t, "", "check", "--from-journal", j, "--topology", "1/2/1/2", "--alloc", "400-150-60", "--critical", "app/cpu")
	assert.Equal(t, 0, code, stderr)

	// Usage errors: exit 2. A journal's deployment is checked as a fresh one.
	otherBase := filepath.Join(dir, "capacity-1414.json")
	require.Contains(t, baseline, `"topology": "1/2/1/2"`)
	require.NoError(t, os.WriteFile(otherBase, []byte(strings.Replace(baseline, `"topology": "1/2/1/2"`, `"topology": "1/4/1/4"`, 1)), 0o644))
	for _, args := range [][]string{
		{"check", "--from-journal", j, "--topology", "1/2/1/2", "--alloc", "400-150-60", "--critical", "nope/cpu"},
		{"check", "--from-journal", j, "--topology", "1/2/1/2", "--alloc", "400-150-60", "--baseline", otherBase, "--max-regression", "5%"},
		{"check", "--topology", "1/2/1/2"},
		{"check", "--topology", "1/2/1/2", "--max-regression", "5%"},
		{"check", "--topology", "1/2/1/2", "--baseline", basePath, "--max-regression", "five"},
		{"check", "--topology", "1/2/1/2", "--critical", "cpu"},
		{"check", "--from-journal", j, "--critical", "app/cpu"},
	} {
		_, stderr, code := run(t, "", args...)
		assert.Equal(t, 2, code, "%v: %s", args, stderr)
		assert.Equal(t, 1, countLines(stderr), stderr)
	}
}

func countLines(s string) int {
	n := 0
	for _, c := range s {
		if c == '\n' {
			n++
		}
	}
	return n
}
