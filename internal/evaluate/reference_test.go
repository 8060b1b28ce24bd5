package evaluate

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The reference comparison finds each topology and seed's answers and the
// largest difference of any role's ratio, in points.
func TestCompareReference(t *testing.T) {
	q := func(role, alloc string, r map[string]float64) Quality {
		return Quality{Role: role, Allocation: alloc, Ratio: r}
	}
	ref := Report{WallTotal: 1000, Results: []TopologyResult{{Topology: "1/2/1/2", Seed: 1,
		Campaigns: []Campaign{{Allocation: "400-21-21"}},
		Compared: []Quality{q("recommended", "400-21-21", map[string]float64{"2": 0.990, "0.5": 1}),
			q("hikari", "400-150-5", map[string]float64{"2": 0.400})}}}}
	rep := Report{WallTotal: 250, Results: []TopologyResult{
		{Topology: "1/2/1/2", Seed: 1, Campaigns: []Campaign{{Allocation: "400-21-21"}},
			Compared: []Quality{q("recommended", "400-21-21", map[string]float64{"2": 0.993, "0.5": 0.999}),
				q(roleFixed, "400-21-21", map[string]float64{"2": 0.5}), // the reference has no such role
				q("hikari", "400-150-5", map[string]float64{"2": 0.410})}},
		{Topology: "1/4/1/4", Seed: 1, Campaigns: []Campaign{{Allocation: "400-150-9"}}}, // not in the reference
	}}
	got := compareReference(ref, rep)
	assert.Len(t, got.Rows, 1)
	r := got.Rows[0]
	assert.True(t, r.Same)
	assert.InDelta(t, 1.0, r.MaxDiff, 1e-9)
	assert.Equal(t, "hikari at 2 s", r.Where)
	assert.InDelta(t, 0.3, r.RecommendedDiff, 1e-9, "0.993 against 0.990 at 2 s")
	assert.InDelta(t, 0.1, r.RecommendedShortfall, 1e-9, "0.999 against 1 at 0.5 s")
	assert.InDelta(t, 1.0, got.MaxDiff, 1e-9)
	assert.InDelta(t, 0.3, got.MaxRecommendedDiff, 1e-9)
	assert.Equal(t, 1000.0, got.WallSeconds)
}
