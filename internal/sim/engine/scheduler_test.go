package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWeightedShareWaterFills(t *testing.T) {
	c := NewWeighted(4, 1, []float64{0.9, 1, 0.1})
	// Class 0 has 2 jobs (capped at 2 cores), class 2 has 10: it takes the rest.
	for i := range 2 {
		c.Add(0, int32(i), 0, 1)
	}
	for i := range 10 {
		c.Add(0, int32(10+i), 2, 1)
	}
	assert.InDelta(t, 2, c.groups[0].cores, 1e-12)
	assert.InDelta(t, 2, c.groups[2].cores, 1e-12)
	// With 10 jobs of class 0 the split is 0.9/0.1 of 4 cores.
	for i := range 8 {
		c.Add(0, int32(20+i), 0, 1)
	}
	assert.InDelta(t, 3.6, c.groups[0].cores, 1e-12)
	assert.InDelta(t, 0.4, c.groups[2].cores, 1e-12)
}

// Priority levels take the cores highest first, whatever the class order.
func TestPriorityTakesCoresInOrder(t *testing.T) {
	c := NewPriority(2, 1, []int{1, 5, 1})
	c.Add(0, 0, 0, 1)   // low
	c.Add(0, 1, 2, 1)   // low
	c.Add(0, 2, 1, 0.5) // high: one core to itself
	assert.InDelta(t, 0.5, c.Next(), 1e-12, "the high job runs at full speed")
	require.Equal(t, int32(2), c.Pop(c.Next()))
	// Then the two low jobs share two cores: 0.25 done each, 0.75 left.
	assert.InDelta(t, 1.25, c.Next(), 1e-12)
	assert.InDelta(t, 2, c.Busy(1), 1e-12, "both cores busy throughout the first second")
}

// Round robin gives each job a quantum at a time, in FIFO order.
func TestRoundRobinSlices(t *testing.T) {
	c := NewRoundRobin(1, 0.1, 1)
	c.Add(0, 7, 0, 0.25)
	c.Add(0, 3, 0, 0.05)
	assert.InDelta(t, 0.1, c.Next(), 1e-12)
	assert.Equal(t, int32(-1), c.Pop(c.Next()), "7's quantum ends unfinished")
	assert.InDelta(t, 0.15, c.Next(), 1e-12, "3 runs next and finishes in its quantum")
	assert.Equal(t, int32(3), c.Pop(c.Next()))
	assert.Equal(t, int32(-1), c.Pop(c.Next()))
	assert.InDelta(t, 0.3, c.Next(), 1e-12)
	assert.Equal(t, int32(7), c.Pop(c.Next()))
	assert.Equal(t, inf, c.Next())
	assert.InDelta(t, 0.3, c.Busy(1), 1e-12)
}
