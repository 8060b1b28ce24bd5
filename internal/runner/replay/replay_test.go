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
