package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func cells(goodputs ...float64) []Cell {
	var out []Cell
	for i, g := range goodputs {
		out = append(out, Cell{Users: 8 * (i + 1), Throughput: g, Goodput: map[string]float64{"1": g}})
	}
	return out
}

// The rounds' difference is each score's spread; the noise pools the
// spreads; a gap to the best within two noise deviations is not resolved,
// and the page marks it.
func TestScoresCarryTheRoundsSpread(t *testing.T) {
	allocs := []GridAlloc{
		{Role: "best", WebThreads: 150, Children: 5, Rounds: [][]Cell{cells(10, 20), cells(10, 18)}},            // 30 and 28: 29 +- 2
		{Role: "close", WebThreads: 150, Children: 16, Rounds: [][]Cell{cells(9, 20), cells(9, 16)}},            // 29 and 25: 27 +- 4
		{Role: "far", WebThreads: 150, Children: 4, Rounds: [][]Cell{cells(5, 10), cells(5, 10)}},               // 15 +- 0
		{Role: "failed", WebThreads: 400, Children: 200, Errors: []string{"round 1: the OOM killer killed 15"}}, // no cell
	}
	sc := scores(allocs, []string{"1"})
	require.Len(t, sc, 3, "an allocation with no trial has no score")
	got := map[string]Score{}
	for _, s := range sc {
		got[s.Role] = s
	}
	assert.InDelta(t, 29, got["best"].Goodput, 1e-9)
	assert.InDelta(t, 2, got["best"].Spread, 1e-9)
	assert.InDelta(t, 1, got["best"].Share, 1e-9)
	assert.InDelta(t, 27.0/29, got["close"].Share, 1e-9)
	// Spreads 2, 4 and 0: a round's deviation sqrt((4/2 + 16/2 + 0)/3) = 1.826.
	assert.InDelta(t, 1.826, got["far"].Noise, 1e-3)
	assert.False(t, got["close"].Resolved, "a gap of 2 within 2 x 1.826")
	assert.True(t, got["far"].Resolved, "a gap of 14")

	roles := byRole(allocs, []string{"1"})
	require.Len(t, roles, 4)
	assert.InDelta(t, 19, roles[0].MaxGoodput["1"], 1e-9, "the best workload's mean of the rounds")
	assert.InDelta(t, 10.0/19, roles[2].OfBest["1"], 1e-9)

	r := &Report{SLAs: []string{"1"}, Users: []int{8, 16}, Grid: allocs, Scores: sc, ScoresByRole: roles}
	md := r.markdown()
	assert.Contains(t, md, "| close | 27.0 (4.0) | 0.931 ~ |")
	assert.Contains(t, md, "| far | 15.0 (0.0) | 0.517 |")
	assert.Contains(t, md, "The noise, a round's standard deviation of the sum: 1.8 at 1 s.")
	assert.Contains(t, md, "| web.threads=400,app.children=200 | failed | no trial finished |")
	assert.True(t, strings.Contains(md, "failed: round 1: the OOM killer killed 15"), md)
}

// TestIdenticalPoolsAreNotResolvedApart replays the run of 2026-11-28 at
// 0.5 s: recommend and 4 x cores had the same 4 children and differed by
// 3.5 pages/s summed. Half their two spreads (3.0) called the gap real; the
// noise pooled over the grid's five allocations (2.1 a round) does not.
func TestIdenticalPoolsAreNotResolvedApart(t *testing.T) {
	grid := []struct {
		role         string
		mean, spread float64
	}{{"debian", 10.1, 3.2}, {"memory rule", 12.3, 2.7}, {"4 x cores", 14.3, 1.4}, {"recommend", 10.8, 4.6}, {"advise", 11.3, 1.8}}
	var allocs []GridAlloc
	for _, g := range grid {
		allocs = append(allocs, GridAlloc{Role: g.role, WebThreads: 100, Children: 4,
			Rounds: [][]Cell{cells(g.mean + g.spread/2), cells(g.mean - g.spread/2)}})
	}
	got := map[string]Score{}
	for _, s := range scores(allocs, []string{"1"}) {
		got[s.Role] = s
	}
	rec, best := got["recommend"], got["4 x cores"]
	require.Greater(t, best.Goodput-rec.Goodput, (best.Spread+rec.Spread)/2, "the old rule would have called it resolved")
	assert.InDelta(t, 2.1, rec.Noise, 0.05)
	assert.False(t, rec.Resolved)
}

// With more rounds the noise pools each allocation's variance over its
// rounds, and a mean of more rounds resolves a smaller gap.
func TestMoreRoundsResolveASmallerGap(t *testing.T) {
	grid := func(n int) []GridAlloc {
		best, other := GridAlloc{Role: "best"}, GridAlloc{Role: "other"}
		for r := 0; r < n; r++ {
			d := []float64{-1, 1}[r%2] // each round 1 off its mean: a round's deviation near 1
			best.Rounds = append(best.Rounds, cells(20+d))
			other.Rounds = append(other.Rounds, cells(18.5-d))
		}
		return []GridAlloc{best, other}
	}
	two := scores(grid(2), []string{"1"})
	require.Len(t, two, 2)
	assert.InDelta(t, 2, two[1].Spread, 1e-9, "the range of the rounds' sums")
	assert.InDelta(t, 1.414, two[1].Noise, 1e-3, "sample variance 2 over one degree of freedom each")
	assert.False(t, two[1].Resolved, "a gap of 1.5 within 2 x 1.414 x sqrt(2/2)")
	eight := scores(grid(8), []string{"1"})
	assert.Equal(t, 8, eight[1].Rounds)
	assert.InDelta(t, 1.069, eight[1].Noise, 1e-3, "8 squares of 1 over 7 degrees of freedom")
	assert.True(t, eight[1].Resolved, "a gap of 1.5 past 2 x 1.069 x sqrt(2/8)")
}

func TestPoolOfReadsTheAllocationsNotation(t *testing.T) {
	assert.Equal(t, 18, poolOf("web.threads=100,app.children=18", "app.children"))
	assert.Equal(t, 100, poolOf("web.threads=100,app.children=18", "web.threads"))
	assert.Zero(t, poolOf("100-5-5", "app.children"))
}

// The page names the caps the run measured under (the php-fpm tier's went
// from 1 to 0.8 cores and the page still said 1), and a run from before
// they were recorded keeps what it ran at.
func TestThePageNamesTheCapsOfItsRun(t *testing.T) {
	r := &Report{SLAs: []string{"1"}, Caps: "web=0.5 app=0.8 db=0.5", PHPMemoryMiB: 512}
	assert.Contains(t, r.markdown(), "CPU caps web=0.5 app=0.8 db=0.5 cores and 512 MiB")
	r.Caps = ""
	assert.Contains(t, r.markdown(), "CPU caps web=0.5 app=1 db=0.5 cores")
}

// A campaign on longer trials than the grid's says both: recommend read
// minJobs 8.5 on 6 s windows of about 55 pages and 4.2 on 40 s ones.
func TestThePageNamesTheCampaignsTrials(t *testing.T) {
	r := &Report{SLAs: []string{"1"}, Trial: "--fixed --runtime 6s"}
	assert.Contains(t, r.markdown(), "Trials: `--fixed --runtime 6s`")
	r.CampaignTrial = "--fixed --runtime 40s"
	assert.Contains(t, r.markdown(), "The campaign's trials: `--fixed --runtime 40s`")
	assert.Contains(t, r.markdown(), "The grid's trials: `--fixed --runtime 6s`")
}
