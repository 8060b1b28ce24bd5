//go:build !race

package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
)

// Long-running under the race detector (Makefile's second pass runs it).
// A trial refined from a coarser one that ended precise is the trial a
// fresh run at the finer precision gives, to the last digit: below
// saturation, near it, past it, on a goodput-only grid trial and with a
// warm-up MSER did not trust; and the refinement did go on from the
// coarser trial rather than run again.
func TestSlowRefinedTrialIsTheFreshTrial(t *testing.T) {
	for _, tc := range []struct {
		topo, alloc string
		users       int
		goodputOnly bool
	}{
		{"1/2/1/2", "400-150-60", 3000, false},
		{"1/4/1/4", "400-150-8", 6000, false},
		{"1/4/1/4", "400-150-8", 6500, true},
		{"1/1/1/1", "400-22-22", 3250, true},
		{"1/2/1", "400-10-10", 2000, false},
		{"1/1/1/1", "400-150-60", 2750, false},
	} {
		t.Run(tc.topo+" "+tc.alloc, func(t *testing.T) {
			r := Runner{Seed: 3, Trials: NewTrials(DefaultTrialsBudget)}
			went := 0
			var gots, freshes []algorithms.Observation
			for _, p := range []float64{0.16, 0.08, 0.04, 0.02} {
				e := adaptive(t, tc.topo, tc.alloc, tc.users, p, 6*time.Minute)
				e.Timing.GoodputOnly = tc.goodputOnly
				kept := r.Trials.take(trialKey(e), p)
				if kept != nil {
					went++
					r.Trials.keep(trialKey(e), 2*p, kept) // put back: RunExperiment takes it
				}
				got, err := r.RunExperiment(t.Context(), e)
				require.NoError(t, err)
				fresh, _, err := Simulate(t.Context(), nil, e, 3)
				require.NoError(t, err)
				require.Equal(t, fresh, got, "at %g", p)
				gots, freshes = append(gots, got), append(freshes, fresh)
				if !got.Window.Precise {
					break // a trial at its longest window is not refined
				}
			}
			assert.Positive(t, went, "some refinement went on from a kept trial")
			assert.Equal(t, freshes, gots, "going on changed no observation given before")
		})
	}
}
