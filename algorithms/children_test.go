package algorithms

import (
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The PHP stack of issue 36: Apache -> php-fpm (children, each opening its
// own DB connections) -> MariaDB.
func phpDeployment() Deployment {
	return Deployment{Topology: "php", Tiers: []Tier{
		{Name: "web", Role: RoleWeb, Replicas: 1, Cores: 2, Pools: []string{PoolThreads}, Software: SoftwareApache},
		{Name: "php", Role: RoleApp, Replicas: 2, Cores: 2, Pools: []string{PoolThreads}, Software: SoftwarePHPFPM, Children: true},
		{Name: "db", Role: RoleDB, Replicas: 1, Cores: 2, Software: SoftwareMariaDB},
	}}
}

// The connections a child holds are read from a trial, not assumed: the
// application tried in issue 36 had 40.7 connections open for 27.2 busy
// children.
func TestConnectionsPerChildIsMeasured(t *testing.T) {
	d := phpDeployment()
	o := Observation{Servers: []ServerObservation{
		{Name: "web-1", Tier: "web", Pools: []PoolObservation{{Name: PoolThreads, Size: 100, Busy: 30}}},
		{Name: "php-1", Tier: "php", Pools: []PoolObservation{{Name: PoolThreads, Size: 20, Busy: 13.6}}},
		{Name: "php-2", Tier: "php", Pools: []PoolObservation{{Name: PoolThreads, Size: 20, Busy: 13.6}}},
		{Name: "db-1", Tier: "db", Pools: []PoolObservation{{Name: PoolConnections, Size: 151, Busy: 40.7, FullShare: -1}}},
	}}
	c, ok := ConnectionsPerChild(d, "php", o)
	require.True(t, ok)
	assert.InDelta(t, 40.7/27.2, c, 1e-12)

	// Nothing to read: no connections reading, no busy child, not a children tier.
	o2 := o
	o2.Servers = o.Servers[:3]
	_, ok = ConnectionsPerChild(d, "php", o2)
	assert.False(t, ok)
	_, ok = ConnectionsPerChild(d, "web", o)
	assert.False(t, ok)
	idle := Observation{Servers: []ServerObservation{o.Servers[0], {Name: "php-1", Tier: "php", Pools: []PoolObservation{{Name: PoolThreads, Size: 20}}}, o.Servers[3]}}
	_, ok = ConnectionsPerChild(d, "php", idle)
	assert.False(t, ok)
}

// The database's connection limit follows from the children: every child
// of every php server may reach the one DB server, each with the connections
// measured, plus the reserve for monitoring and administration. A limit of
// children + 4 failed pages with "Too many connections" and locked out the
// exporter in issue 36.
func TestDatabaseConnectionsFollowFromTheChildren(t *testing.T) {
	d := phpDeployment()
	meas := []TierMeasurement{
		{Tier: "web", Throughput: 20, ResponseTime: 0.5},
		{Tier: "php", Throughput: 20, ResponseTime: 0.45, ConnectionsPerChild: 40.7 / 27.2},
		{Tier: "db", Throughput: 300, ResponseTime: 0.002},
	}
	sz, err := CalculateMinAllocation(d, "php", 0, meas)
	require.NoError(t, err)
	alloc, recs := RecommendAllocation(d, sz, Allocation{"web": {Threads: 100}, "php": {Threads: 20}})
	require.Len(t, recs, 3)
	children := alloc["php"].Threads * 2 // two php servers
	assert.Equal(t, 0, alloc["php"].Connections, "a children tier has no connection pool of its own")
	assert.Nil(t, recs[1].ConnectionsPerServer)
	assert.Equal(t, "php-fpm children", recs[1].Workers)
	assert.Empty(t, recs[0].Workers)
	mc := recs[2].MaxConnections
	require.NotNil(t, mc)
	assert.Equal(t, MaxConnections{From: "php", Children: children, PerChild: 40.7 / 27.2, Measured: true,
		Reserve: ConnectionReserve, PerServer: int(math.Ceil(float64(children)*40.7/27.2)) + ConnectionReserve}, *mc)
	assert.Greater(t, mc.PerServer, children+4)
	assert.Nil(t, recs[0].MaxConnections)
	assert.Nil(t, recs[1].MaxConnections)

	// Not measured: the conservative default, said so.
	meas[1].ConnectionsPerChild = 0
	sz, err = CalculateMinAllocation(d, "php", 0, meas)
	require.NoError(t, err)
	_, recs = RecommendAllocation(d, sz, nil)
	mc = recs[2].MaxConnections
	require.NotNil(t, mc)
	assert.False(t, mc.Measured)
	assert.Equal(t, DefaultConnectionsPerChild, mc.PerChild)
	assert.Equal(t, int(math.Ceil(float64(recs[1].TotalThreads)*DefaultConnectionsPerChild))+ConnectionReserve, mc.PerServer)
	assert.Contains(t, mc.String(), "not measured")

	// A reading that is no number of connections is refused, naming it.
	for _, bad := range []float64{-1, math.NaN(), math.Inf(1)} {
		meas[1].ConnectionsPerChild = bad
		_, err = CalculateMinAllocation(d, "php", 0, meas)
		require.Error(t, err)
		assert.Contains(t, err.Error(), `tier "php": connectionsPerChild: want a finite number >= 0`)
	}
	meas[1].ConnectionsPerChild = 0
	meas[0].ConnectionsPerChild = 1
	_, err = CalculateMinAllocation(d, "php", 0, meas)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `tier "web": connectionsPerChild: the tier has no children`)
}

// Stacks without children are sized as before: no connection limit derived.
func TestNoDerivedConnectionsWithoutChildren(t *testing.T) {
	d := Deployment{Topology: "1/1/1", Tiers: []Tier{
		{Name: "web", Role: RoleWeb, Replicas: 1, Cores: 1, Pools: []string{PoolThreads}},
		{Name: "app", Role: RoleApp, Replicas: 1, Cores: 1, Pools: []string{PoolThreads, PoolConnections}},
		{Name: "db", Role: RoleDB, Replicas: 1, Cores: 1},
	}}
	sz, err := CalculateMinAllocation(d, "db", 12, []TierMeasurement{{Tier: "web", Throughput: 10, ResponseTime: 1}, {Tier: "app", Throughput: 10, ResponseTime: 0.5}, {Tier: "db", Throughput: 50, ResponseTime: 0.01}})
	require.NoError(t, err)
	_, recs := RecommendAllocation(d, sz, nil)
	for _, r := range recs {
		assert.Nil(t, r.MaxConnections, r.Name)
	}
}

// recommend's measurements at WLmin carry the children tier's reading.
func TestMinJobsMeasurementsCarryConnectionsPerChild(t *testing.T) {
	d := phpDeployment()
	o := Observation{Servers: []ServerObservation{
		{Name: "web-1", Tier: "web", Throughput: 20, ResponseTime: 0.5},
		{Name: "php-1", Tier: "php", Throughput: 10, ResponseTime: 0.4, Pools: []PoolObservation{{Name: PoolThreads, Size: 20, Busy: 4}}},
		{Name: "php-2", Tier: "php", Throughput: 10, ResponseTime: 0.4, Pools: []PoolObservation{{Name: PoolThreads, Size: 20, Busy: 4}}},
		{Name: "db-1", Tier: "db", Throughput: 200, ResponseTime: 0.01, Pools: []PoolObservation{{Name: PoolConnections, Busy: 12, FullShare: -1}}},
	}}
	res := MinJobs{MinJobs: 8}
	require.NoError(t, res.measure(d, o, Critical{Tier: "php"}))
	require.Len(t, res.Measurements, 3)
	assert.Equal(t, 0.0, res.Measurements[0].ConnectionsPerChild)
	assert.Equal(t, 1.5, res.Measurements[1].ConnectionsPerChild)
	assert.Equal(t, 0.0, res.Measurements[2].ConnectionsPerChild)
}

// Where the database lists a connection pool, the allocation sets it to the
// derived limit, so that a hook applies it ({db.connections}) and a trial
// reads its open connections against it.
func TestDatabaseConnectionPoolIsTheDerivedLimit(t *testing.T) {
	d := phpDeployment()
	d.Tiers[2].Pools = []string{PoolConnections}
	sz, err := CalculateMinAllocation(d, "db", 30, []TierMeasurement{
		{Tier: "web", Throughput: 20, ResponseTime: 0.5},
		{Tier: "php", Throughput: 20, ResponseTime: 0.45, ConnectionsPerChild: 1.5},
		{Tier: "db", Throughput: 300, ResponseTime: 0.1},
	})
	require.NoError(t, err)
	alloc, recs := RecommendAllocation(d, sz, Allocation{"web": {Threads: 100}, "php": {Threads: 5}, "db": {Connections: 151}})
	mc := recs[2].MaxConnections
	require.NotNil(t, mc)
	assert.Equal(t, recs[1].TotalThreads, mc.Children)
	assert.Equal(t, int(math.Ceil(float64(mc.Children)*1.5))+ConnectionReserve, mc.PerServer)
	assert.Equal(t, TierPools{Connections: mc.PerServer}, alloc["db"])
	require.NotNil(t, recs[2].ConnectionsPerServer)
	assert.Equal(t, mc.PerServer, *recs[2].ConnectionsPerServer)
	assert.Nil(t, recs[2].Minimum, "the limit is derived, not a buffer over the formula")
	// The children bound the database's jobs, as an app's connection pool does.
	bt, bp := BoundingPool(d, "db")
	assert.Equal(t, 1, bt)
	assert.Equal(t, PoolThreads, bp)
}

// minJobs is printed as 3.5 and must give the pool 3.5 gives: WordPress's
// campaign read X R = 3.4999999999999996 and allocated 3 children beside
// "minJobs 3.5" (docs/wordpress-evaluation.md, 2026-11-28).
func TestAPoolIsRoundedFromMinJobsAsPrinted(t *testing.T) {
	d := phpDeployment()
	d.Tiers[1].Replicas = 1
	meas := []TierMeasurement{
		{Tier: "web", Throughput: 10, ResponseTime: 0.4},
		{Tier: "php", Throughput: 10, ResponseTime: 0.35},
		{Tier: "db", Throughput: 100, ResponseTime: 0.002},
	}
	sz, err := CalculateMinAllocation(d, "php", 3.4999999999999996, meas)
	require.NoError(t, err)
	i := slices.IndexFunc(sz.Tiers, func(ts TierSize) bool { return ts.Name == "php" })
	require.GreaterOrEqual(t, i, 0, "the php tier is sized")
	assert.Equal(t, 4, sz.Tiers[i].TotalThreads, "minJobs 3.5")
}
