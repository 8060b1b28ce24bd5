package algorithms_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
)

// sharedDB is web -> app (replicas min..max, surge) -> db with a
// connection limit: the mdn-http-observatory case, max_connections 100
// divided over 5 app replicas.
func sharedDB(min, max int, surge algorithms.Surge) algorithms.Deployment {
	return algorithms.Deployment{Topology: "shared", Tiers: []algorithms.Tier{
		{Name: "web", Role: algorithms.RoleWeb, Replicas: 1, Cores: 1, Pools: []string{algorithms.PoolThreads}},
		{Name: "app", Role: algorithms.RoleApp, Replicas: min, Cores: 1, Pools: []string{algorithms.PoolThreads, algorithms.PoolConnections},
			Scaling: &algorithms.Scaling{Min: min, Max: max, Surge: surge}},
		{Name: "db", Role: algorithms.RoleDB, Replicas: 1, Cores: 1,
			ConnectionLimit: &algorithms.ConnectionLimit{Max: 100, Reserved: []algorithms.Reservation{{Name: "admin", Connections: 3}, {Name: "monitoring", Connections: 5}}}},
	}}
}

// The db is critical at minJobs 400 x 0.1 = 40; the app holds L = 100 x
// 0.6 = 60 jobs, so its connections total 60 (Formula 3, a front tier).
var sharedMeasurements = []algorithms.TierMeasurement{
	{Tier: "web", Throughput: 100, ResponseTime: 1.0},
	{Tier: "app", Throughput: 100, ResponseTime: 0.6},
	{Tier: "db", Throughput: 400, ResponseTime: 0.1},
}

var sharedReserve = algorithms.Allocation{"web": {Threads: 400}, "app": {Threads: 150, Connections: 10}}

func planOf(t *testing.T, d algorithms.Deployment, meas []algorithms.TierMeasurement, reserve algorithms.Allocation) *algorithms.ReplicaPlan {
	t.Helper()
	sz, err := algorithms.CalculateMinAllocation(d, "db", 0, meas)
	require.NoError(t, err)
	p := algorithms.PlanReplicas(d, sz, reserve, meas)
	require.NotNil(t, p)
	return p
}

func TestPlanReplicasSplitsASharedDatabasesBudget(t *testing.T) {
	p := planOf(t, sharedDB(1, 5, algorithms.Surge{}), sharedMeasurements, sharedReserve)
	assert.Equal(t, "app", p.Tier)
	assert.Equal(t, "app", p.Feeder)
	assert.Equal(t, "db", p.Database)
	assert.False(t, p.CapacityScales)
	require.Len(t, p.Counts, 5)
	// ceil(60/n) a replica; threads keep recommend's buffer of 150.
	for i, want := range []int{60, 30, 20, 15, 12} {
		rc := p.Counts[i]
		assert.Equal(t, i+1, rc.Replicas)
		require.NotNil(t, rc.ConnectionsPerReplica)
		assert.Equal(t, want, *rc.ConnectionsPerReplica, "replicas %d", i+1)
		assert.Equal(t, 150, rc.ThreadsPerReplica)
		assert.Equal(t, 60, rc.DatabaseConnections)
		assert.Equal(t, 68, rc.MaxConnections) // + admin 3 + monitoring 5
		require.NotNil(t, rc.Fits)
		assert.True(t, *rc.Fits)
		assert.Equal(t, want, rc.Allocation["app"].Connections)
	}
	// Every count fits while n x ceil(60/n) <= 100 - 8 = 92: at 47, each
	// replica needs 2 (94); at 46, 92.
	require.NotNil(t, p.SafeMaxReplicas)
	assert.Equal(t, 46, *p.SafeMaxReplicas)
	// One pool kept at every count: 1-replica's 60 fits one replica; 92/5 = 18 fits all five.
	require.NotNil(t, p.FixedPool)
	assert.Equal(t, algorithms.FixedPool{ConnectionsPerReplica: 60, MaxReplicas: 1, LargestFitting: 18}, *p.FixedPool)
	require.Len(t, p.Warnings, 1)
	assert.Contains(t, p.Warnings[0], "keep 18 a replica")
	assert.Contains(t, p.Warnings[0], "(5 + 0) x 60 = 300")
	require.NotEmpty(t, p.Notes)
	assert.Contains(t, p.Notes[0], "adding app replicas adds no capacity")
	assert.Contains(t, p.Notes[0], "minJobs 40.0")
	assert.Contains(t, p.Notes[0], "60 connections per replica at 1 replicas, 12 connections at 5")
	assert.Contains(t, p.Notes[0], "Formula 3's total stays 60 connections, which the per-replica pools, rounded up, make 60")
}

