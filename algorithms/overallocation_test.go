package algorithms_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
)

// A php-fpm pool that fills because the bottleneck is elsewhere is doubled;
// the children it adds take memory and serve nothing, until the tier's
// memory is exhausted: find-critical names memory, and says over-allocation
// exhausted it, from its own trials.
func TestFindCriticalNamesMemoryExhaustedByOverAllocation(t *testing.T) {
	d := deployment(t, "1/2/1/2")
	x := rubbosFake()
	x.hidden = 0.004 // the pool fills, throughput is bound elsewhere
	x.memTier, x.memBase, x.memPerUnit = "app", 0.3, 0.003
	c, err := algorithms.FindCriticalResource(context.Background(), x, d, allocation(t, "400-150-60"), shortOptions())
	require.NoError(t, err)
	assert.Equal(t, "app", c.Tier)
	assert.Equal(t, "memory", c.Resource)
	assert.GreaterOrEqual(t, c.Utilization, 0.95)
	assert.True(t, c.OverAllocated)
	require.NotEmpty(t, c.Warnings)
	assert.Regexp(t, `app-1's memory was exhausted by over-allocation: at [0-9]+ users the allocation 400-150-60 read 0\.93 of it at [0-9.]+ pages/s, 800-300-120 1\.00`,
		c.Warnings[len(c.Warnings)-1])

	// Memory that fills while the larger pool serves more was needed: named,
	// not called over-allocation.
	x = rubbosFake()
	x.memTier, x.memBase, x.memPerUnit = "app", 0.3, 0.003
	c, err = algorithms.FindCriticalResource(context.Background(), x, d, allocation(t, "400-2-2"), shortOptions())
	require.NoError(t, err)
	assert.False(t, c.OverAllocated)
	for _, w := range c.Warnings {
		assert.NotContains(t, w, "over-allocation")
	}
}
