package cli_test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/internal/cli"
	"github.com/softalloc/softalloc/internal/promtest"
)

// rampStack serves a load that steps through 5, 10, 15 and 20 pages/s,
// two seconds each, with a CPU of 20 ms a page besides 1% idle and 50 ms a page.
type rampStack struct{ start time.Time }

func (s rampStack) pages(t float64) float64 {
	var n float64
	for k := 0; float64(k) < t; k++ {
		n += 5 * float64(1+(k/2)%4) * math.Min(1, t-float64(k))
	}
	return n
}

func (s rampStack) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t := time.Since(s.start).Seconds()
	p := s.pages(t)
	fmt.Fprintf(w, "# TYPE cpu_seconds_total counter\ncpu_seconds_total %g\n", 0.02*p+0.01*t)
	fmt.Fprintf(w, "# TYPE pages_total counter\npages_total %g\n", p)
	fmt.Fprintf(w, "# TYPE page_seconds_total counter\npage_seconds_total %g\n", 0.05*p)
}

// advise from Prometheus takes the users' think time from the workload
// file the live runner section names (a closed model); a file it cannot
// read costs a warning and the open model, not the run.
func TestAdviseTakesTheThinkTimeOfTheDeploymentsWorkload(t *testing.T) {
	srv := httptest.NewServer(rampStack{start: time.Now().Truncate(time.Second)})
	t.Cleanup(srv.Close)
	prom := promtest.Scraping(t, "advise's think time from the workload file", 100*time.Millisecond, time.Second, srv.URL)
	start := time.Now().UTC().Truncate(time.Second).Add(time.Second)
	end := start.Add(12 * time.Second)
	time.Sleep(time.Until(end.Add(time.Second)))

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "workload.yaml"), []byte(`name: w
thinkTime: {mean: 700ms}
start: Home
interactions:
  - {name: Home, path: /home, next: {Home: 1}}
`), 0o644))
	deployment := func(workload string) string {
		file := filepath.Join(dir, workload+".deployment.yaml")
		require.NoError(t, os.WriteFile(file, []byte(`name: one
tiers:
  - {name: web, role: web, replicas: 1, cores: 1}
runner:
  name: live
  target: `+srv.URL+`
  workload: `+workload+`
  prometheus: `+prom+`
  runtime: 1s
  tiers:
    web:
      servers: [{instance: "`+strings.TrimPrefix(srv.URL, "http://")+`"}]
      queries:
        cpu: rate(cpu_seconds_total{instance="{instance}"}[{window}]) / {cores}
        throughput: rate(pages_total{instance="{instance}"}[{window}])
        responseTime: rate(page_seconds_total{instance="{instance}"}[{window}]) / rate(pages_total{instance="{instance}"}[{window}])
`), 0o644))
		return file
	}
	var doc struct {
		Advice struct {
			Model           string  `json:"model"`
			ThinkTime       float64 `json:"thinkTime"`
			ThinkTimeSource string  `json:"thinkTimeSource"`
		} `json:"advice"`
	}
	args := []string{"advise", "--start", start.Format(time.RFC3339), "--end", end.Format(time.RFC3339), "--step", "2s", "-o", "json", "-f"}
	stdout, stderr, code := run(t, "", append(args, deployment("workload.yaml"))...)
	require.Equal(t, cli.ExitOK, code, stderr)
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc), stdout)
	assert.Equal(t, "closed", doc.Advice.Model)
	assert.InDelta(t, 0.7, doc.Advice.ThinkTime, 1e-9)
	assert.Contains(t, doc.Advice.ThinkTimeSource, "the runner's workload file workload.yaml")

	stdout, stderr, code = run(t, "", append(args, deployment("missing.yaml"))...)
	require.Equal(t, cli.ExitOK, code, stderr)
	assert.Contains(t, stderr, "advise: warning: deployment")
	assert.Contains(t, stderr, "missing.yaml")
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc), stdout)
	assert.Equal(t, "open", doc.Advice.Model)
}