func TestPlanReplicasWithSurgeWarnsOfTheCountsThatDoNotFit(t *testing.T) {
	// Surge 25%: 1 replica -> 1 more pod (2 x 60 = 120 + 8 = 128 > 100),
	// 2 -> 1 (3 x 30 = 90 + 8 = 98), 5 -> 2 (7 x 12 = 84 + 8 = 92).
	p := planOf(t, sharedDB(1, 5, algorithms.Surge{Percent: 25}), sharedMeasurements, sharedReserve)
	wantPeak := []int{120, 90, 80, 75, 84}
	for i, rc := range p.Counts {
		require.NotNil(t, rc.PeakConnections)
		assert.Equal(t, wantPeak[i], *rc.PeakConnections, "replicas %d", rc.Replicas)
		assert.Equal(t, wantPeak[i]+8, rc.MaxConnections)
		assert.Equal(t, i > 0, *rc.Fits, "replicas %d", rc.Replicas)
	}
	require.Len(t, p.Warnings, 1)
	assert.Contains(t, p.Warnings[0], "does not fit at 1 replicas")
	assert.Contains(t, p.Warnings[0], "(1 + 1 surge) x 60 connections + 8 reserved = 128 against max_connections 100")
	// Past the range: n + ceil(n/4) pods of ceil(60/n); at 19, 24 pods
	// of 4 = 96 > 92, at 18, 23 x 4 = 92.
	require.NotNil(t, p.SafeMaxReplicas)
	assert.Equal(t, 18, *p.SafeMaxReplicas)
	assert.Equal(t, 92/7, p.FixedPool.LargestFitting)
}

func TestPlanReplicasAtTheMeasuredCountIsRecommends(t *testing.T) {
	d := sharedDB(3, 3, algorithms.Surge{Count: 1})
	sz, err := algorithms.CalculateMinAllocation(d, "db", 0, sharedMeasurements)
	require.NoError(t, err)
	alloc, recs := algorithms.RecommendAllocation(d, sz, sharedReserve)
	p := algorithms.PlanReplicas(d, sz, sharedReserve, sharedMeasurements)
	require.NotNil(t, p)
	require.Len(t, p.Counts, 1)
	assert.Equal(t, alloc, p.Counts[0].Allocation)
	assert.Equal(t, *recs[1].ConnectionsPerServer, *p.Counts[0].ConnectionsPerReplica)
	assert.Equal(t, (3+1)*20, *p.Counts[0].PeakConnections)
}

func TestPlanReplicasIsNilForAFixedDeployment(t *testing.T) {
	d := sharedDB(2, 2, algorithms.Surge{})
	d.Tiers[1].Scaling, d.Tiers[2].ConnectionLimit = nil, nil
	sz, err := algorithms.CalculateMinAllocation(d, "db", 0, sharedMeasurements)
	require.NoError(t, err)
	assert.Nil(t, algorithms.PlanReplicas(d, sz, sharedReserve, sharedMeasurements))
}

