package cli_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/internal/cli"
	"github.com/softalloc/softalloc/internal/promtest"
)

// doctorStack is the target and the exporter of a one-tier deployment: its
// CPU counter grows at cores cores, and it counts the pages it serves.
type doctorStack struct {
	mu    sync.Mutex
	start time.Time
	cores float64
	pages int
}

func (s *doctorStack) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.URL.Path != "/metrics" {
		s.pages++
		return
	}
	fmt.Fprintf(w, "# TYPE cpu_seconds_total counter\ncpu_seconds_total %g\n", s.cores*time.Since(s.start).Seconds())
	fmt.Fprintf(w, "# TYPE pages_total counter\npages_total %d\n", s.pages)
	fmt.Fprintf(w, "# TYPE page_seconds_total counter\npage_seconds_total %g\n", 0.01*float64(s.pages))
}

// doctorFile writes a deployment file of one web tier of two cores reading
// its CPU with cpu (a PromQL query; {instance} is target's host:port).
func doctorFile(t *testing.T, target, prom, cpu string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "workload.yaml"), []byte(`name: w
thinkTime: {mean: 100ms}
start: Home
interactions:
  - {name: Home, path: /home, next: {Home: 1}}
`), 0o644))
	file := filepath.Join(dir, "deployment.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`name: one
tiers:
  - {name: web, role: web, replicas: 1, cores: 2}
runner:
  name: live
  target: `+target+`
  workload: workload.yaml
  prometheus: `+prom+`
  runtime: 1s
  interval: 100ms
  tiers:
    web:
      servers: [{instance: "`+strings.TrimPrefix(target, "http://")+`"}]
      queries:
        cpu: '`+cpu+`'
        throughput: rate(pages_total{instance="{instance}"}[{window}])
        responseTime: rate(page_seconds_total{instance="{instance}"}[{window}]) / rate(pages_total{instance="{instance}"}[{window}])
`), 0o644))
	return file
}

func TestDoctorCommand(t *testing.T) {
	// A stack each, so that one's probe is not another's traffic before any load.
	var stacks []*doctorStack
	var urls []string
	for range 3 {
		stack := &doctorStack{start: time.Now(), cores: 1.5}
		srv := httptest.NewServer(stack)
		t.Cleanup(srv.Close)
		stacks, urls = append(stacks, stack), append(urls, srv.URL)
	}
	prom := promtest.Scraping(t, "the doctor command's test against a real Prometheus", 100*time.Millisecond, time.Second, urls...)
	const cpu = `rate(cpu_seconds_total{instance="{instance}"}[{window}])`

	// In turn: cobra's template functions are the process's, and a command
	// line that builds them races with another.
	t.Run("CleanJSON", func(t *testing.T) {
		stack := stacks[0]
		file := doctorFile(t, urls[0], prom, cpu+" / {cores}")
		stdout, stderr, code := run(t, "", "doctor", "-f", file, "--probe", "4", "--probe-rate", "8", "--output", "json")
		require.Equal(t, cli.ExitOK, code, stderr)
		var got struct {
			OK       bool     `json:"ok"`
			Problems []string `json:"problems"`
			Probe    struct {
				Pages, Requests int
				Skipped         bool
			} `json:"probe"`
			Servers []struct {
				Server   string `json:"server"`
				Readings []struct {
					Field, Query, Unit, Status string
					Value                      *float64
					PerPage                    *float64 `json:"perPage"`
				} `json:"readings"`
			} `json:"servers"`
		}
		require.NoError(t, json.Unmarshal([]byte(stdout), &got), stdout)
		assert.True(t, got.OK)
		assert.Empty(t, got.Problems)
		assert.NotNil(t, got.Problems, "an empty list, not null, for scripts")
		assert.Equal(t, 4, got.Probe.Pages)
		require.Len(t, got.Servers, 1)
		assert.Equal(t, "web-1", got.Servers[0].Server)
		require.Len(t, got.Servers[0].Readings, 3)
		cpuRd := got.Servers[0].Readings[0]
		assert.Equal(t, "cpu", cpuRd.Field)
		assert.Equal(t, "share of the server's cores busy, 0-1 ({cores} = 2)", cpuRd.Unit)
		require.NotNil(t, cpuRd.Value)
		assert.InDelta(t, stack.cores/2, *cpuRd.Value, 0.05)
		tp := got.Servers[0].Readings[1]
		require.NotNil(t, tp.PerPage)
		assert.InDelta(t, 1, *tp.PerPage, 0.5)
	})

	t.Run("CleanTable", func(t *testing.T) {
		file := doctorFile(t, urls[1], prom, cpu+" / {cores}")
		stdout, stderr, code := run(t, "", "doctor", "-f", file, "--probe", "0")
		require.Equal(t, cli.ExitOK, code, stderr)
		assert.Contains(t, stdout, "web-1 (tier web)")
		assert.Regexp(t, `cpu +0\.7[0-9]* +share of the server's cores busy, 0-1 \(\{cores\} = 2\) +ok +rate\(cpu_seconds_total\{instance="[0-9.:]+"\}\[1000ms\]\) / 2`, stdout)
		assert.Contains(t, stdout, "probe: none (--probe 0)")
		assert.Contains(t, stdout, "ok: every query a campaign needs reads plausibly")
		assert.Empty(t, stderr)
	})

	t.Run("CPUInCores", func(t *testing.T) {
		file := doctorFile(t, urls[2], prom, cpu)
		stdout, stderr, code := run(t, "", "doctor", "-f", file, "--probe", "0", "-o", "json")
		assert.Equal(t, cli.ExitFailure, code, stderr)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		require.Len(t, lines, 2, stderr)
		assert.Regexp(t, `^softalloc: doctor: web-1: cpu: query rate\(cpu_seconds_total\{instance="[0-9.:]+"\}\[1000ms\]\) read 1\.[0-9]+, not a share in \[0, 1\].*divide it by \{cores\} \(2 here\)$`, lines[0])
		assert.Equal(t, "softalloc: doctor: 1 problem(s): a campaign on this deployment file would fail or mislead", lines[1])
		var got struct {
			OK       bool     `json:"ok"`
			Problems []string `json:"problems"`
		}
		require.NoError(t, json.Unmarshal([]byte(stdout), &got), stdout)
		assert.False(t, got.OK)
		assert.Equal(t, []string{strings.TrimPrefix(lines[0], "softalloc: doctor: ")}, got.Problems)
	})
}

