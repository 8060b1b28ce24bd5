//go:build !race

package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type rampDoc struct {
	Critical struct {
		Tier               string `json:"tier"`
		Resource           string `json:"resource"`
		SaturationWorkload int    `json:"saturationWorkload"`
	} `json:"critical"`
	Allocation string `json:"allocation"`
	Ramp       struct {
		Ramps   int   `json:"ramps"`
		Answer  []int `json:"answer"`
		Windows []struct {
			Index      int      `json:"index"`
			Users      int      `json:"users"`
			Allocation string   `json:"allocation"`
			Reused     bool     `json:"reused"`
			Record     string   `json:"record"`
			Throughput float64  `json:"throughput"`
			Saturated  []string `json:"saturated"`
		} `json:"windows"`
		RecommendedGoodput *struct{ Mean float64 } `json:"recommendedGoodput"`
	} `json:"ramp"`
}

// find-critical --ramp names the windows its answer rests on, and run again
// on its journal gives every window from it.
func TestSlowFindCriticalRampNamesItsWindows(t *testing.T) {
	j := filepath.Join(t.TempDir(), "journal.jsonl")
	args := []string{"find-critical", "-t", "1/4/1/4", "--ramp", "-o", "json", "--journal", j, "-q"}
	stdout, stderr, code := run(t, "", args...)
	require.Equal(t, 0, code, stderr)
	var doc rampDoc
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
	assert.Equal(t, "cluster", doc.Critical.Tier)
	assert.Equal(t, "cpu", doc.Critical.Resource)
	require.Len(t, doc.Ramp.Answer, 2)
	below, at := doc.Ramp.Windows[doc.Ramp.Answer[0]], doc.Ramp.Windows[doc.Ramp.Answer[1]]
	assert.Equal(t, doc.Critical.SaturationWorkload, at.Users)
	assert.Less(t, below.Users, at.Users)
	assert.Contains(t, at.Saturated, "cluster-1/cpu")
	assert.NotContains(t, below.Saturated, "cluster-1/cpu")
	for i, w := range doc.Ramp.Windows {
		assert.Equal(t, i, w.Index)
		assert.Equal(t, "400-150-60", w.Allocation)
		assert.False(t, w.Reused)
	}

	again, stderr, code := run(t, "", args...)
	require.Equal(t, 0, code, stderr)
	var doc2 rampDoc
	require.NoError(t, json.Unmarshal([]byte(again), &doc2))
	assert.Equal(t, doc.Critical, doc2.Critical)
	require.Len(t, doc2.Ramp.Windows, len(doc.Ramp.Windows))
	for i, w := range doc2.Ramp.Windows {
		assert.True(t, w.Reused, "window %d is the journal's", w.Index)
		assert.Equal(t, doc.Ramp.Windows[i].Record, w.Record)
	}
	// The windows the answer rests on are records of the journal.
	lines, err := os.ReadFile(j)
	require.NoError(t, err)
	for _, i := range doc.Ramp.Answer {
		require.NotEmpty(t, doc.Ramp.Windows[i].Record)
		assert.Contains(t, string(lines), `"key":"`+doc.Ramp.Windows[i].Record+`"`)
	}

	// The table says it too.
	table, stderr, code := run(t, "", "find-critical", "-t", "1/4/1/4", "--ramp", "--journal", j, "-q")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, table, "rests on window")
}

// recommend --ramp sizes the pools from the ramp and confirms the
// recommendation's goodput in one trial.
func TestSlowRecommendRamp(t *testing.T) {
	stdout, stderr, code := run(t, "", "recommend", "-t", "1/4/1/4", "--ramp", "-o", "json", "--no-journal", "-q")
	require.Equal(t, 0, code, stderr)
	var doc rampDoc
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
	assert.Regexp(t, `^400-150-\d+$`, doc.Allocation)
	require.NotNil(t, doc.Ramp.RecommendedGoodput)
	assert.Greater(t, doc.Ramp.RecommendedGoodput.Mean, 0.0)
}
