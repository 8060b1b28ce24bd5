package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/wire"
)

// A recording that holds one experiment at two precisions (a trial
// measured again to decide a saturation test) answers each precision with
// its own record, and any other with the last recorded.
func TestReplayMatchesThePrecision(t *testing.T) {
	e := algorithms.Experiment{
		Deployment: algorithms.Deployment{Topology: "1/1/1", Tiers: []algorithms.Tier{{Name: "app", Role: algorithms.RoleApp, Replicas: 1, Cores: 1}}},
		Allocation: algorithms.Allocation{"app": {Threads: 10, Connections: 5}},
		Workload:   algorithms.Workload{Users: 50},
		Timing:     algorithms.Timing{RampUp: time.Second, Runtime: time.Minute, Precision: 0.02},
	}
	obs := func(tp float64) algorithms.Observation {
		return algorithms.Observation{RuntimeSeconds: 60, Throughput: tp,
			Servers: []algorithms.ServerObservation{{Name: "app-1", Tier: "app", CPU: 0.9, Throughput: tp}}}
	}
	var buf bytes.Buffer
	fine := e
	fine.Timing.Precision = 0.01
	for _, r := range []wire.Record{wire.FromRecord(e, obs(100)), wire.FromRecord(fine, obs(101))} {
		b, err := json.Marshal(r)
		require.NoError(t, err)
		buf.Write(append(b, '\n'))
	}
	run, err := Read(&buf, "test")
	require.NoError(t, err)
	for p, want := range map[float64]float64{0.02: 100, 0.01: 101, 0.005: 101, 0: 101} {
		x := e
		x.Timing.Precision = p
		o, err := run.RunExperiment(context.Background(), x)
		require.NoError(t, err)
		assert.Equal(t, want, o.Throughput, "precision %g", p)
	}
}

// A journal that a campaign and a validate grid shared holds the same
// experiment held to every figure and to goodput alone: each answers the
// experiment asked as it was recorded, whatever came last. Replaying such a
// journal once gave recommend the grid's trial and 400-43-43 for 400-22-22.
func TestReplayPrefersTheTimingAsked(t *testing.T) {
	e := algorithms.Experiment{
		Deployment: algorithms.Deployment{Topology: "1/1/1", Tiers: []algorithms.Tier{{Name: "app", Role: algorithms.RoleApp, Replicas: 1, Cores: 1}}},
		Allocation: algorithms.Allocation{"app": {Threads: 10, Connections: 5}},
		Workload:   algorithms.Workload{Users: 50},
		Timing:     algorithms.Timing{RampUp: time.Second, Runtime: time.Minute, Precision: 0.02, SLAs: []float64{2}},
	}
	grid := e
	grid.Timing.GoodputOnly, grid.Timing.SLAs = true, []float64{0.2, 2}
	longer := e
	longer.Timing.Runtime = 2 * time.Minute
	obs := func(tp float64) algorithms.Observation {
		return algorithms.Observation{RuntimeSeconds: 60, Throughput: tp,
			Servers: []algorithms.ServerObservation{{Name: "app-1", Tier: "app", CPU: 0.9, Throughput: tp}}}
	}
	var buf bytes.Buffer
	for _, r := range []wire.Record{wire.FromRecord(longer, obs(99)), wire.FromRecord(e, obs(100)), wire.FromRecord(grid, obs(90))} {
		b, err := json.Marshal(r)
		require.NoError(t, err)
		buf.Write(append(b, '\n'))
	}
	run, err := Read(&buf, "test")
	require.NoError(t, err)
	assert.Empty(t, run.Warnings, "one run wrote them all")
	other := e
	other.Timing.Runtime = 3 * time.Minute // no record has it: the same figures held first
	for want, x := range map[float64]algorithms.Experiment{100: e, 90: grid, 99: longer} {
		o, err := run.RunExperiment(context.Background(), x)
		require.NoError(t, err)
		assert.Equal(t, want, o.Throughput, "%+v", x.Timing)
	}
	o, err := run.RunExperiment(context.Background(), other)
	require.NoError(t, err)
	assert.Equal(t, 100.0, o.Throughput, "the last of the records held to every figure")
}

// A journal of several runs (seeds here) holds the same experiment from
// each; the replay says so, since it cannot tell which run is meant.
func TestReplayWarnsOfSeveralRuns(t *testing.T) {
	e := algorithms.Experiment{
		Deployment: algorithms.Deployment{Topology: "1/1/1", Tiers: []algorithms.Tier{{Name: "app", Role: algorithms.RoleApp, Replicas: 1, Cores: 1}}},
		Allocation: algorithms.Allocation{"app": {Threads: 10, Connections: 5}},
		Workload:   algorithms.Workload{Users: 50},
		Timing:     algorithms.Timing{RampUp: time.Second, Runtime: time.Minute},
	}
	o := algorithms.Observation{RuntimeSeconds: 60, Throughput: 100, Servers: []algorithms.ServerObservation{{Name: "app-1", Tier: "app", CPU: 0.9, Throughput: 100}}}
	var buf bytes.Buffer
	for _, seed := range []string{"1", "2"} {
		line := struct {
			Runner   string            `json:"runner"`
			Settings map[string]string `json:"settings"`
			wire.Record
		}{"sim", map[string]string{"seed": seed}, wire.FromRecord(e, o)}
		b, err := json.Marshal(line)
		require.NoError(t, err)
		buf.Write(append(b, '\n'))
	}
	run, err := Read(&buf, "j.jsonl")
	require.NoError(t, err)
	require.Len(t, run.Warnings, 1)
	assert.Contains(t, run.Warnings[0], "from 2 runs (sim seed=1; sim seed=2)")
}

// A journal holds a ramp's windows beside its experiments (journal.WindowRef
// under "window"): a window is no trial at its users (its level settled from
// the one below, not from a start), so the replay answers none with it.
func TestReplayLeavesOutARampsWindows(t *testing.T) {
	var trial, window map[string]any
	require.NoError(t, json.Unmarshal(fuzzRecord(500), &trial))
	require.NoError(t, json.Unmarshal(fuzzRecord(600), &window))
	window["window"] = map[string]any{"ramp": "ramp-x", "from": 500, "index": 1}
	var buf bytes.Buffer
	for _, r := range []map[string]any{trial, window} {
		b, err := json.Marshal(r)
		require.NoError(t, err)
		buf.Write(append(b, '\n'))
	}
	run, err := Read(&buf, "journal")
	require.NoError(t, err)
	var rec wire.Record
	require.NoError(t, json.Unmarshal(fuzzRecord(600), &rec))
	at600, _, err := rec.Algorithms()
	require.NoError(t, err)
	_, err = run.RunExperiment(context.Background(), at600)
	require.ErrorIs(t, err, ErrNotRecorded)
	require.NoError(t, json.Unmarshal(fuzzRecord(500), &rec))
	at500, _, err := rec.Algorithms()
	require.NoError(t, err)
	o, err := run.RunExperiment(context.Background(), at500)
	require.NoError(t, err)
	assert.Equal(t, 72.7, o.Throughput)
}
