package cli

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/topology"
)

// Issue 40, item 8: validate compared a PHP stack with Tomcat's defaults
// and HikariCP's rule. A children stack gets its operators' rules, and
// the connections per child recommend measured size each database.
func TestValidateComparesAPHPStackWithItsOperatorsRules(t *testing.T) {
	df, err := topology.LoadDeployment("../../testdata/deployments/php.yaml")
	require.NoError(t, err)
	d := df.Deployment
	rec := algorithms.Allocation{"web": {Threads: 80}, "php": {Threads: 16}, "db": {Connections: 34}}
	rule, err := memoryRuleChildren(1024, 42)
	require.NoError(t, err)
	assert.Equal(t, 24, rule)
	grid, err := validateGrid(d, rec, nil, nil, algorithms.ChildrenGridOptions{MemoryRule: rule},
		[]algorithms.TierMeasurement{{Tier: "php", Throughput: 1, ResponseTime: 1, ConnectionsPerChild: 1.5}})
	require.NoError(t, err)
	roles := map[string]algorithms.Allocation{}
	for _, e := range grid {
		for _, r := range append([]string{e.Role}, e.Also...) {
			roles[r] = e.Allocation
		}
	}
	for _, r := range []string{algorithms.RoleRecommended, algorithms.RoleDebianDefaults, algorithms.RoleServerDefaults,
		algorithms.RoleMemoryRule, algorithms.RoleFourPerCore, algorithms.RoleOverAllocation, algorithms.RoleGrid} {
		assert.Contains(t, roles, r)
	}
	for _, r := range []string{algorithms.RoleTomcatDefaults, algorithms.RoleHikari, algorithms.RolePractitioners} {
		assert.NotContains(t, roles, r)
	}
	assert.Equal(t, 24, roles[algorithms.RoleMemoryRule]["php"].Threads)
	assert.Equal(t, 200, roles[algorithms.RoleOverAllocation]["php"].Threads)
	// 200 children x 1.5 measured + the reserve, not 10-12.
	assert.Equal(t, 300+algorithms.ConnectionReserve, roles[algorithms.RoleOverAllocation]["db"].Connections)
	assert.Equal(t, "web threads 80, php php-fpm children 16, db connections 34", algorithms.DescribeAllocation(d, rec))

	// The other stacks keep their grid.
	d13, err := topology.ParseTopology("1/2/1/2")
	require.NoError(t, err)
	a, err := topology.ParseAllocation("400-15-15")
	require.NoError(t, err)
	g, err := validateGrid(d13, a, []int{15}, []int{15}, algorithms.ChildrenGridOptions{}, nil)
	require.NoError(t, err)
	assert.Equal(t, algorithms.Grid(d13, a, []int{15}, []int{15}), g)
}

func TestValidateChildrenFlags(t *testing.T) {
	df, err := topology.LoadDeployment("../../testdata/deployments/php.yaml")
	require.NoError(t, err)
	d13, err := topology.ParseTopology("1/2/1")
	require.NoError(t, err)
	var ue usageError
	err = childrenFlags(true, df.Deployment, &validateOptions{threads: "5,10"})
	require.True(t, errors.As(err, &ue), "%v", err)
	assert.EqualError(t, err, `--grid-threads: deployment "php" sizes a tier of children (each holds its own connections); give --grid-children`)
	err = childrenFlags(false, d13, &validateOptions{children: "5"})
	require.True(t, errors.As(err, &ue))
	assert.Contains(t, err.Error(), `deployment "1/2/1" has no tier with children`)
	assert.NoError(t, childrenFlags(true, df.Deployment, &validateOptions{children: "5"}))

	for _, c := range []struct {
		limit, rss float64
		want       string
	}{{1024, 0, "want both"}, {-1, 40, "want both"}, {10, 40, "= 0 children: want 1 to 100000"}} {
		_, err := memoryRuleChildren(c.limit, c.rss)
		require.True(t, errors.As(err, &ue), "%v", err)
		assert.Contains(t, err.Error(), c.want)
	}
}
