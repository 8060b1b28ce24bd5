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

// The journal of a campaign is a replay campaign: replaying it gives the
// same recommendation with no experiment run.
func TestJournalReplaysToTheSameRecommendation(t *testing.T) {
	dir := t.TempDir()
	j := filepath.Join(dir, "journal.jsonl")
	base := []string{"recommend", "--topology", "1/4/1/4", "--ramp-up", "10s", "--runtime", "20s", "--output", "json"}
	simOut, stderr, code := run(t, "", append(base, "--journal", j)...)
	require.Equal(t, 0, code, stderr)

	replayOut, stderr, code := run(t, "", append(base, "--runner", "replay", "--campaign", j)...)
	require.Equal(t, 0, code, stderr)
	assert.JSONEq(t, simOut, replayOut)

	var doc struct {
		Critical struct{ Tier, Resource string }
		Tiers    []struct {
			Name                 string
			ThreadsPerServer     int
			ConnectionsPerServer *int
			Minimum              *struct{ ThreadsPerServer int }
		}
		Experiments int
		Allocation  string
	}
	require.NoError(t, json.Unmarshal([]byte(simOut), &doc))
	assert.Equal(t, "cluster", doc.Critical.Tier, "C-JDBC CPU is critical on 1/4/1/4")
	assert.Equal(t, "cpu", doc.Critical.Resource)
	assert.Greater(t, doc.Experiments, 5)
	require.Len(t, doc.Tiers, 4)
	assert.Equal(t, 400, doc.Tiers[0].ThreadsPerServer, "the web buffer is kept")
	require.NotNil(t, doc.Tiers[0].Minimum, "with the formula's minimum beside it")

	// A different campaign is not in the recording: a clear error.
	_, stderr, code = run(t, "", "find-critical", "--topology", "1/2/1/2", "--ramp-up", "10s", "--runtime", "20s", "--runner", "replay", "--campaign", j)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "experiment not in the recorded campaign")
	assert.Contains(t, stderr, "no experiment of that topology; topologies: 1/4/1/4")
}

func TestSnippetsInRecommendOutput(t *testing.T) {
	dir := t.TempDir()
	out, stderr, code := run(t, "", "recommend", "--topology", "1/2/1/2", "--ramp-up", "10s", "--runtime", "20s", "--journal", filepath.Join(dir, "j"), "--format", "all")
	require.Equal(t, 0, code, stderr)
	for _, want := range []string{"=== apache: tier web", "MaxRequestWorkers", "=== tomcat: tier app", "maxThreads=", "=== hikari", "maximumPoolSize=", "=== mysql: tier db", "max_connections"} {
		assert.Contains(t, out, want)
	}
	_, stderr, code = run(t, "", "recommend", "--topology", "1/2/1/2", "--format", "nginx")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `"nginx" is not one of`)
}

func TestSimulateOutputs(t *testing.T) {
	args := []string{"simulate", "--topology", "1/2/1/2", "--alloc", "400-150-60", "--alloc", "400-6-6", "--users", "1000,6000", "--ramp-up", "10s", "--runtime", "20s", "--no-journal", "--sla", "0.5,2"}
	out, stderr, code := run(t, "", append(args, "--output", "json")...)
	require.Equal(t, 0, code, stderr)
	var rows []struct {
		Allocation string
		Users      int
		Throughput float64
		Goodput    map[string]float64
		Badput     map[string]float64
		Servers    []struct {
			Name, Tier string
			CPU        float64
			Pools      []struct {
				Name string
				Size int
				Busy float64
			}
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rows))
	require.Len(t, rows, 4)
	assert.Equal(t, "400-150-60", rows[0].Allocation)
	assert.Equal(t, "400-6-6", rows[3].Allocation)
	assert.Equal(t, 6000, rows[3].Users)
	for _, r := range rows {
		assert.InDelta(t, r.Throughput, r.Goodput["2"]+r.Badput["2"], 1e-6, "goodput + badput = throughput")
		assert.LessOrEqual(t, r.Goodput["0.5"], r.Goodput["2"])
		assert.Len(t, r.Servers, 6)
	}
	// The serial run gives the same numbers as the parallel one.
	serial, _, code := run(t, "", append(args, "--output", "json", "--parallel", "1")...)
	require.Equal(t, 0, code)
	assert.JSONEq(t, out, serial)

	csv, _, code := run(t, "", append(args, "--output", "csv")...)
	require.Equal(t, 0, code)
	lines := strings.Split(strings.TrimSpace(csv), "\n")
	require.Len(t, lines, 5)
	assert.True(t, strings.HasPrefix(lines[0], "allocation,users,throughput,goodput@0.5,goodput@2,badput@0.5,badput@2"), lines[0])

	_, stderr, code = run(t, "", "simulate", "--topology", "1/2/1/2", "--users", "5000:4000:100")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "END 4000 is below START 5000")
	_, stderr, code = run(t, "", "simulate", "--topology", "1/2/1/2", "--users", "6000", "--sla", "fast")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `threshold "fast" is not a positive time`)
}

