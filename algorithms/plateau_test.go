package algorithms_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
)

// A step near the knee of a closed system can read no rise within the
// noise while the critical CPU is still climbing towards its threshold
// (issue 36: WordPress at 15-17 users, its php-fpm tier's CPU at
// 0.87-0.94 when one-user steps stopped rising). The plateau is confirmed
// well past it before find-critical says no hardware saturated.
func TestFindCriticalConfirmsAPlateauBelowTheThreshold(t *testing.T) {
	d := deployment(t, "1/2/1/2")
	start := allocation(t, "400-150-60")
	opts := shortOptions()
	clean, err := algorithms.FindCriticalResource(context.Background(), rubbosFake(), d, start, opts)
	require.NoError(t, err)

	// The step below saturation reads the step before's throughput, a
	// little less: a flat step, with the busiest CPU under 0.95.
	dipAt := clean.SaturationWorkload - opts.Step
	x := rubbosFake()
	var beforeDip float64
	var probed []int
	dipped := experimenterFunc(func(ctx context.Context, e algorithms.Experiment) (algorithms.Observation, error) {
		o, err := x.RunExperiment(ctx, e)
		if err != nil {
			return o, err
		}
		switch u := e.Workload.Users; {
		case u == dipAt-opts.Step:
			beforeDip = o.Throughput
		case u == dipAt:
			require.Positive(t, beforeDip)
			o.Throughput = 0.99 * beforeDip
		case u > clean.SaturationWorkload:
			probed = append(probed, u)
		}
		return o, nil
	})
	c, err := algorithms.FindCriticalResource(context.Background(), dipped, d, start, opts)
	require.NoError(t, err, "a flat step below the threshold is confirmed past it before giving up")
	assert.Equal(t, clean.Tier, c.Tier)
	assert.Equal(t, clean.Resource, c.Resource)
	assert.Equal(t, clean.SaturationWorkload, c.SaturationWorkload, "the first saturating step, walked back from the probe")
	require.NotEmpty(t, probed)
	assert.GreaterOrEqual(t, probed[0], dipAt+dipAt/4, "the probe is well past the flat step")
	assert.Contains(t, c.Warnings[0], "did not rise")

	// The paper's scan ends at the flat step, as it did.
	paper := opts
	paper.Mode = algorithms.ModePaper
	_, err = algorithms.FindCriticalResource(context.Background(), dipped, d, start, paper)
	require.ErrorIs(t, err, algorithms.ErrNoCriticalResource)
}
