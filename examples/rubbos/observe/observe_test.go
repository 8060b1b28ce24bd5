package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/runner/exec"
	"github.com/softalloc/softalloc/internal/topology"
)

func testdata(name string) string { return filepath.Join("..", "testdata", name) }

// The expected numbers were computed from the sample files independently
// of this code (a few lines of Python over the same files).

func TestCPUUtilization(t *testing.T) {
	tests := []struct {
		file    string
		want    float64
		samples int
	}{
		{"web-1.sar", 0.330130, 10},     // C locale, 24-hour clock
		{"app-1.sar", 0.949810, 10},     // en_US: 12-hour clock with AM/PM
		{"app-2.sar", 0.948610, 10},     // sar -u ALL -P ALL, header repeated, cut short (no Average)
		{"cluster-1.sar", 0.816360, 10}, //
		{"db-1.sar", 0.323820, 10},      // a locale with decimal commas
		{"db-2.sar", 0.296320, 10},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			f, err := os.Open(testdata(tt.file))
			require.NoError(t, err)
			defer f.Close()
			u, n, err := cpuUtilization(f)
			require.NoError(t, err)
			assert.InDelta(t, tt.want, u, 1e-6)
			assert.Equal(t, tt.samples, n)
		})
	}
}

func TestCPUUtilizationAverageOnly(t *testing.T) {
	in := "Linux 5.15.0 (h) \t03/05/2024 \t_x86_64_\t(4 CPU)\n\n" +
		"10:00:00        CPU     %user     %nice   %system   %iowait    %steal     %idle\n" +
		"Average:        all     40.00      0.00     10.00      5.00      0.00     45.00\n"
	u, n, err := cpuUtilization(strings.NewReader(in))
	require.NoError(t, err)
	assert.InDelta(t, 0.5, u, 1e-12)
	assert.Zero(t, n)

	_, _, err = cpuUtilization(strings.NewReader("Linux 5.15.0 (h)\n\n10:00:01  all  12.0\n"))
	assert.ErrorContains(t, err, "no \"all\" CPU rows")
	_, _, err = cpuUtilization(strings.NewReader("10:00:00 CPU %user %idle\n10:00:01 all 12.0 lots\n"))
	assert.ErrorContains(t, err, `line 2: %idle: want a percentage, got "lots"`)
}

func TestParseAccessLog(t *testing.T) {
	f, err := os.Open(testdata("web-1.access.log"))
	require.NoError(t, err)
	defer f.Close()
	reqs, err := parseAccessLog(f, 1e-6)
	require.NoError(t, err)
	require.Len(t, reqs, 115)
	r := reqs[0]
	assert.Equal(t, time.Date(2024, 3, 5, 8, 59, 56, 0, time.UTC), r.start.UTC())
	assert.Equal(t, "/rubbos/servlet/edu.rice.rubbos.servlets.OlderStories?day=4&month=3&year=2024", r.path)
	assert.Equal(t, 200, r.status)
	assert.InDelta(t, 0.190970, r.duration, 1e-12)

	// A user agent with escaped quotes does not confuse the fields.
	line := `10.0.1.2 - - [05/Mar/2024:10:00:01 +0100] "GET /a?q=\"x y\" HTTP/1.1" 503 12 "-" "Mozilla \"quoted\" agent" 1500`
	got, err := parseLine(line, 1e-3)
	require.NoError(t, err)
	assert.Equal(t, 503, got.status)
	assert.InDelta(t, 1.5, got.duration, 1e-12)

	for in, want := range map[string]string{
		`10.0.1.2 - - [05/Mar/2024:10:00:01 +0100] "GET / HTTP/1.1" 200 12`:          "want status, bytes, ..., time taken",
		`10.0.1.2 - - [05/Mar/2024:10:00:01 +0100] "GET / HTTP/1.1" 200 12 "-" "ua"`: `time taken "\"ua\""`,
		`10.0.1.2 - - [2024-03-05T10:00:01] "GET / HTTP/1.1" 200 12 5`:               "timestamp",
		`10.0.1.2 - - [05/Mar/2024:10:00:01 +0100] "GET / HTTP/1.1 200 12 5`:         "unterminated request line",
	} {
		_, err := parseAccessLog(strings.NewReader("\n"+in+"\n"), 1e-6)
		assert.ErrorContains(t, err, "line 2: ")
		assert.ErrorContains(t, err, want)
	}
}

