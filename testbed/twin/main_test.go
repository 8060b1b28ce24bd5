package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/sim"
	"github.com/softalloc/softalloc/internal/workload"
)

// The twin's model loads, and its mix is the trial's workload with the
// measured queries per page: the simulator walks the pages the load
// generator walked.
func TestTwinWritesALoadableModel(t *testing.T) {
	dir := t.TempDir()
	// The pages of the window: 100 pages/s for 60 s (an observation's
	// histogram must hold its throughput's pages).
	var rt algorithms.Recorder
	for range 6000 {
		rt.Add(0.01)
	}
	o := algorithms.Observation{RuntimeSeconds: 60, Throughput: 100, ResponseTimes: rt.Histogram(), Servers: []algorithms.ServerObservation{
		{Name: "web-1", Tier: "web", CPU: 0.2, Throughput: 180},
		{Name: "app-1", Tier: "app", CPU: 0.5, Throughput: 80},
		{Name: "db-1", Tier: "db", CPU: 0.3, Throughput: 240},
	}}
	b, err := json.Marshal(o)
	require.NoError(t, err)
	obs := filepath.Join(dir, "low.jsonl")
	require.NoError(t, os.WriteFile(obs, append(b, '\n'), 0o644))

	var stdout bytes.Buffer
	out := filepath.Join(dir, "twin")
	require.NoError(t, run(obs, "../workload.yaml", out, 0, &stdout))
	assert.Contains(t, stdout.String(), "3.00 queries/page")

	m, err := sim.LoadModel(filepath.Join(out, "model.yaml"))
	require.NoError(t, err)
	assert.InDelta(t, 0.5/80, float64(m.App.ServletDemand), 1e-12)
	wl, err := workload.Load("../workload.yaml")
	require.NoError(t, err)
	assert.Equal(t, wl.Interactions, m.Mix.Interactions)
	assert.Equal(t, wl.ThinkTime, m.Mix.ThinkTime)
	assert.Equal(t, 3.0, m.Mix.QueriesPerServletPage)
}

// Several windows pool as one longer one: a tier's CPU-seconds over the work
// it served, each window weighted by its length, not a mean of the windows'
// ratios (4 ms per page here, where the pooled demand is 4.6).
func TestTwinPoolsSeveralObservations(t *testing.T) {
	window := func(secs, pages, appCPU float64) algorithms.Observation {
		var rt algorithms.Recorder
		for range int(secs * pages) {
			rt.Add(0.01)
		}
		return algorithms.Observation{RuntimeSeconds: secs, Throughput: pages, ResponseTimes: rt.Histogram(), Servers: []algorithms.ServerObservation{
			{Name: "web-1", Tier: "web", CPU: 0.1, Throughput: 2 * pages},
			{Name: "app-1", Tier: "app", CPU: appCPU, Throughput: pages},
			{Name: "db-1", Tier: "db", CPU: 0.2, Throughput: 3 * pages},
		}}
	}
	// 6 s at 50 pages/s and 3 ms a page, 12 s at 100 pages/s and 5 ms:
	// (0.15·6 + 0.5·12) / (50·6 + 100·12) = 6.9 / 1500 = 4.6 ms.
	d, err := Calibrate(window(6, 50, 0.15), window(12, 100, 0.5))
	require.NoError(t, err)
	assert.InDelta(t, 6.9/1500, d.AppPage, 1e-12)
	assert.InDelta(t, 3.0, d.QueriesPerPage, 1e-12)

	dir := t.TempDir()
	obs := filepath.Join(dir, "windows.jsonl")
	var lines []byte
	for _, o := range []algorithms.Observation{window(6, 50, 0.15), window(12, 100, 0.5)} {
		b, err := json.Marshal(o)
		require.NoError(t, err)
		lines = append(append(lines, b...), '\n')
	}
	require.NoError(t, os.WriteFile(obs, lines, 0o644))
	require.NoError(t, run(obs, "../workload.yaml", filepath.Join(dir, "twin"), 0, io.Discard))
	m, err := sim.LoadModel(filepath.Join(dir, "twin", "model.yaml"))
	require.NoError(t, err)
	assert.InDelta(t, 6.9/1500, float64(m.App.ServletDemand), 1e-12)

	_, err = Calibrate(window(6, 50, 0.15), algorithms.Observation{RuntimeSeconds: 6})
	require.ErrorContains(t, err, "observation 2 has no server of tier web")
}
