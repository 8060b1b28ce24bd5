package cli

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/report"
)

// The table and the CSV of recommend --per-count: a row a count, the
// arithmetic's answer beside it ("same" where it is the count's own), the
// safe maxReplicas and each count's warnings.
func TestPerCountTableAndCSV(t *testing.T) {
	yes, no := true, false
	c22, c44, c12, c36 := 22, 44, 12, 36
	safe := 2
	doc := perCountJSON{Topology: "1/2/1/2", Tier: "app", Min: 2, Max: 3, Surge: "25%", SafeMaxReplicas: &safe, Experiments: 17,
		Counts: []countJSON{
			{Replicas: 2, Topology: "1/2/1/2", Critical: report.CriticalJSON{Tier: "app", Resource: "cpu"}, MinJobs: 42.53, Allocation: "400-22-22",
				Experiments: 8, ExtrapolatedAllocation: "400-22-22", Agrees: true,
				Plan: algorithms.ReplicaCount{ThreadsPerReplica: 22, ConnectionsPerReplica: &c22, TotalConnections: &c44, DatabaseConnections: 66, MaxConnections: 69, Fits: &yes}},
			{Replicas: 3, Topology: "1/3/1/2", Critical: report.CriticalJSON{Tier: "cluster", Resource: "cpu"}, MinJobs: 20.07, Allocation: "400-150-12",
				Experiments: 9, ExtrapolatedAllocation: "400-22-22", Warnings: []string{"app 3..3 with surge 25% does not fit at 3 replicas"},
				Plan: algorithms.ReplicaCount{ThreadsPerReplica: 150, ConnectionsPerReplica: &c12, TotalConnections: &c36, DatabaseConnections: 48, MaxConnections: 51, Fits: &no}},
		}}
	var b bytes.Buffer
	require.NoError(t, writePerCountTable(&b, doc))
	out := b.String()
	assert.Contains(t, out, "1/2/1/2: a campaign at each count of app 2..3 (surge 25%), 17 experiments in all\n")
	assert.Regexp(t, `\n2 +app/cpu +42\.5 +400-22-22 +22 +22 +44 +- +66 +69 +yes +same +8\n`, out)
	assert.Regexp(t, `\n3 +cluster/cpu +20\.1 +400-150-12 +150 +12 +36 +- +48 +51 +NO +400-22-22 +9\n`, out)
	assert.Contains(t, out, "safe maxReplicas: 2 (each count of the range with its own campaign's pools; past 3, the arithmetic on 3's)\n")
	assert.Contains(t, out, "warning: at 3 replicas: app 3..3 with surge 25% does not fit at 3 replicas\n")

	b.Reset()
	require.NoError(t, writePerCountCSV(&b, doc))
	assert.Contains(t, b.String(), "\n3,1/3/1/2,cluster,cpu,20.07,400-150-12,150,12,36,,48,51,false,400-22-22,9\n")
}
