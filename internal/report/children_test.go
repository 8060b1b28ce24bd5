package report_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/report"
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
	assert.Equal(t, "web threads 150, php php-fpm children 40, db connections 70", doc.Allocation)
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
