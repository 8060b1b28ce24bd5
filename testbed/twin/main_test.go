package main

import (
	"bytes"
	"encoding/json"
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
