package classes

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
)

func TestApplySetup(t *testing.T) {
	w := Seed000()
	c, err := apply(algorithms.ClassSetup{Policy: algorithms.PolicyRR, QuantumSeconds: 0.01, PerClassPools: true,
		PoolSizes: map[string]int{"heavy": 7}, Weights: map[string]float64{"light": 3}, Priorities: map[string]int{"heavy": 5}}, w)
	require.NoError(t, err)
	assert.Equal(t, policyRR, c.Server.Policy)
	assert.Equal(t, Duration(0.01), c.Server.Quantum)
	require.Len(t, c.Server.Pools, 3)
	assert.Equal(t, Pool{Name: "light", Size: 150, Backlog: 100}, c.Server.Pools[0])
	assert.Equal(t, Pool{Name: "heavy", Size: 7, Backlog: 100}, c.Server.Pools[2])
	assert.Equal(t, "heavy", c.Class("heavy").Pool)
	assert.Equal(t, 3.0, c.Class("light").Weight)
	assert.Equal(t, 5, c.Class("heavy").Priority)
	assert.Equal(t, "shared", w.Class("heavy").Pool, "the original is untouched")

	// PoolSize resizes the shared pool, or every per-class one.
	c, err = apply(algorithms.ClassSetup{PoolSize: 9}, w)
	require.NoError(t, err)
	assert.Equal(t, []Pool{{Name: "shared", Size: 9, Backlog: 100}}, c.Server.Pools)
	c, err = apply(algorithms.ClassSetup{PerClassPools: true, PoolSize: 9, PoolSizes: map[string]int{"light": 2}}, w)
	require.NoError(t, err)
	assert.Equal(t, []int{2, 9, 9}, []int{c.Server.Pools[0].Size, c.Server.Pools[1].Size, c.Server.Pools[2].Size})

	for setup, want := range map[*algorithms.ClassSetup]string{
		{Weights: map[string]float64{"nope": 1}}:                 `weight for "nope": no such class`,
		{Priorities: map[string]int{"nope": 1}}:                  `priority for "nope": no such class`,
		{PerClassPools: true, PoolSizes: map[string]int{"x": 1}}: `pool for "x": no such class`,
		{Policy: "fifo"}: `setup "fifo": server.policy: want ps, rr, priority or weighted, got "fifo"`,
	} {
		_, err := apply(*setup, w)
		assert.EqualError(t, err, want)
	}
}

// A trial is the simulation of the workload with the setup applied and only
// the trial's users: the same numbers as simulating that workload by hand.
func TestRunnerRunsTheTrialsWorkload(t *testing.T) {
	w := Seed000()
	w.Run.Duration = 20
	setup := algorithms.ClassSetup{Policy: algorithms.PolicyWeighted, Weights: map[string]float64{"light": 0.8, "heavy": 0.2}}
	o, err := Runner{Workload: w, Seed: 3}.RunClassTrial(context.Background(), algorithms.ClassTrial{
		Setup: setup, Users: map[string]int{"light": 30, "heavy": 20},
	})
	require.NoError(t, err)

	byHand := w.Clone()
	byHand.Server.Policy = policyWeighted
	byHand.Class("light").Weight, byHand.Class("heavy").Weight = 0.8, 0.2
	byHand.Class("heavy").Load.Users = 20
	byHand.Class("middle").Load = Load{}
	r := simulate(t, byHand, 3)
	require.Len(t, o.Classes, 3)
	assert.Equal(t, r.CPU, o.CPU)
	for i, c := range r.Classes {
		assert.Equal(t, algorithms.ClassMeasurement{Name: c.Name, Throughput: c.Throughput, Goodput: c.Goodput,
			ErrorsPerSecond: c.ErrorsPerSecond, Adequacy: c.Adequacy, ResponseTime: c.ResponseTime, P90: c.P90}, o.Classes[i])
	}
	assert.InDelta(t, 0.2, 1-o.Class("light").Throughput/(4/0.0039), 0.03, "weighted 0.8: light keeps 80%")
	assert.Equal(t, 30, w.Class("light").Load.Users, "the runner's workload is untouched")

	// No users map: the workload's own load.
	o, err = Runner{Workload: w, Seed: 3}.RunClassTrial(context.Background(), algorithms.ClassTrial{})
	require.NoError(t, err)
	asIs := simulate(t, w, 3)
	assert.Equal(t, asIs.Class("heavy").Throughput, o.Class("heavy").Throughput)
}

func TestRunnerRejectsUnknownClassesAndHonoursCancellation(t *testing.T) {
	r := Runner{Workload: Seed000(), Seed: 1}
	_, err := r.RunClassTrial(context.Background(), algorithms.ClassTrial{Users: map[string]int{"nope": 1}})
	assert.EqualError(t, err, `users for "nope": no such class`)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = r.RunClassTrial(ctx, algorithms.ClassTrial{Users: map[string]int{"light": 1}})
	assert.ErrorIs(t, err, context.Canceled)
}

func TestDescription(t *testing.T) {
	w, err := LoadWorkload("testdata/seed000-linux.yaml")
	require.NoError(t, err)
	assert.Equal(t, algorithms.ClassWorkload{Name: "seed000-linux", Cores: 4, Policy: algorithms.PolicyRR, QuantumSeconds: 0.1,
		SharedPool: 150, Classes: []algorithms.ServiceClass{
			{Name: "light", Adequacy: 0.9, LimitSeconds: 0.5, Users: 30, StartUsers: 30, EndUsers: 30},
			{Name: "heavy", LimitSeconds: 1, Users: 40, StartUsers: 40, EndUsers: 40},
		}}, w.Description())

	// Ramps and open arrivals: users at the start and at the end of the window.
	w, err = LoadWorkload("testdata/seed004-bounded.yaml")
	require.NoError(t, err)
	c := w.Description().Classes[0]
	assert.True(t, c.Ramp)
	assert.Equal(t, 275, c.StartUsers)
	assert.Equal(t, 275+11*60, c.EndUsers)
	w, err = LoadWorkload("testdata/seed001.yaml")
	require.NoError(t, err)
	gold := w.Description().Classes[0]
	assert.True(t, gold.Open)
	assert.Zero(t, gold.EndUsers)
	assert.False(t, gold.HasObjective())
}
