package gridnoise

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Two allocations of rounds {10, 12} and {20, 22}: each variance 2, pooled
// over 2 degrees of freedom, noise sqrt(2).
func TestPooledIsTheSampleVariancePooledByDegreesOfFreedom(t *testing.T) {
	assert.InDelta(t, 1.4142, Pooled([][]float64{{10, 12}, {20, 22}, {5}}), 1e-4)
	assert.Zero(t, Pooled([][]float64{{1}, {2}}), "no repeated round")
}

// A gap of 3 with noise 1: past 2 x sqrt(1/2 + 1/2) = 2 at two rounds each,
// not past 2 x sqrt(2) at one; no rounds resolve nothing.
func TestResolvedNeedsTwoStandardDeviationsOfTheDifference(t *testing.T) {
	assert.True(t, Resolved(10, 13, 2, 2, 1))
	assert.False(t, Resolved(10, 12, 2, 2, 1))
	assert.False(t, Resolved(10, 13, 1, 1, 1.1))
	assert.False(t, Resolved(10, 13, 0, 2, 1))
}
