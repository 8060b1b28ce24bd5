package algorithms_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
)

// A peak read on fixed trials whose small step raises throughput by less
// than the trials' noise is a peak of the noise as much as of the curve:
// on warm JVMs (issue 38) recommend's 2-user steps near 56 users (3.6% a
// step against 5.6% of noise over about 640 pages a trial) stopped at 107
// pages/s, where 68 users had served 118.5, and gave a limit of 2 permits.
// The reading stands, with a warning that says so and what to run instead.
func TestAPeakReadOnStepsFinerThanTheNoiseIsWarnedOf(t *testing.T) {
	d := deployment(t, "1/2/1/2")
	ctx := context.Background()
	opts := shortOptions()
	// About 7,000 pages a trial near the peak: 1.7% of noise between two.
	opts.Timing = algorithms.Timing{Runtime: 10 * time.Second}
	x := batching{rubbosFake(), "app"}
	c, err := algorithms.FindCriticalResource(ctx, x, d, allocation(t, "400-150-60"), opts)
	require.NoError(t, err)

	// Steps of 100 users near 5,300: 1.9% a step, above the noise.
	coarse, err := algorithms.InferMinConcurrentJobs(ctx, x, d, c, opts)
	require.NoError(t, err)
	require.Equal(t, "throughput-peak", coarse.Reading)
	assert.NotContains(t, strings.Join(coarse.Warnings, "\n"), "finer than the trials' noise")

	// Steps of 50: 0.9% a step, within it.
	opts.SmallStep = 50
	fine, err := algorithms.InferMinConcurrentJobs(ctx, x, d, c, opts)
	require.NoError(t, err)
	require.Equal(t, "throughput-peak", fine.Reading)
	warnings := strings.Join(fine.Warnings, "\n")
	assert.Contains(t, warnings, "steps of 50 users")
	assert.Contains(t, warnings, "finer than the trials' noise")
	assert.Contains(t, warnings, "--small-step")
	assert.Contains(t, warnings, "--runtime")
}
