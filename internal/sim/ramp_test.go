package sim

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
)

// rampOf runs a ramp of the given levels and returns its windows.
func rampOf(t *testing.T, r Runner, d algorithms.Deployment, a algorithms.Allocation, levels []int) []algorithms.RampWindow {
	t.Helper()
	var ws []algorithms.RampWindow
	rp := algorithms.Ramp{Deployment: d, Allocation: a, From: levels[0],
		Timing: algorithms.Timing{RampUp: 10 * time.Second, Runtime: 2 * time.Minute, Precision: 0.02, SLAs: []float64{2}}}
	err := r.RunRamp(context.Background(), rp, func(w algorithms.RampWindow) (algorithms.RampStep, error) {
		ws = append(ws, w)
		if len(ws) == len(levels) {
			return algorithms.RampStep{}, nil
		}
		return algorithms.RampStep{Users: levels[len(ws)]}, nil
	})
	require.NoError(t, err)
	return ws
}

func TestRampGrowsTheUsersInOneSimulation(t *testing.T) {
	d, a := topology(t, "1/2/1/2"), allocation(t, "400-150-60")
	levels := []int{500, 1000, 1500}
	ws := rampOf(t, Runner{Seed: 1}, d, a, levels)
	require.Len(t, ws, 3)
	for i, w := range ws {
		assert.Equal(t, i, w.Index)
		assert.Equal(t, levels[i], w.Users)
		require.True(t, w.Observation.HasIntervals(), "window %d", i)
		assert.True(t, w.Observation.Window.Precise, "window %d: %+v", i, w.Observation.Window)
		if i > 0 {
			assert.GreaterOrEqual(t, w.Start, ws[i-1].End, "a window starts after the one before ends: no reset, no overlap")
			// Throughput follows the users below saturation (think ~7 s).
			assert.Equal(t, algorithms.Above, w.Observation.ThroughputInterval().Versus(ws[i-1].Observation.ThroughputInterval()), "window %d", i)
		}
	}
	// Deterministic with the seed.
	again := rampOf(t, Runner{Seed: 1}, d, a, levels)
	for i := range ws {
		assert.Equal(t, ws[i].Observation.Throughput, again[i].Observation.Throughput)
		assert.Equal(t, ws[i].End, again[i].End)
	}
}
