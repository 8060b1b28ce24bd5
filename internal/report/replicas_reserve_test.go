package report

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
)

// pooled.yaml's PgBouncer with reserve_pool_size 10: the table says what
// the database sees with it, the pgbouncer.ini snippet keeps it, and
// PostgreSQL's max_connections admits it.
func TestReplicaRangeCountsThePoolersReserve(t *testing.T) {
	d, rec := pooledRecommendation(t)
	d.Tiers[1].ReservePoolSize = 10
	rec.Replicas = algorithms.PlanReplicas(d, rec.Sizing, rec.Critical.Reserve, rec.MinJobs.Measurements)
	require.NotNil(t, rec.Replicas)
	var b bytes.Buffer
	require.NoError(t, WriteRecommendTable(&b, NewRecommendJSON(d, rec, "")))
	assert.Contains(t, b.String(), "pooler pgbouncer (1 servers): default_pool_size 40 + reserve_pool_size 10 (the database sees 50), max_client_conn at least 11500 (configured 6000)\n")

	fs, err := ParseFormats("pgbouncer,postgresql")
	require.NoError(t, err)
	byFormat := map[string]Snippet{}
	for _, s := range ReplicaSnippets(d, rec.Replicas, fs) {
		byFormat[s.Format] = s
	}
	assert.Contains(t, byFormat["pgbouncer"].Text, "the database sees 1 x (default_pool_size + reserve_pool_size) = 50 server connections")
	assert.Contains(t, byFormat["pgbouncer"].Text, "[pgbouncer]\ndefault_pool_size = 40\nreserve_pool_size = 10\nmax_client_conn = 11500\n")
	assert.Contains(t, byFormat["postgresql"].Text, "max_connections = 53\n", "50 server connections + 3 reserved")
}