func TestSlowValidateAgainstAGrid(t *testing.T) {
	dir := t.TempDir()
	plot := filepath.Join(dir, "goodput.svg")
	out, stderr, code := run(t, "", "validate", "--topology", "1/2/1/2", "--recommended", "400-15-15", "--users", "5000,6000",
		"--grid-threads", "6,15,50", "--grid-connections", "6,15", "--ramp-up", "10s", "--runtime", "20s", "--journal", filepath.Join(dir, "j"),
		"--output", "json", "--plot", plot)
	require.Equal(t, 0, code, stderr)
	var doc struct {
		Best struct {
			Allocation        string
			MaxGoodput, Ratio float64
		}
		Recommended struct {
			Allocation        string
			MaxGoodput, Ratio float64
		}
		Compared        []struct{ Role, Allocation string }
		Grid            []struct{ Allocation string }
		GridExperiments int
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.Equal(t, "400-15-15", doc.Recommended.Allocation)
	assert.InDelta(t, 1, doc.Best.Ratio, 1e-12)
	assert.LessOrEqual(t, doc.Recommended.Ratio, 1.0)
	assert.Greater(t, doc.Recommended.Ratio, 0.5)
	// recommended, three rules of thumb, and 6-6, 15-6, 15-15, 50-6, 50-15 (6-15 has more connections than threads).
	assert.Len(t, doc.Grid, 8)
	assert.Greater(t, doc.GridExperiments, 8*2, "every trial once, and the screening's re-measures")
	roles := map[string]string{}
	for _, c := range doc.Compared {
		roles[c.Role] = c.Allocation
	}
	assert.Equal(t, "400-150-60", roles["practitioners"])
	assert.Equal(t, "400-200-8", roles["tomcat-defaults"])
	assert.Equal(t, "400-150-3", roles["hikari"])
	svg, err := os.ReadFile(plot)
	require.NoError(t, err)
	assert.Contains(t, string(svg), "<svg")
	assert.Contains(t, string(svg), "recommended 400-15-15")

	// Unscreened, every trial runs once at the precision.
	out, stderr, code = run(t, "", "validate", "--topology", "1/2/1/2", "--recommended", "400-15-15", "--users", "5000,6000",
		"--grid-threads", "6,15,50", "--grid-connections", "6,15", "--ramp-up", "10s", "--runtime", "20s", "--no-journal",
		"--output", "json", "--screening", "0")
	require.Equal(t, 0, code, stderr)
	var plain struct {
		Best            struct{ Allocation string }
		GridExperiments int
	}
	require.NoError(t, json.Unmarshal([]byte(out), &plain))
	assert.Equal(t, 8*2, plain.GridExperiments)
	assert.Equal(t, doc.Best.Allocation, plain.Best.Allocation)
}

// An allocation that fills two roles is measured once and shown in both:
// recommending the practitioners' pools must not hide the practitioners.
func TestValidateShowsEveryRoleOfAnAllocation(t *testing.T) {
	dir := t.TempDir()
	prom := filepath.Join(dir, "validate.prom")
	args := []string{"validate", "--topology", "1/2/1/2", "--recommended", "400-150-60", "--users", "5000",
		"--grid-threads", "150", "--grid-connections", "60", "--ramp-up", "10s", "--runtime", "20s", "--no-journal"}
	out, stderr, code := run(t, "", append(args, "--output", "json", "--metrics-file", prom)...)
	require.Equal(t, 0, code, stderr)
	var doc struct {
		Best     struct{ Allocation string }
		Compared []struct{ Role, Allocation string }
		Grid     []struct {
			Allocation string
			Roles      []string
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	roles := map[string]string{}
	for _, c := range doc.Compared {
		roles[c.Role] = c.Allocation
	}
	assert.Equal(t, "400-150-60", roles["practitioners"])
	require.Len(t, doc.Grid, 3, "400-150-60 once, 400-200-8 and 400-150-3")
	assert.Equal(t, "400-150-60", doc.Grid[0].Allocation)
	assert.Equal(t, []string{"recommended", "practitioners"}, doc.Grid[0].Roles)

	text, err := os.ReadFile(prom)
	require.NoError(t, err)
	for _, role := range []string{"recommended", "practitioners", "tomcat-defaults", "hikari", "best"} {
		assert.Contains(t, string(text), `role="`+role+`"`, "a ratio series for every role, the best's among them")
	}

	out, stderr, code = run(t, "", append(args, "--output", "csv")...)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "1/2/1/2,400-150-60,recommended+practitioners,")
	assert.Contains(t, out, ","+doc.Best.Allocation+",")
}
