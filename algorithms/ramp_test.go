package algorithms_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
)

// fakeRamp runs a ramp on an Experimenter: each level one experiment, as a
// runner without a ramp of its own would stand in for one.
type fakeRamp struct {
	x      algorithms.Experimenter
	ramps  int
	levels []int
}

func (f *fakeRamp) RunRamp(ctx context.Context, r algorithms.Ramp, next func(algorithms.RampWindow) (algorithms.RampStep, error)) error {
	f.ramps++
	users := r.From
	for i := 0; ; i++ {
		o, err := f.x.RunExperiment(ctx, algorithms.Experiment{Deployment: r.Deployment, Allocation: r.Allocation, Workload: algorithms.Workload{Users: users}, Timing: r.Timing})
		if err != nil {
			return err
		}
		f.levels = append(f.levels, users)
		step, err := next(algorithms.RampWindow{Index: i, Users: users, Elapsed: 30, Observation: o})
		if err != nil || step.Users == 0 {
			return err
		}
		users = step.Users
	}
}

func rampOptions() algorithms.Options {
	o := shortOptions()
	o.Timing.Precision = 0.02
	return o
}

func TestFindCriticalRampReadsTheCriticalResourceFromItsWindows(t *testing.T) {
	for _, tc := range []struct{ topology, tier string }{{"1/2/1/2", "app"}, {"1/4/1/4", "cluster"}} {
		t.Run(tc.topology, func(t *testing.T) {
			d := deployment(t, tc.topology)
			opts := rampOptions()
			stair, err := algorithms.FindCriticalResource(context.Background(), rubbosFake(), d, allocation(t, "400-150-60"), opts)
			require.NoError(t, err)
			rp := &fakeRamp{x: rubbosFake()}
			c, camp, err := algorithms.FindCriticalRamp(context.Background(), rp, d, allocation(t, "400-150-60"), opts)
			require.NoError(t, err)
			assert.Equal(t, tc.tier, c.Tier)
			assert.Equal(t, stair.Tier+"/"+stair.Resource, c.Tier+"/"+c.Resource)
			assert.Equal(t, 1, rp.ramps)
			// Small steps after the warm start's jump: the saturation
			// workload within a step of the staircase's, at most.
			assert.InDelta(t, stair.SaturationWorkload, c.SaturationWorkload, float64(opts.Step))
			require.Len(t, camp.Answer, 2)
			below, at := camp.Windows[camp.Answer[0]], camp.Windows[camp.Answer[1]]
			assert.Equal(t, c.SaturationWorkload, at.Users)
			assert.Equal(t, opts.SmallStep, at.Users-below.Users, "the answer rests on the last window below saturation and the first at it")
			assert.Len(t, c.Trials, len(camp.Windows))
			assert.Equal(t, 30*float64(len(camp.Windows)), camp.Seconds)
		})
	}
}

func TestFindCriticalRampRefusesFixedTrials(t *testing.T) {
	_, _, err := algorithms.FindCriticalRamp(context.Background(), &fakeRamp{x: rubbosFake()}, deployment(t, "1/2/1/2"), allocation(t, "400-150-60"), shortOptions())
	require.ErrorContains(t, err, "want adaptive timing")
}

// A scarce pool is doubled alone, and the ramp goes on from the workload
// where it filled; the answer is the generous start's.
func TestRampDoublesOnlyTheFullPool(t *testing.T) {
	d := deployment(t, "1/2/1/2")
	rp := &fakeRamp{x: rubbosFake()}
	c, camp, err := algorithms.FindCriticalRamp(context.Background(), rp, d, allocation(t, "400-2-2"), rampOptions())
	require.NoError(t, err)
	assert.Equal(t, "app", c.Tier)
	assert.Equal(t, 400, c.Reserve["web"].Threads, "the web threads were never full")
	assert.Greater(t, c.Reserve["app"].Threads, 2)
	assert.Greater(t, camp.Ramps, 1)
	for i := 1; i < len(camp.Windows); i++ {
		if camp.Windows[i].Allocation != camp.Windows[i-1].Allocation {
			assert.LessOrEqual(t, camp.Windows[i].Users, camp.Windows[i-1].Users, "a new ramp goes on from where the pool filled, not from the start")
		}
	}
	generous, _, err := algorithms.FindCriticalRamp(context.Background(), &fakeRamp{x: rubbosFake()}, d, allocation(t, "400-150-60"), rampOptions())
	require.NoError(t, err)
	assert.Equal(t, generous.Tier+"/"+generous.Resource, c.Tier+"/"+c.Resource)
}
