package algorithms_test

import (
	"context"
	"maps"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
)

// Issue 38: on virtual threads a pinned virtual thread that blocks holds
// its carrier; when the carriers are all held so, they are the limit while
// the CPU idles. The vthreads preset reads that share as the resource
// pinnedCarriers, and find-critical names it as it names the CPU.
func TestFindCriticalNamesPinnedCarriers(t *testing.T) {
	d := deployment(t, "1/2/1/2")
	x := rubbosFake()
	pinned := experimenterFunc(func(ctx context.Context, e algorithms.Experiment) (algorithms.Observation, error) {
		o, err := x.RunExperiment(ctx, e)
		if err != nil {
			return o, err
		}
		// The app tier's busy time is blocked carriers, not CPU.
		for i := range o.Servers {
			if s := &o.Servers[i]; s.Tier == "app" {
				s.Resources = maps.Clone(s.Resources)
				if s.Resources == nil {
					s.Resources = map[string]float64{}
				}
				s.Resources["pinnedCarriers"] = s.CPU
				s.CPU, s.CPUHalfWidth = s.CPU/3, s.CPUHalfWidth/3
			}
		}
		return o, nil
	})
	c, err := algorithms.FindCriticalResource(context.Background(), pinned, d, allocation(t, "400-150-60"), shortOptions())
	require.NoError(t, err)
	assert.Equal(t, "app", c.Tier)
	assert.Equal(t, "pinnedCarriers", c.Resource)
	assert.GreaterOrEqual(t, c.Utilization, 0.95)
}
