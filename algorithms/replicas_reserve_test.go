package algorithms_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
)

// PgBouncer's reserve_pool_size adds server connections to a pool whose
// clients have waited reserve_pool_timeout: the database must admit them
// too. The n8n case of TestPlanReplicasBehindAPooler, default_pool_size 40
// and reserve_pool_size 10: each pooler server opens up to 50.
func TestPlanReplicasCountsThePoolersReservePool(t *testing.T) {
	pooled := func(poolers, maxConns int) algorithms.Deployment {
		return algorithms.Deployment{Topology: "n8n", Tiers: []algorithms.Tier{
			{Name: "app", Role: algorithms.RoleApp, Replicas: 10, Cores: 1, Pools: []string{algorithms.PoolThreads, algorithms.PoolConnections},
				Scaling: &algorithms.Scaling{Min: 10, Max: 460}},
			{Name: "pgbouncer", Role: algorithms.RolePooler, Replicas: poolers, Cores: 1, Pools: []string{algorithms.PoolConnections},
				Software: algorithms.SoftwarePgBouncer, MaxClientConn: 6000, ReservePoolSize: 10},
			{Name: "db", Role: algorithms.RoleDB, Replicas: 1, Cores: 1, Software: algorithms.SoftwarePostgreSQL,
				ConnectionLimit: &algorithms.ConnectionLimit{Max: maxConns, Reserved: []algorithms.Reservation{{Name: "admin", Connections: 3}}}},
		}}
	}
	meas := []algorithms.TierMeasurement{{Tier: "app", Throughput: 1000, ResponseTime: 0.05}, {Tier: "db", Throughput: 2000, ResponseTime: 0.02}}
	reserve := algorithms.Allocation{"app": {Threads: 200, Connections: 20}}

	p := planOf(t, pooled(1, 500), meas, reserve)
	for _, rc := range p.Counts {
		require.Equal(t, 40, rc.PoolerPoolSize)
		require.Equal(t, 10, rc.PoolerReservePoolSize)
		require.Equal(t, 50, rc.DatabaseConnections, "default_pool_size 40 + reserve_pool_size 10")
		require.Equal(t, 53, rc.MaxConnections, "and 3 reserved")
	}
	assert.Equal(t, 300, *p.SafeMaxReplicas, "max_client_conn bounds it, as without a reserve")
	require.NotNil(t, p.Pooler)
	assert.Equal(t, algorithms.PoolerPlan{Tier: "pgbouncer", Replicas: 1, DefaultPoolSize: 40, ReservePoolSize: 10, ServerConnections: 50,
		MaxClientConn: 9200, Configured: 6000}, *p.Pooler)
	assert.Contains(t, p.Notes, "with the pooler pgbouncer the database sees its server connections, 1 x (default_pool_size 40 + reserve_pool_size 10) = 50, not the app replicas' 9200 at 460 replicas with surge")

	// max_connections 52 admits the pool (43) but not its reserve (53):
	// no count fits, whatever the app's replicas.
	p = planOf(t, pooled(1, 52), meas, reserve)
	require.NotNil(t, p.SafeMaxReplicas)
	assert.Equal(t, 0, *p.SafeMaxReplicas)
	require.NotEmpty(t, p.Warnings)
	assert.Contains(t, p.Warnings[0], "50 connections + 3 reserved = 53 against max_connections 52")

	// Two pooler servers: each its pool of 20 and its reserve of 10.
	p = planOf(t, pooled(2, 500), meas, reserve)
	assert.Equal(t, 20, p.Counts[0].PoolerPoolSize)
	assert.Equal(t, 60, p.Counts[0].DatabaseConnections, "2 x (20 + 10)")
	assert.Equal(t, 60, p.Pooler.ServerConnections)
}