// n8n-io/terraform-aws-n8n PR #106: 460 pods x 20 connections against a
// PgBouncer's max_client_conn of 6,000.
func TestPlanReplicasBehindAPooler(t *testing.T) {
	d := algorithms.Deployment{Topology: "n8n", Tiers: []algorithms.Tier{
		{Name: "app", Role: algorithms.RoleApp, Replicas: 10, Cores: 1, Pools: []string{algorithms.PoolThreads, algorithms.PoolConnections},
			Scaling: &algorithms.Scaling{Min: 10, Max: 460}},
		{Name: "pgbouncer", Role: algorithms.RolePooler, Replicas: 1, Cores: 1, Pools: []string{algorithms.PoolConnections},
			Software: algorithms.SoftwarePgBouncer, MaxClientConn: 6000},
		{Name: "db", Role: algorithms.RoleDB, Replicas: 1, Cores: 1, Software: algorithms.SoftwarePostgreSQL,
			ConnectionLimit: &algorithms.ConnectionLimit{Max: 500, Reserved: []algorithms.Reservation{{Name: "admin", Connections: 3}}}},
	}}
	// db critical at 2000 x 0.02 = 40 jobs; the pooler, unmeasured, is
	// transparent (40); the app holds 1000 x 0.05 = 50, its connections
	// buffered at their configured 20 a replica.
	meas := []algorithms.TierMeasurement{{Tier: "app", Throughput: 1000, ResponseTime: 0.05}, {Tier: "db", Throughput: 2000, ResponseTime: 0.02}}
	reserve := algorithms.Allocation{"app": {Threads: 200, Connections: 20}}
	p := planOf(t, d, meas, reserve)
	assert.Equal(t, "app", p.Feeder)
	require.Len(t, p.Counts, 451)
	for _, rc := range p.Counts {
		require.Equal(t, 20, *rc.ConnectionsPerReplica)
		require.Equal(t, 40, rc.PoolerPoolSize)
		require.Equal(t, 40, rc.DatabaseConnections, "the database sees the pooler's pool, not the replicas'")
		require.Equal(t, 43, rc.MaxConnections)
		require.Equal(t, rc.Replicas*20, rc.PoolerClientConnections)
		require.Equal(t, rc.Replicas <= 300, *rc.Fits, "replicas %d", rc.Replicas)
	}
	require.NotNil(t, p.SafeMaxReplicas)
	assert.Equal(t, 300, *p.SafeMaxReplicas) // 300 x 20 = 6,000
	require.NotNil(t, p.Pooler)
	assert.Equal(t, algorithms.PoolerPlan{Tier: "pgbouncer", Replicas: 1, DefaultPoolSize: 40, ServerConnections: 40, MaxClientConn: 9200, Configured: 6000}, *p.Pooler)
	require.Len(t, p.Warnings, 1)
	assert.Contains(t, p.Warnings[0], "does not fit at 301..460 replicas")
	assert.Contains(t, p.Warnings[0], "(460 + 0 surge) x 20 = 9200 client connections per pgbouncer server against max_client_conn 6000")
	assert.Contains(t, p.Warnings[0], "safe maxReplicas 300")

	// With surge 25%, n + ceil(n/4) pods: 240 + 60 = 300 fit, 241 + 61 do not.
	d.Tiers[0].Scaling.Surge = algorithms.Surge{Percent: 25}
	p = planOf(t, d, meas, reserve)
	assert.Equal(t, 240, *p.SafeMaxReplicas)
	// Two pooler servers share the clients and double the database's share.
	d.Tiers[1].Replicas = 2
	p = planOf(t, d, meas, reserve)
	assert.Equal(t, 20, p.Counts[0].PoolerPoolSize)
	assert.Equal(t, 40, p.Counts[0].DatabaseConnections)
	assert.Equal(t, 480, *p.SafeMaxReplicas) // (480 + 120) x 20 / 2 = 6,000
}

