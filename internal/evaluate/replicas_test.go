package evaluate

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/topology"
)

// A count of a range is a deployment of that count alone: the notation at
// the count (the journal's key, and recommend --topology's deployment), the
// range narrowed to it with the surge kept, the caller's deployment as it was.
func TestAtReplicasIsTheCountAlone(t *testing.T) {
	d, err := topology.ParseTopology("1/2/1/2")
	require.NoError(t, err)
	d.Tiers[1].Scaling = &algorithms.Scaling{Min: 2, Max: 8, Surge: algorithms.Surge{Percent: 25}}
	require.Equal(t, 1, RangedTier(d))

	d5 := AtReplicas(d, 1, 5)
	assert.Equal(t, "1/5/1/2", d5.Topology)
	assert.Equal(t, 5, d5.Tiers[1].Replicas)
	assert.Equal(t, algorithms.Scaling{Min: 5, Max: 5, Surge: algorithms.Surge{Percent: 25}}, *d5.Tiers[1].Scaling)
	assert.Equal(t, -1, RangedTier(d5))
	assert.Equal(t, "1/2/1/2", d.Topology)
	assert.Equal(t, 2, d.Tiers[1].Replicas)
	assert.Equal(t, 8, d.Tiers[1].Scaling.Max, "the range itself is untouched")

	// A deployment the notation cannot name keeps its name: the replicas
	// in its tiers tell the counts apart.
	d.Topology = "shop"
	d.Tiers[0].Cores = 2
	assert.Equal(t, "shop", AtReplicas(d, 1, 5).Topology)
}

func TestPerCountWantsARange(t *testing.T) {
	d, err := topology.ParseTopology("1/2/1/2")
	require.NoError(t, err)
	_, err = PerCount(context.Background(), nil, d, nil, algorithms.DefaultOptions(), nil)
	assert.EqualError(t, err, `per-count campaign of "1/2/1/2": no tier's replicas are a range (replicas: 2..8)`)
}

// The safe maxReplicas of a campaign per count: every count from the
// lowest fits up to it, each with its own pools; past the range's top, the
// top count's own plan says.
func TestMeasuredSafeMax(t *testing.T) {
	yes, no := true, false
	ptr := func(n int) *int { return &n }
	counts := func(top *int, fits ...*bool) []CountCampaign {
		var out []CountCampaign
		for i, f := range fits {
			out = append(out, CountCampaign{Replicas: 2 + i, Row: algorithms.ReplicaCount{Replicas: 2 + i, Fits: f}})
		}
		out[len(out)-1].SafeMaxReplicas = top
		return out
	}
	assert.Nil(t, MeasuredSafeMax(counts(nil, nil, nil, nil)), "no limit")
	assert.Equal(t, 11, *MeasuredSafeMax(counts(ptr(11), &yes, &yes, &yes)), "past the range: the top count's plan")
	assert.Nil(t, MeasuredSafeMax(counts(nil, &yes, &yes, &yes)), "nothing bounds the top count's plan")
	assert.Equal(t, 3, *MeasuredSafeMax(counts(ptr(9), &yes, &yes, &no, &yes)), "the first count that does not fit ends it")
	assert.Equal(t, 4, *MeasuredSafeMax(counts(ptr(4), &no, &yes, &yes)), "a surge at the bottom: warned of, the fitting counts go on")
	assert.Equal(t, 0, *MeasuredSafeMax(counts(ptr(0), &no, &no)), "none fits")
}
