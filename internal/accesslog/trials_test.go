package accesslog

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/internal/runner/live"
	"github.com/softalloc/softalloc/internal/workload"
)

// synth writes a log of users each walking k pages of w from the start.
func synth(w *workload.Workload, users, k int, r *rand.Rand) string {
	var b strings.Builder
	t0 := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	var sb strings.Builder
	for u := 0; u < users; u++ {
		state := w.StartIndex()
		var hist []int
		at := t0
		for step := 0; step < k; step++ {
			p := w.Page(state).Path.Render(r, &sb)
			fmt.Fprintf(&b, "10.0.%d.%d - - [%s.%03d +0000] \"GET %s HTTP/1.1\" 200 1 \"-\" \"ua\" 1000\n", u/250, u%250, at.Format("02/Jan/2006:15:04:05"), at.Nanosecond()/1e6, p)
			at = at.Add(500 * time.Millisecond)
			pg := w.Page(state)
			x := r.Float64()
			to := state
			for j, c := range pg.Cum {
				if x < c {
					to = int(pg.To[j])
					break
				}
			}
			switch to {
			case workload.ToEndOfSession:
				state, hist = w.StartIndex(), hist[:0]
			case workload.ToBack:
				if m := len(hist); m > 0 {
					state, hist = hist[m-1], hist[:m-1]
				}
			default:
				hist = append(hist, state)
				state = to
			}
		}
	}
	return b.String()
}

// TestCutEndsKeepAShortTrialsMix: a load test's trials end its users'
// sessions after a few dozen pages. Taken for users leaving, those ends
// send the inferred chain back to the start page too often (StoriesOfTheDay
// 29.3% against 26.2% in 20-page trials of testbed/workload.yaml); taken
// for cuts (CutEnds), the inferred workload replayed in the same trials
// gives the original's mix (0.4 points at most, measured).
func TestCutEndsKeepAShortTrialsMix(t *testing.T) {
	b, err := os.ReadFile("../../testbed/workload.yaml")
	require.NoError(t, err)
	truth, err := live.ParseWorkload(b)
	require.NoError(t, err)
	const users, pages = 2000, 20
	r := rand.New(rand.NewPCG(3, 3))
	log := synth(truth, users, pages, r)
	lengths := make([]int64, users)
	for i := range lengths {
		lengths[i] = pages
	}
	want, sd, _, _ := walk(truth, lengths, 20)
	for _, cut := range []bool{false, true} {
		in := NewInferrer(Options{CutEnds: cut})
		rd := NewReader(strings.NewReader(log), UnitAuto)
		for {
			e, ok := rd.Next()
			if !ok {
				break
			}
			in.Add(e)
		}
		res, err := in.Finish("trials")
		require.NoError(t, err)
		got := res.Workload
		mix, _, _, _ := walk(got, lengths, 20)
		worst := 0.0
		var sb strings.Builder
		for i, it := range truth.Interactions {
			re := pathPattern(it.Path)
			j := -1
			for g := range got.Interactions {
				if re.MatchString(got.Page(g).Path.Render(r, &sb)) {
					j = g
				}
			}
			require.GreaterOrEqual(t, j, 0, "no template for %s", it.Name)
			d := math.Abs(mix[j] - want[i])
			worst = max(worst, d)
			if cut {
				// Each side's share spreads by sd over 20 repetitions of
				// 40,000 pages; the inferred chain's by its own sample.
				assert.InDelta(t, want[i], mix[j], 0.01+4*sd[i], "%s", it.Name)
			}
		}
		t.Logf("CutEnds %v: the inferred workload in %d-page trials is at most %.2f points off the original's in them", cut, pages, 100*worst)
		if !cut {
			assert.Greater(t, worst, 0.02, "exits taken for users leaving skew a short trial's mix")
		}
	}
}