func TestPlanReplicasWhenTheReplicatedTierIsCritical(t *testing.T) {
	d := sharedDB(2, 4, algorithms.Surge{})
	meas := []algorithms.TierMeasurement{{Tier: "web", Throughput: 100, ResponseTime: 1.0}, {Tier: "app", Throughput: 100, ResponseTime: 0.2}}
	sz, err := algorithms.CalculateMinAllocation(d, "app", 0, meas)
	require.NoError(t, err)
	p := algorithms.PlanReplicas(d, sz, sharedReserve, meas)
	require.NotNil(t, p)
	assert.True(t, p.CapacityScales)
	// minJobs 20 at 2 replicas: 10 a replica at every count; the totals grow.
	for i, rc := range p.Counts {
		assert.Equal(t, 10, rc.ThreadsPerReplica)
		assert.Equal(t, 10, *rc.ConnectionsPerReplica)
		assert.Equal(t, 10*(i+2), rc.DatabaseConnections)
	}
	assert.Contains(t, p.Notes[0], "app is the critical tier: each replica adds its capacity")
	// 10 a replica: 9 x 10 + 8 = 98 fits, 10 x 10 + 8 does not.
	assert.Equal(t, 9, *p.SafeMaxReplicas)
}

// recommend and advise carry the plan: on the analytic fake's 1/4/1/4,
// C-JDBC is critical behind the app tier, so app replicas 4..8 split its
// budget and add no capacity.
func TestRecommendAndAdviseAnswerForTheRange(t *testing.T) {
	d := deployment(t, "1/4/1/4")
	d.Tiers[1].Scaling = &algorithms.Scaling{Min: 4, Max: 8, Surge: algorithms.Surge{Count: 1}}
	d.Tiers[3].ConnectionLimit = &algorithms.ConnectionLimit{Max: 151, Reserved: []algorithms.Reservation{{Name: "admin", Connections: 1}}}
	x := rubbosFake()
	rec, err := algorithms.Recommend(context.Background(), x, d, allocation(t, "400-150-60"), shortOptions())
	require.NoError(t, err)
	require.Equal(t, "cluster", rec.Critical.Tier)
	sat := rec.Critical.SaturationWorkload
	adv, err := algorithms.Advise(d, fakeWindows(t, x, d, "400-150-60", true, sat/10, sat/5, 3*sat/10, 2*sat/5, sat/2, 3*sat/5), algorithms.AdviseOptions{})
	require.NoError(t, err)
	for name, r := range map[string]algorithms.Recommendation{"recommend": rec, "advise": adv.Recommendation} {
		p := r.Replicas
		require.NotNil(t, p, name)
		assert.False(t, p.CapacityScales, name)
		require.Len(t, p.Counts, 5, name)
		total := r.Sizing.Tiers[1].TotalConnections // Formula 3's, as sized at 4 replicas
		for _, rc := range p.Counts {
			// The same total split over the count, rounded up per replica.
			assert.Equal(t, (total+rc.Replicas-1)/rc.Replicas, *rc.ConnectionsPerReplica, "%s at %d", name, rc.Replicas)
			assert.Equal(t, (rc.Replicas+1)**rc.ConnectionsPerReplica, rc.DatabaseConnections, "%s at %d", name, rc.Replicas)
		}
		assert.Contains(t, p.Notes[0], "adding app replicas adds no capacity: the critical tier cluster sits behind them", name)
	}
	assert.Equal(t, rec.Tiers[1].ConnectionsPerServer, rec.Replicas.Counts[0].ConnectionsPerReplica)
}

// A range on a tier whose connections the limit does not count (the web
// tier's threads) leaves the safe maxReplicas unbounded.
func TestPlanReplicasOfATierThatOpensNoDatabaseConnection(t *testing.T) {
	d := sharedDB(1, 1, algorithms.Surge{})
	d.Tiers[1].Scaling = nil
	d.Tiers[0].Scaling = &algorithms.Scaling{Min: 1, Max: 4}
	p := planOf(t, d, sharedMeasurements, sharedReserve)
	assert.Equal(t, "web", p.Tier)
	assert.Equal(t, "app", p.Feeder)
	require.Len(t, p.Counts, 4)
	for _, rc := range p.Counts {
		assert.Equal(t, 60, rc.DatabaseConnections, "the app's 60 connections whatever the web tier's count")
		assert.True(t, *rc.Fits)
	}
	assert.Nil(t, p.SafeMaxReplicas)
	assert.Nil(t, p.FixedPool)
	assert.Contains(t, p.Notes[0], "adding web replicas adds no capacity: the critical tier db sits behind them")
}
