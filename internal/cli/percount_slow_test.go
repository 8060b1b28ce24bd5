//go:build !race

// recommend --per-count runs a whole campaign at each count of a replica
// range on the simulator (about ten trials a count): seconds here, ten
// times that under the race detector, hence TestSlow and !race.

package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// perCountDoc is the part of recommend --per-count's JSON the tests read.
type perCountDoc struct {
	Topology, Tier  string
	Min, Max        int
	SafeMaxReplicas *int
	Experiments     int
	Counts          []struct {
		Replicas               int
		Topology, Allocation   string
		ExtrapolatedAllocation string
		Agrees                 bool
		MinJobs                float64
		Experiments            int
		Critical               struct{ Tier, Resource string }
		Plan                   struct{ ConnectionsPerReplica, TotalConnections *int }
	}
	Extrapolated struct {
		Counts []struct {
			Replicas              int
			ConnectionsPerReplica *int
		}
	}
}

// The simulator's 1/2/1/2 with the app tier at 2..4 replicas: at 2 the
// app's CPU saturates first, from 3 on the C-JDBC server's (the campaign
// at each count finds it).
const perCountFile = `tiers:
  - {name: web, role: web, replicas: 1, pools: {threads: 400}}
  - {name: app, role: app, replicas: 2..4, pools: {threads: 150, connections: 60}}
  - {name: cluster, role: cluster, replicas: 1}
  - {name: db, role: db, replicas: 2}
`

func perCountRun(t *testing.T, args ...string) (perCountDoc, string) {
	t.Helper()
	out, stderr, code := run(t, "", append(append([]string{"recommend", "--per-count", "--seed", "1", "--progress", "none", "-o", "json"}, shortTrials...), args...)...)
	require.Equal(t, 0, code, stderr)
	var doc perCountDoc
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	return doc, out
}

// A campaign at each count, keyed apart in the journal: the same answer
// run after run (one seed), the same from a journal cut short as without
// one, no experiment of the journal run twice, at each count the answer
// recommend gives at that count alone, and the answers differ from count
// to count as the forced flow law says.
func TestSlowPerCountCampaignIsDeterministicAndResumes(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "ranged.yaml")
	require.NoError(t, os.WriteFile(file, []byte(perCountFile), 0o644))

	doc, plain := perCountRun(t, "-f", file, "--no-journal")
	require.Len(t, doc.Counts, 3)
	for i, c := range doc.Counts {
		assert.Equal(t, 2+i, c.Replicas)
		assert.Equal(t, "1/"+string(rune('2'+i))+"/1/2", c.Topology, "each count is its own topology, and its own journal key")
	}

	j := filepath.Join(dir, "j.jsonl")
	_, whole := perCountRun(t, "-f", file, "--journal", j)
	assert.Equal(t, plain, whole, "one seed, one answer; the journal changes nothing")
	keys := journalKeys(t, j)
	require.Len(t, keys, doc.Experiments, "every count's experiments recorded, none shared with another count")

	// Cut inside the second count's campaign: the rerun runs what was cut,
	// and only that, and answers as the whole run did.
	cut := doc.Counts[0].Experiments + 2
	data, err := os.ReadFile(j)
	require.NoError(t, err)
	lines := strings.SplitAfter(string(data), "\n")
	require.NoError(t, os.WriteFile(j, []byte(strings.Join(lines[:cut], "")), 0o644))
	_, resumed := perCountRun(t, "-f", file, "--journal", j)
	assert.Equal(t, plain, resumed)
	assert.Equal(t, keys, journalKeys(t, j), "the cut experiments run again in the same order, the kept ones not at all")

	// Count 3's campaign is recommend's on 1/3/1/2.
	out, stderr, code := run(t, "", append([]string{"recommend", "-t", "1/3/1/2", "--seed", "1", "--progress", "none", "--no-journal", "-o", "json"}, shortTrials...)...)
	require.Equal(t, 0, code, stderr)
	var one struct{ Allocation string }
	require.NoError(t, json.Unmarshal([]byte(out), &one))
	assert.Equal(t, one.Allocation, doc.Counts[1].Allocation)

	t.Run("TheAnswerFollowsTheForcedFlowLaw", func(t *testing.T) { perCountFollowsTheForcedFlowLaw(t, doc) })
}

// Where the critical tier sits behind the replicated one, the forced flow
// law makes the replicas share one budget of jobs: the count's own
// campaign gives each replica a smaller pool and the total does not grow
// with the count, while the arithmetic from the lowest count, where the
// app tier itself was critical, keeps each replica's pool and so grows
// the total in proportion.
func perCountFollowsTheForcedFlowLaw(t *testing.T, doc perCountDoc) {
	require.Len(t, doc.Counts, 3)
	low := doc.Counts[0]
	require.Equal(t, "app", low.Critical.Tier, "the premise: at 2 replicas the app tier is critical")
	assert.True(t, low.Agrees, "at the lowest count the arithmetic is that count's campaign")

	arith := map[int]int{}
	for _, rc := range doc.Extrapolated.Counts {
		require.NotNil(t, rc.ConnectionsPerReplica)
		arith[rc.Replicas] = *rc.ConnectionsPerReplica
	}
	var behind []int
	for i, c := range doc.Counts {
		require.NotNil(t, c.Plan.ConnectionsPerReplica)
		require.NotNil(t, c.Plan.TotalConnections)
		assert.Equal(t, c.Replicas**c.Plan.ConnectionsPerReplica, *c.Plan.TotalConnections)
		if c.Critical.Tier == "app" {
			continue
		}
		assert.Contains(t, []string{"cluster", "db"}, c.Critical.Tier)
		behind = append(behind, i)
		assert.False(t, c.Agrees, "%d replicas: the critical tier moved behind the app tier, the arithmetic from 2 does not know it", c.Replicas)
		assert.Less(t, *c.Plan.ConnectionsPerReplica, arith[c.Replicas], "%d replicas: a share of the budget, not a whole app server's pool", c.Replicas)
	}
	require.NotEmpty(t, behind, "the premise: the critical tier moves behind the app tier within 2..4")
	for k := 1; k < len(behind); k++ {
		a, b := doc.Counts[behind[k-1]], doc.Counts[behind[k]]
		assert.LessOrEqual(t, *b.Plan.ConnectionsPerReplica, *a.Plan.ConnectionsPerReplica, "more replicas, no larger pools")
		assert.Less(t, *b.Plan.TotalConnections*a.Replicas, *a.Plan.TotalConnections*b.Replicas,
			"%d -> %d replicas: the total does not grow in proportion", a.Replicas, b.Replicas)
	}
}