// Bad input is exit 2 before any query or request.
func TestDoctorUsageErrors(t *testing.T) {
	file := doctorFile(t, "http://127.0.0.1:1", "http://127.0.0.1:1", "rate(cpu_seconds_total{instance=\"{instance}\"}[{window}]) / {cores}")
	noCPU := filepath.Join(filepath.Dir(file), "nocpu.yaml")
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(noCPU, []byte(strings.Replace(string(b), "cpu: '", "gcShare: '", 1)), 0o644))
	exec := filepath.Join(filepath.Dir(file), "exec.yaml")
	require.NoError(t, os.WriteFile(exec, []byte(strings.Replace(string(b), "name: live", "name: exec", 1)), 0o644))
	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"no file":     {[]string{"doctor"}, "doctor: want -f deployment.yaml"},
		"no such":     {[]string{"doctor", "-f", "/nonexistent.yaml"}, "/nonexistent.yaml"},
		"probe":       {[]string{"doctor", "-f", file, "--probe", "-1"}, "--probe -1: want a number of pages >= 0"},
		"probe rate":  {[]string{"doctor", "-f", file, "--probe-rate", "0"}, "--probe-rate 0: want pages per second > 0"},
		"output":      {[]string{"doctor", "-f", file, "-o", "xml"}, `--output "xml": want table or json`},
		"exec runner": {[]string{"doctor", "-f", exec}, "runner.name is exec; doctor checks the live runner's queries"},
		"no cpu":      {[]string{"doctor", "-f", noCPU}, "tiers.web: no cpu query"},
	} {
		t.Run(name, func(t *testing.T) {
			stdout, stderr, code := run(t, "", c.args...)
			assert.Equal(t, cli.ExitUsage, code, stderr)
			assert.Contains(t, stderr, c.want)
			assert.Empty(t, stdout)
		})
	}
	stdout, _, code := run(t, "", "doctor", "--help")
	assert.Equal(t, cli.ExitOK, code)
	assert.Contains(t, stdout, "softalloc doctor -f deployment.yaml --probe 0")
}
