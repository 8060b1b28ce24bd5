package algorithms

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 40, item 8: validate's named baselines were Tomcat's and
// HikariCP's on a PHP stack. A children stack is compared with the rules
// its operators use, and each allocation's database gets the connections
// its children need.
func TestChildrenGridHasThePHPOperatorsRules(t *testing.T) {
	d := phpDeployment()
	d.Tiers[2].Pools = []string{PoolConnections}
	rec := Allocation{"web": {Threads: 60}, "php": {Threads: 12}, "db": {Connections: 46}}
	g, err := ChildrenGrid(d, rec, ChildrenGridOptions{Children: []int{6, 12}, MemoryRule: 25, PerChild: 1.5})
	require.NoError(t, err)
	named := map[string]Allocation{}
	for _, e := range g {
		for _, r := range append([]string{e.Role}, e.Also...) {
			if r != RoleGrid {
				named[r] = e.Allocation
			}
		}
		assert.NotEqual(t, RoleTomcatDefaults, e.Role)
		assert.NotEqual(t, RoleHikari, e.Role)
		assert.NotEqual(t, RolePractitioners, e.Role)
	}
	db := func(children int) int { return NewMaxConnections("php", children*2, 1.5).PerServer } // two php servers
	assert.Equal(t, rec, named[RoleRecommended])
	assert.Equal(t, Allocation{"web": {Threads: 150}, "php": {Threads: 5}, "db": {Connections: 151}}, named[RoleDebianDefaults])
	assert.Equal(t, Allocation{"web": {Threads: 150}, "php": {Threads: 12}, "db": {Connections: 151}}, named[RoleServerDefaults])
	assert.Equal(t, Allocation{"web": {Threads: 60}, "php": {Threads: 25}, "db": {Connections: db(25)}}, named[RoleMemoryRule])
	assert.Equal(t, Allocation{"web": {Threads: 60}, "php": {Threads: 8}, "db": {Connections: db(8)}}, named[RoleFourPerCore])
	assert.Equal(t, Allocation{"web": {Threads: 60}, "php": {Threads: 200}, "db": {Connections: db(200)}}, named[RoleOverAllocation])
	var grid []int
	for _, e := range g {
		if e.Role == RoleGrid {
			grid = append(grid, e.Allocation["php"].Threads)
			assert.Equal(t, db(e.Allocation["php"].Threads), e.Allocation["db"].Connections)
			assert.Equal(t, 60, e.Allocation["web"].Threads)
		}
	}
	assert.Equal(t, []int{6}, grid, "12 is the recommendation already")

	// No memory rule given: none compared. Defaults: children around the recommendation.
	g, err = ChildrenGrid(d, rec, ChildrenGridOptions{})
	require.NoError(t, err)
	for _, e := range g {
		assert.NotEqual(t, RoleMemoryRule, e.Role)
		assert.NotContains(t, e.Also, RoleMemoryRule)
	}
	assert.Greater(t, len(g), 8)

	// A database without a connections pool: the allocations hold none.
	d.Tiers[2].Pools = nil
	g, err = ChildrenGrid(d, Allocation{"web": {Threads: 60}, "php": {Threads: 12}}, ChildrenGridOptions{Children: []int{6}})
	require.NoError(t, err)
	for _, e := range g {
		_, ok := e.Allocation["db"]
		assert.False(t, ok, e.Role)
	}

	// Not a children deployment.
	_, err = ChildrenGrid(Deployment{Tiers: []Tier{{Name: "app", Role: RoleApp, Replicas: 1, Pools: []string{PoolThreads}}}}, rec, ChildrenGridOptions{})
	assert.ErrorContains(t, err, "no tier with children")
}

func TestDescribeAllocation(t *testing.T) {
	d := phpDeployment()
	d.Tiers[2].Pools = []string{PoolConnections}
	assert.Equal(t, "web threads 60, php php-fpm children 12, db connections 46",
		DescribeAllocation(d, Allocation{"db": {Connections: 46}, "php": {Threads: 12}, "web": {Threads: 60}}))
	assert.Equal(t, "web threads 60, x:threads=1,connections=0", DescribeAllocation(d, Allocation{"web": {Threads: 60}, "x": {Threads: 1}}))
}
