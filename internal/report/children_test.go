package report_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/report"
	"github.com/softalloc/softalloc/internal/topology"
)

// Issue 36: the allocation recommend prints says "php-fpm children" and the
// database's connections derived from them, not threads and connections=0.
func TestRecommendationOfAChildrenStackSaysChildren(t *testing.T) {
	d, recs := phpRecommendation(t, 40, 1.5)
	alloc := algorithms.Allocation{}
	for i, r := range recs {
		p := algorithms.TierPools{}
		if d.Tiers[i].HasPool(algorithms.PoolThreads) {
			p.Threads = r.ThreadsPerServer
		}
		if r.ConnectionsPerServer != nil {
			p.Connections = *r.ConnectionsPerServer
		}
		alloc[r.Name] = p
	}
	doc := report.NewRecommendJSON(d, algorithms.Recommendation{Allocation: alloc, Tiers: recs}, alloc.String())
	// As the keyed form, which --alloc and validate --recommended read back.
	assert.Equal(t, "web.threads=150,php.children=40,db.connections=70", doc.Allocation)
	back, err := topology.ParseAllocationIn(d, doc.Allocation)
	require.NoError(t, err)
	assert.Equal(t, alloc, back)
	var b bytes.Buffer
	require.NoError(t, report.WriteTiersTable(&b, doc.Tiers))
	assert.Contains(t, b.String(), "php: its threads are php-fpm children, each opening its own connections to the next tier\n")
	assert.Contains(t, b.String(), "db: max_connections 70 = 40 php children x 1.50 connections each (measured) + 10 reserved for monitoring and administration\n")

	// softalloc size says the same.
	sz, err := algorithms.CalculateMinAllocation(d, "php", 40, []algorithms.TierMeasurement{{Tier: "web", Throughput: 30, ResponseTime: 0.3}, {Tier: "php", Throughput: 30, ResponseTime: 1}})
	require.NoError(t, err)
	b.Reset()
	require.NoError(t, report.WriteSizeTable(&b, d, sz, recs))
	assert.Contains(t, b.String(), "php: its threads are php-fpm children")
	assert.Contains(t, b.String(), "db: max_connections 70 = ")
}

// A deployment with other tier names printed its allocation as the journal's
// key ("api:threads=64,connections=16;nginx:threads=200"), which no flag
// reads; the notation's chains print as they always have.
func TestRecommendedAllocationReadsBack(t *testing.T) {
	shop, err := topology.LoadDeployment("../../testdata/deployments/shop.yaml")
	require.NoError(t, err)
	a := algorithms.Allocation{"nginx": {Threads: 200}, "api": {Threads: 64, Connections: 16}}
	doc := report.NewRecommendJSON(shop.Deployment, algorithms.Recommendation{Allocation: a}, a.String())
	assert.Equal(t, "nginx.threads=200,api.threads=64,api.connections=16", doc.Allocation)

	d, err := topology.ParseTopology("1/2/1/2")
	require.NoError(t, err)
	a = algorithms.Allocation{"web": {Threads: 400}, "app": {Threads: 6, Connections: 6}}
	doc = report.NewRecommendJSON(d, algorithms.Recommendation{Allocation: a}, a.String())
	assert.Equal(t, "400-6-6", doc.Allocation)
}
