//go:build !race

package journal_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/journal"
	"github.com/softalloc/softalloc/internal/sim"
)

func rampDeployment() (algorithms.Deployment, algorithms.Allocation) {
	d := algorithms.Deployment{Topology: "1/4/1/4"}
	for _, t := range []struct {
		role  string
		n     int
		pools []string
	}{{"web", 1, []string{"threads"}}, {"app", 4, []string{"threads", "connections"}}, {"cluster", 1, nil}, {"db", 4, nil}} {
		d.Tiers = append(d.Tiers, algorithms.Tier{Name: t.role, Role: t.role, Replicas: t.n, Cores: 1, Pools: t.pools})
	}
	return d, algorithms.Allocation{"web": {Threads: 400}, "app": {Threads: 150, Connections: 60}}
}

func rampOptions() algorithms.Options {
	o := algorithms.DefaultOptions()
	o.Timing = algorithms.Timing{RampUp: sim.AdaptiveRampUp, Runtime: sim.DefaultTiming().Runtime, Precision: algorithms.DefaultPrecision, SLAs: []float64{2}}
	return o
}

// TestSlowAnInterruptedRampResumesFromItsLastWindow cancels a ramp after
// its fourth window and runs the campaign again on the same journal: the
// four windows are given from the journal, the ramp goes on from the level
// after them, and the answer is the uninterrupted ramp's within the noise.
func TestSlowAnInterruptedRampResumesFromItsLastWindow(t *testing.T) {
	d, a := rampDeployment()
	r := sim.Runner{Seed: 1}
	want, wantCamp, err := algorithms.FindCriticalRamp(context.Background(), r, d, a, rampOptions())
	require.NoError(t, err)
	require.Greater(t, len(wantCamp.Windows), 5, "the ramp must run past the interruption")

	path := filepath.Join(t.TempDir(), "journal.jsonl")
	id := journal.Identity{Runner: "sim", Settings: map[string]string{"seed": "1"}}
	j, err := journal.Open(path, id, journal.Options{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts, seen := rampOptions(), 0
	opts.OnTrial = func(algorithms.Trial) {
		if seen++; seen == 4 {
			cancel()
		}
	}
	_, _, err = algorithms.FindCriticalRamp(ctx, j.WrapRamper(r), d, a, opts)
	require.ErrorIs(t, err, context.Canceled)
	require.NoError(t, j.Close())

	j, err = journal.Open(path, id, journal.Options{})
	require.NoError(t, err)
	defer j.Close()
	got, camp, err := algorithms.FindCriticalRamp(context.Background(), j.WrapRamper(r), d, a, rampOptions())
	require.NoError(t, err)
	for i, w := range camp.Windows {
		assert.Equal(t, i < 4, w.Reused, "window %d at %d users", i, w.Users)
		assert.Equal(t, i, w.Index)
		if i < 4 {
			assert.Equal(t, wantCamp.Windows[i].Observation.Throughput, w.Observation.Throughput, "window %d is the one recorded", i)
		}
	}
	assert.Equal(t, 4, j.Reused)
	assert.Equal(t, len(camp.Windows)-4, j.Ran)
	assert.Equal(t, want.Server+"/"+want.Resource, got.Server+"/"+got.Resource)
	// The levels after the interruption are a new simulation from its
	// level (a live deployment cannot be put back either): the critical
	// resource's crossing of the threshold can move by the noise, a small step.
	assert.InDelta(t, want.SaturationWorkload, got.SaturationWorkload, float64(rampOptions().SmallStep))
}
