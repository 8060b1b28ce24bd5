package evaluate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/topology"
)

func TestGrid(t *testing.T) {
	d, err := topology.ParseTopology("1/4/1/4")
	require.NoError(t, err)
	rec := algorithms.Allocation{"web": {Threads: 400}, "app": {Threads: 8, Connections: 8}}
	g := Grid(d, rec, []int{4, 8}, []int{4, 8, 16})
	var roles []string
	keys := map[string]bool{}
	for _, e := range g {
		roles = append(roles, e.Role)
		assert.False(t, keys[e.Allocation.Key()], "no allocation twice")
		keys[e.Allocation.Key()] = true
		assert.LessOrEqual(t, e.Allocation["app"].Connections, e.Allocation["app"].Threads, "never more connections than threads")
	}
	assert.Equal(t, []string{RoleRecommended, RolePractitioners, RoleTomcatDefaults, RoleHikari, RoleGrid, RoleGrid}, roles,
		"8-8 is the recommendation already; 4-4, 8-4 and 8-8 are the pairs, one of them the recommendation")
	assert.Equal(t, 3, g[3].Allocation["app"].Connections, "HikariCP: 2 x 1 DB core + 1")

	def := Grid(d, rec, nil, nil)
	assert.GreaterOrEqual(t, len(def), 50, "the default grid has at least 50 allocations")
	assert.Equal(t, []int{4, 6, 8, 10, 12, 16, 20, 50, 100, 150, 200}, Around(8, DefaultThreads))
	assert.Equal(t, []int{4500, 5000, 5500, 6000, 6500, 7000}, Workloads(5500))
}