// The whole program on the sample trial: its observation passes
// softalloc's own validation of the experiment it was run for.
func TestObserveSampleTrial(t *testing.T) {
	args := []string{"--experiment", testdata("experiment.json"), "--start", "2024-03-05T10:00:00+01:00",
		"--page-prefix", "/rubbos/servlet/",
		"--log", "web-1=us:" + testdata("web-1.access.log"),
		"--log", "app-1=ms:" + testdata("app-1.access.log"),
		"--log", "app-2=ms:" + testdata("app-2.access.log")}
	for _, s := range []string{"web-1", "app-1", "app-2", "cluster-1", "db-1", "db-2"} {
		args = append(args, "--sar", s+"="+testdata(s+".sar"))
	}
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run(args, &stdout, &stderr), stderr.String())

	e := sampleExperiment(t)
	o, err := exec.ParseObservation(stdout.Bytes(), e)
	require.NoError(t, err, stdout.String())

	assert.Equal(t, 10.0, o.RuntimeSeconds)
	assert.InDelta(t, 5.9, o.Throughput, 1e-12, "59 servlet pages in the window (static files and the 503 left out)")
	assert.Equal(t, int64(59), o.ResponseTimes.Count())
	assert.InDelta(t, 12.440603, o.ResponseTimes.Sum, 1e-9)
	assert.Equal(t, int64(1), o.Errors)
	assert.InDelta(t, 0.384039, o.ResponseTimes.Quantile(1), 0.384039*0.012, "the slowest page, within a bucket's width")

	web, _ := o.Server("web-1")
	assert.InDelta(t, 0.330130, web.CPU, 1e-6)
	assert.InDelta(t, 6.8, web.Throughput, 1e-12)
	assert.InDelta(t, 0.184331838, web.ResponseTime, 1e-9)
	require.Len(t, web.Pools, 1)
	assert.Equal(t, algorithms.PoolObservation{Name: "threads", Size: 400, Busy: web.Pools[0].Busy, FullShare: -1}, web.Pools[0])
	assert.InDelta(t, 1.2534565, web.Pools[0].Busy, 1e-8)

	app2, _ := o.Server("app-2")
	assert.InDelta(t, 3.0, app2.Throughput, 1e-12)
	assert.InDelta(t, 0.195933333, app2.ResponseTime, 1e-9)
	assert.InDelta(t, 0.5878, app2.Pools[0].Busy, 1e-8)
	assert.Equal(t, 150, app2.Pools[0].Size)

	db2, _ := o.Server("db-2")
	assert.InDelta(t, 0.296320, db2.CPU, 1e-6)
	assert.Zero(t, db2.Throughput, "no log given for the database")
	assert.Empty(t, db2.Pools)
}

// sampleExperiment is testdata/experiment.json as softalloc builds it; the
// file must be what softalloc writes.
func sampleExperiment(t *testing.T) algorithms.Experiment {
	t.Helper()
	d, err := topology.ParseTopology("1/2/1/2")
	require.NoError(t, err)
	a, err := topology.ParseAllocation("400-150-60")
	require.NoError(t, err)
	e := algorithms.Experiment{Deployment: d, Allocation: a, Workload: algorithms.Workload{Users: 60},
		Timing: algorithms.Timing{RampUp: 4 * time.Second, Runtime: 10 * time.Second, RampDown: 2 * time.Second}}
	req, err := exec.NewRequest(e)
	require.NoError(t, err)
	b, err := os.ReadFile(testdata("experiment.json"))
	require.NoError(t, err)
	want, err := jsonOf(req)
	require.NoError(t, err)
	assert.JSONEq(t, want, string(b), "testdata/experiment.json is what softalloc writes")
	return e
}

func TestObserveErrors(t *testing.T) {
	base := []string{"--experiment", testdata("experiment.json"), "--start", "2024-03-05T10:00:00+01:00"}
	sar := func(servers ...string) []string {
		var a []string
		for _, s := range servers {
			a = append(a, "--sar", s+"="+testdata(s+".sar"))
		}
		return a
	}
	all := sar("web-1", "app-1", "app-2", "cluster-1", "db-1", "db-2")
	for name, tc := range map[string]struct {
		args []string
		code int
		want string
	}{
		"missing sar":   {append(append([]string{}, base...), sar("web-1")...), 1, "server app-1: no --sar app-1=FILE"},
		"no web log":    {append(append([]string{}, base...), all...), 1, "no --log for a web-tier server"},
		"bad unit":      {append(append([]string{}, base...), "--log", "web-1=ns:x.log"), 2, "want SERVER=UNIT:FILE with UNIT us"},
		"foreign":       {append(append(append([]string{}, base...), all...), "--sar", "db-3=x"), 1, `server "db-3" is not in the experiment (it has app-1, app-2, cluster-1, db-1, db-2, web-1)`},
		"no start":      {[]string{"--experiment", "x"}, 2, "want --experiment FILE and --start TIME"},
		"twice":         {append(append([]string{}, base...), "--sar", "a=1", "--sar", "a=2"), 2, `server "a" given twice`},
		"wrong log fmt": {append(append(append([]string{}, base...), all...), "--log", "web-1=us:"+testdata("web-1.sar")), 1, "server web-1: log ../testdata/web-1.sar: line 1: no [%t] timestamp"},
	} {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			assert.Equal(t, tc.code, run(tc.args, &stdout, &stderr))
			assert.Contains(t, stderr.String(), tc.want)
			assert.Empty(t, stdout.String())
		})
	}
}

func jsonOf(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}
