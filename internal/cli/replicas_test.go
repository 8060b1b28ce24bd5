package cli_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const autoscaledDeployment = "../../testdata/deployments/autoscaled.yaml"

// recommend -f with app replicas 2..12, surge 25% and max_connections 500
// (48 reserved): an answer at every count, in JSON, the table and snippets.
func TestSlowRecommendAnswersForAReplicaRange(t *testing.T) {
	args := []string{"recommend", "-f", autoscaledDeployment, "--ramp-up", "10s", "--runtime", "20s", "--no-journal", "--progress", "none"}
	out, stderr, code := run(t, "", append(args, "-o", "json")...)
	require.Equal(t, 0, code, stderr)
	var doc struct {
		Replicas struct {
			Tier, Surge     string
			Min, Max        int
			SafeMaxReplicas *int
			Counts          []struct {
				Replicas, Surge, ThreadsPerReplica, MaxConnections, DatabaseConnections int
				ConnectionsPerReplica, PeakConnections                                  *int
				Fits                                                                    *bool
				Allocation                                                              map[string]map[string]int
			}
		}
		Tiers []struct {
			Name                 string
			ConnectionsPerServer *int
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	r := doc.Replicas
	assert.Equal(t, "app", r.Tier)
	assert.Equal(t, "25%", r.Surge)
	require.Len(t, r.Counts, 11)
	for i, c := range r.Counts {
		n := 2 + i
		assert.Equal(t, n, c.Replicas)
		assert.Equal(t, (n+3)/4, c.Surge, "ceil(25%% of %d)", n)
		require.NotNil(t, c.ConnectionsPerReplica)
		require.NotNil(t, c.PeakConnections)
		assert.Equal(t, (n+c.Surge)**c.ConnectionsPerReplica, *c.PeakConnections)
		assert.Equal(t, *c.PeakConnections, c.DatabaseConnections)
		assert.Equal(t, c.DatabaseConnections+48, c.MaxConnections, "admin 3 + monitoring 5 + reports-service 40")
		assert.Equal(t, c.MaxConnections <= 500, *c.Fits)
		assert.Equal(t, *c.ConnectionsPerReplica, c.Allocation["app"]["connections"])
	}
	// At the measured count (the range's lower end) the plan is recommend's answer.
	assert.Equal(t, *doc.Tiers[1].ConnectionsPerServer, *r.Counts[0].ConnectionsPerReplica)
	require.NotNil(t, r.SafeMaxReplicas)
	assert.GreaterOrEqual(t, *r.SafeMaxReplicas, 2)

	out, stderr, code = run(t, "", append(args, "--format", "hikari,postgresql")...)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "replicas of app: 2..12, surge 25%, measured at 2;")
	assert.Contains(t, out, "database db: max_connections 500, reserved 48 (admin 3, monitoring 5, reports-service 40)\n")
	assert.Contains(t, out, fmt.Sprintf("safe maxReplicas: %d", *r.SafeMaxReplicas))
	assert.Contains(t, out, "=== hikari: tier app (each replica of app, 2..12) -> application.properties (Spring Boot)")
	need := 0
	for _, c := range r.Counts {
		need = max(need, c.MaxConnections)
	}
	assert.Contains(t, out, fmt.Sprintf("max_connections = %d\n", need))
}

// A fixed deployment's answer is as before: no replicas key.
func TestRecommendWithoutARangeHasNoReplicasKey(t *testing.T) {
	out, stderr, code := run(t, "", "recommend", "-t", "1/2/1", "--ramp-up", "10s", "--runtime", "20s", "--no-journal", "--progress", "none", "-o", "json")
	require.Equal(t, 0, code, stderr)
	var doc map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.NotContains(t, doc, "replicas")
}
