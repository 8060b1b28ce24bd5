package report

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
)

// Issue 38: a tier on virtual threads gets its limit's permits, not a
// maxThreads that bounds nothing, and a JDBC pool that fails fast.
func TestSnippetsOfAPermitsTier(t *testing.T) {
	d := algorithms.Deployment{Topology: "v", Tiers: []algorithms.Tier{
		{Name: "web", Role: algorithms.RoleWeb, Replicas: 1, Cores: 1, Pools: []string{"threads"}},
		{Name: "app", Role: algorithms.RoleApp, Replicas: 1, Cores: 1, Pools: []string{"threads", "connections"}, Software: algorithms.SoftwareTomcat, Permits: true},
		{Name: "db", Role: algorithms.RoleDB, Replicas: 1, Cores: 1},
	}}
	conns := 12
	recs := []algorithms.TierRecommendation{{Name: "app", ThreadsPerServer: 30, ConnectionsPerServer: &conns, TotalConnections: &conns}}
	out := Snippets(d, recs, []string{"tomcat", "hikari"})
	require.Len(t, out, 2)
	tc, hk := out[0], out[1]
	assert.Equal(t, "tomcat", tc.Format)
	assert.Contains(t, tc.Text, "30 permits")
	assert.Contains(t, tc.Text, "spring.threads.virtual.enabled=true")
	assert.Contains(t, tc.Text, `useVirtualThreads="true"`)
	assert.Contains(t, tc.Text, "-limit 30")
	assert.NotContains(t, tc.Text, "maxThreads=\"30\"", "maxThreads bounds nothing on virtual threads")
	assert.Equal(t, "hikari", hk.Format)
	assert.Contains(t, hk.Text, "maximumPoolSize=12\n")
	assert.Contains(t, hk.Text, "connectionTimeout=2000\n")
	assert.Contains(t, hk.Text, "# spring.datasource.hikari.connection-timeout=2000\n")
	for _, s := range out {
		for _, line := range strings.Split(strings.TrimSpace(s.Text), "\n") {
			assert.LessOrEqual(t, len(line), 120, "%q", line)
		}
	}
}

// The recommendation names the limit as the soft resource to set.
func TestRecommendationOfAPermitsTierNamesTheLimit(t *testing.T) {
	d := algorithms.Deployment{Topology: "v", Tiers: []algorithms.Tier{
		{Name: "web", Role: algorithms.RoleWeb, Replicas: 1, Cores: 1, Pools: []string{"threads"}},
		{Name: "app", Role: algorithms.RoleApp, Replicas: 1, Cores: 1, Pools: []string{"threads", "connections"}, Permits: true},
		{Name: "db", Role: algorithms.RoleDB, Replicas: 1, Cores: 1},
	}}
	sz, err := algorithms.CalculateMinAllocation(d, "app", 19, []algorithms.TierMeasurement{
		{Tier: "web", Throughput: 200, ResponseTime: 0.05}, {Tier: "app", Throughput: 200, ResponseTime: 0.04}})
	require.NoError(t, err)
	_, recs := algorithms.RecommendAllocation(d, sz, nil)
	var b strings.Builder
	require.NoError(t, WriteTiersTable(&b, recs))
	assert.Contains(t, b.String(), "app: its threads are the permits of a concurrency limit over virtual threads: set the limit "+
		"(--format tomcat), not maxThreads, which bounds nothing there\n")
}
