package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/runner/exec"
	"github.com/softalloc/softalloc/internal/topology"
)

func testdata(name string) string { return filepath.Join("..", "testdata", name) }

// sampleExperiment is testdata/experiment.json as softalloc builds it.
func sampleExperiment(t *testing.T) algorithms.Experiment {
	t.Helper()
	d, err := topology.ParseTopology("1/1/1")
	require.NoError(t, err)
	a, err := topology.ParseAllocation("400-150-60")
	require.NoError(t, err)
	e := algorithms.Experiment{Deployment: d, Allocation: a, Workload: algorithms.Workload{Users: 400},
		Timing: algorithms.Timing{RampUp: 30 * time.Second, Runtime: 60 * time.Second, RampDown: 10 * time.Second}}
	req, err := exec.NewRequest(e)
	require.NoError(t, err)
	want, err := json.Marshal(req)
	require.NoError(t, err)
	got, err := os.ReadFile(testdata("experiment.json"))
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(got), "testdata/experiment.json is what softalloc writes")
	return e
}

// The sample summary (k6's --summary-export format) becomes an observation
// that softalloc accepts for the experiment.
func TestSampleSummary(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"--summary", testdata("summary.json"), "--experiment", testdata("experiment.json"),
		"--servers", testdata("servers.json")}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	assert.Empty(t, stderr.String(), "iterations match requests: nothing to note")

	o, err := exec.ParseObservation(stdout.Bytes(), sampleExperiment(t))
	require.NoError(t, err, stdout.String())
	assert.Equal(t, 60.0, o.RuntimeSeconds, "the experiment's runtime: the phase:run submetrics cover it")
	assert.Equal(t, int64(12), o.Errors)
	assert.InDelta(t, 3522.0/60, o.Throughput, 1e-12)
	h := o.ResponseTimes
	assert.Equal(t, int64(3522), h.Count())
	assert.InDelta(t, 0.05260121445387663, h.Mean(), 1e-12)
	// At each percentile k6 gave, the rebuilt histogram agrees with it.
	for q, v := range map[float64]float64{0.5: 0.0341189265, 0.9: 0.1047160352, 0.95: 0.15631122375, 0.99: 0.4318925414} {
		assert.InDelta(t, v, h.Quantile(q), v*0.01, "p(%g)", q*100)
	}
	assert.InDelta(t, 2.21040133, h.Buckets[len(h.Buckets)-1].LE, 1e-12, "the last bucket ends at the maximum")
	assert.InDelta(t, 0.95, h.CountWithin(0.15631122375)/float64(h.Count()), 0.001)
	assert.Len(t, o.Servers, 3)
}

func TestWholeTestWithoutTag(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"--summary", testdata("summary.json"), "--experiment", testdata("experiment.json"),
		"--servers", testdata("servers.json"), "--tag", ""}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	assert.Contains(t, stderr.String(), "no --tag: the whole test (100.2 s, ramps included) is the window")
	var o algorithms.Observation
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &o))
	assert.InDelta(t, 4412/44.03156887437531, o.RuntimeSeconds, 1e-9)
	assert.Equal(t, int64(14), o.Errors)
	assert.Equal(t, int64(4398), o.ResponseTimes.Count())
}

func TestMissingSubmetric(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"--summary", testdata("summary.json"), "--experiment", testdata("experiment.json"),
		"--servers", testdata("servers.json"), "--tag", "phase:steady"}, &stdout, &stderr)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr.String(), "no metric http_reqs{phase:steady} (it has http_req_blocked, ")
	assert.Contains(t, stderr.String(), "add 'http_reqs{phase:steady}': [...] to the script's thresholds")
	assert.Empty(t, stdout.String())
}

func TestHistogram(t *testing.T) {
	// Equal percentiles share a bucket; a 0 ms minimum joins the next one.
	h := histogram(map[string]float64{"avg": 20, "min": 0, "med": 10, "p(90)": 30, "p(95)": 30, "max": 80, "count": 99}, 100)
	assert.Equal(t, []algorithms.Bucket{{LE: 0.01, Count: 50}, {LE: 0.03, Count: 45}, {LE: 0.08, Count: 5}}, h.Buckets)
	assert.InDelta(t, 2.0, h.Sum, 1e-12)
	require.NoError(t, h.Validate())

	h = histogram(map[string]float64{"avg": 5, "min": 5, "max": 5}, 3)
	assert.Equal(t, []algorithms.Bucket{{LE: 0.005, Count: 3}}, h.Buckets)

	h = histogram(map[string]float64{"avg": 5, "min": 5, "max": 5}, 0)
	assert.Empty(t, h.Buckets)
	assert.NotNil(t, h.Buckets, "[] in JSON, not null")
}
