package report

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/topology"
)

// pooledRecommendation is recommend's answer on testdata's pooled.yaml
// (app 10..460 replicas, surge 25%, PgBouncer with max_client_conn 6,000,
// PostgreSQL max 500 with 3 reserved) with the db critical at 40 jobs.
func pooledRecommendation(t *testing.T) (algorithms.Deployment, algorithms.Recommendation) {
	t.Helper()
	df, err := topology.LoadDeployment("../../testdata/deployments/pooled.yaml")
	require.NoError(t, err)
	d := df.Deployment
	meas := []algorithms.TierMeasurement{{Tier: "app", Throughput: 1000, ResponseTime: 0.05}, {Tier: "db", Throughput: 2000, ResponseTime: 0.02}}
	sz, err := algorithms.CalculateMinAllocation(d, "db", 0, meas)
	require.NoError(t, err)
	rec := algorithms.Recommendation{Critical: algorithms.Critical{Tier: "db", Reserve: df.Allocation}, Sizing: sz,
		MinJobs: algorithms.MinJobs{MinJobs: sz.MinJobs, Measurements: meas}}
	rec.Allocation, rec.Tiers = algorithms.RecommendAllocation(d, sz, df.Allocation)
	rec.Replicas = algorithms.PlanReplicas(d, sz, df.Allocation, meas)
	require.NotNil(t, rec.Replicas)
	return d, rec
}

func TestReplicaRangeTable(t *testing.T) {
	d, rec := pooledRecommendation(t)
	doc := NewRecommendJSON(d, rec, "")
	var b bytes.Buffer
	require.NoError(t, WriteRecommendTable(&b, doc))
	out := b.String()
	t.Log(out)
	assert.Contains(t, out, "replicas of app: 10..460, surge 25%, measured at 10; critical db, minJobs 40.0\n")
	assert.Contains(t, out, "database db: max_connections 500, reserved 3 (admin 3)\n")
	// Two runs of counts: those that fit max_client_conn 6,000 and those
	// that do not ((240 + 60) x 20 = 6,000; (241 + 61) x 20 = 6,040).
	assert.Regexp(t, `\n  10\.\.240 +3\.\.60 +200 +20 +200\.\.4800 +260\.\.6000 +40 +260\.\.6000 +40 +43 +yes\n`, out)
	assert.Regexp(t, `\n  241\.\.460 +61\.\.115 +200 +20 +4820\.\.9200 +6040\.\.11500 +40 +6040\.\.11500 +40 +43 +NO\n`, out)
	assert.Contains(t, out, "safe maxReplicas: 240 (with each count's pools, surge included)\n")
	assert.Contains(t, out, "pooler pgbouncer (1 servers): default_pool_size 40 (the database sees 40), max_client_conn at least 11500 (configured 6000)\n")
	assert.Contains(t, out, "  ! app 10..460 with surge 25% does not fit at 241..460 replicas: at 460, (460 + 115 surge) x 20 = 11500 client connections per pgbouncer server against max_client_conn 6000; safe maxReplicas 240\n")
	assert.Less(t, strings.Count(out, "\n"), 40, "a range of 451 counts prints in a few rows")
}

// The JSON's replicas key: every count, and the keys docs/commands.md lists.
func TestReplicaRangeJSON(t *testing.T) {
	d, rec := pooledRecommendation(t)
	var b bytes.Buffer
	require.NoError(t, WriteJSON(&b, NewRecommendJSON(d, rec, "")))
	var doc struct {
		Replicas map[string]json.RawMessage `json:"replicas"`
	}
	require.NoError(t, json.Unmarshal(b.Bytes(), &doc))
	for _, k := range []string{"tier", "min", "max", "measured", "surge", "critical", "minJobs", "capacityScales", "feeder", "database",
		"connectionLimit", "pooler", "counts", "safeMaxReplicas", "fixedPool", "notes", "warnings"} {
		assert.Contains(t, doc.Replicas, k)
	}
	var counts []map[string]any
	require.NoError(t, json.Unmarshal(doc.Replicas["counts"], &counts))
	require.Len(t, counts, 451)
	assert.Equal(t, map[string]any{"replicas": 10.0, "surge": 3.0, "threadsPerReplica": 200.0, "connectionsPerReplica": 20.0,
		"totalThreads": 2000.0, "totalConnections": 200.0, "peakConnections": 260.0, "poolerPoolSize": 40.0, "poolerClientConnections": 260.0,
		"databaseConnections": 40.0, "maxConnections": 43.0, "fits": true,
		"allocation": map[string]any{"app": map[string]any{"threads": 200.0, "connections": 20.0}, "pgbouncer": map[string]any{"connections": 40.0}}}, counts[0])
	assert.JSONEq(t, `240`, string(doc.Replicas["safeMaxReplicas"]))

	// docs/commands.md's output section names every key.
	md, err := os.ReadFile("../../docs/commands.md")
	require.NoError(t, err)
	var pooler, fixed map[string]any
	require.NoError(t, json.Unmarshal(doc.Replicas["pooler"], &pooler))
	require.NoError(t, json.Unmarshal(doc.Replicas["fixedPool"], &fixed))
	for _, m := range []map[string]any{counts[0], pooler, fixed} {
		for k := range m {
			assert.Contains(t, string(md), "`"+k+"`", "docs/commands.md lists replicas' %s", k)
		}
	}
	for k := range doc.Replicas {
		assert.Contains(t, string(md), "`"+k+"`", "docs/commands.md lists replicas.%s", k)
	}

	// A fixed deployment's document has no replicas key.
	d2, err := topology.ParseTopology("1/2/1")
	require.NoError(t, err)
	b.Reset()
	require.NoError(t, WriteJSON(&b, NewRecommendJSON(d2, algorithms.Recommendation{}, "")))
	assert.NotContains(t, b.String(), `"replicas"`)
}

func TestReplicaRangeSnippets(t *testing.T) {
	d, rec := pooledRecommendation(t)
	fs, err := ParseFormats("all")
	require.NoError(t, err)
	snips := ReplicaSnippets(d, rec.Replicas, fs)
	byFormat := map[string]Snippet{}
	for _, s := range snips {
		byFormat[s.Format] = s
	}
	require.Len(t, byFormat, 3, "hikari, pgbouncer, postgresql")
	// 20 a replica at every count: (460 + 115) x 20 = 11,500 > 6,000, so
	// the one size for every count is the largest that fits: 6000 / 575 = 10.
	assert.Contains(t, byFormat["hikari"].Text, "#   10..240 replicas: 20\n#   241..460 replicas: 20 (does not fit the limits: softalloc's warning says why)\n")
	assert.Contains(t, byFormat["hikari"].Text, "spring.datasource.hikari.maximum-pool-size=10\n")
	assert.Contains(t, byFormat["pgbouncer"].Text, "[pgbouncer]\ndefault_pool_size = 40\nmax_client_conn = 11500\n")
	assert.Contains(t, byFormat["pgbouncer"].Text, "The configured max_client_conn 6000 is too few")
	assert.Contains(t, byFormat["postgresql"].Text, "max_connections = 43\n")
	assert.Contains(t, byFormat["postgresql"].Text, "+ 3 reserved (admin 3)")
	assert.Nil(t, ReplicaSnippets(d, nil, fs))
}
