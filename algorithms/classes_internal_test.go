package algorithms

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mostThroughput keeps the largest feasible pool unless a smaller one
// serves the best-effort classes over 1% more.
func TestMostThroughputPicksThePeak(t *testing.T) {
	served := func(f func(p int) float64) func(context.Context, int) (ClassObservation, bool, error) {
		return func(_ context.Context, p int) (ClassObservation, bool, error) {
			return ClassObservation{Classes: []ClassMeasurement{{Name: "heavy", Throughput: f(p)}}}, p != 4, nil
		}
	}
	ctx := context.Background()
	peaked := served(func(p int) float64 { return 10 - math.Abs(float64(p)-6) })
	top, _, _ := peaked(ctx, 20)
	p, r, err := mostThroughput(ctx, 1, []string{"heavy"}, 20, top, peaked)
	require.NoError(t, err)
	assert.Equal(t, 6, p)
	assert.Equal(t, 10.0, r.Classes[0].Throughput)

	rising := served(func(p int) float64 { return float64(p) })
	top, _, _ = rising(ctx, 20)
	p, _, err = mostThroughput(ctx, 1, []string{"heavy"}, 20, top, rising)
	require.NoError(t, err)
	assert.Equal(t, 20, p)

	// An infeasible size is never chosen, however much it serves.
	spike := served(func(p int) float64 { return map[int]float64{4: 100}[p] + 1 })
	top, _, _ = spike(ctx, 20)
	p, _, err = mostThroughput(ctx, 1, []string{"heavy"}, 20, top, spike)
	require.NoError(t, err)
	assert.Equal(t, 20, p)
}
