package evaluate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/internal/topology"
)

// The report is written from its JSON: a count below the target is named
// at the top and in bold in its range's table.
func TestReplicasReportNamesTheMisses(t *testing.T) {
	rep := ReplicasReport{Config: ReplicasReportConfig{Ranges: []string{"1/2..3/1/2", "1/2..3/1/4"}, Seeds: []uint64{1}, Precision: 0.02, RuntimeSeconds: 720,
		SLAs: []float64{0.5, 2}, CampaignSLA: 2, Target: 0.97, Parallel: 2},
		Misses: []string{"1/2..3/1/2 seed 1 at 3 replicas: 400-150-12 reaches 0.950 of the grid's best 400-100-20 at 2 s"},
		Ranges: []ReplicaRangeResult{{Range: "1/2..3/1/2", Seed: 1, Tier: "app", Counts: []CountResult{
			{Replicas: 2, Critical: "app/cpu", MinJobs: 42.5, Allocation: "400-22-22", ConnectionsPerReplica: 22, TotalConnections: 44, Ratio: 0.99, MeetsTarget: true,
				Recommended:  Quality{Ratio: map[string]float64{"0.5": 0.98, "2": 0.99}, Indistinguishable: []string{"2"}},
				Extrapolated: &Quality{Allocation: "400-22-22", Ratio: map[string]float64{"2": 0.99}}, GridBest: Quality{Allocation: "400-20-20"}},
			{Replicas: 3, Critical: "cluster/cpu", MinJobs: 20, Allocation: "400-150-12", ConnectionsPerReplica: 12, TotalConnections: 36, Ratio: 0.95,
				Recommended:  Quality{Ratio: map[string]float64{"0.5": 0.9, "2": 0.95}},
				Extrapolated: &Quality{Allocation: "400-22-22", Ratio: map[string]float64{"2": 0.93}}, GridBest: Quality{Allocation: "400-100-20"}},
		}}}}
	dir := t.TempDir()
	require.NoError(t, WriteReplicas(dir, rep))
	md, err := os.ReadFile(filepath.Join(dir, ReplicasMarkdown))
	require.NoError(t, err)
	assert.Contains(t, string(md), "**This run was cut short: 2 of 4 counts judged**; the others are not in the tables.")
	assert.Contains(t, string(md), "**1 counts miss the target:**\n\n- 1/2..3/1/2 seed 1 at 3 replicas: 400-150-12 reaches 0.950")
	assert.Contains(t, string(md), "| 2 | app/cpu | 42.5 | 400-22-22 | 0.990 (=) | 0.980 | same | 0.990 | 22 | 44 | 1.04 |")
	assert.Contains(t, string(md), "| 3 | cluster/cpu | 20.0 | 400-150-12 | **0.950** | 0.900 | 400-22-22 | 0.930 | 12 | 36 | 1.80 |")
	var back ReplicasReport
	js, err := os.ReadFile(filepath.Join(dir, ReplicasJSON))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(js, &back))
	assert.Equal(t, rep, back)
}

// The committed replicas evaluation is what this code writes from its JSON
// twin: the Markdown is never edited by hand.
func TestCommittedReplicasEvaluationIsWhatWriteProduces(t *testing.T) {
	b, err := os.ReadFile("../../docs/" + ReplicasJSON)
	require.NoError(t, err)
	var rep ReplicasReport
	require.NoError(t, json.Unmarshal(b, &rep))
	dir := t.TempDir()
	require.NoError(t, WriteReplicas(dir, rep))
	got, err := os.ReadFile(filepath.Join(dir, ReplicasMarkdown))
	require.NoError(t, err)
	want, err := os.ReadFile("../../docs/" + ReplicasMarkdown)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got))
	require.Len(t, rep.Ranges, len(rep.Config.Ranges)*len(rep.Config.Seeds))
	for _, r := range rep.Ranges {
		d, err := topology.ParseRangedTopology(r.Range)
		require.NoError(t, err)
		sc := d.Tiers[RangedTier(d)].Scaling
		require.Len(t, r.Counts, sc.Max-sc.Min+1, "%s: every count judged", r.Range)
	}
}
