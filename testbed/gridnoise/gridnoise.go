// Package gridnoise is the evaluation grids' rule for what their
// run-to-run noise can resolve (testbed/wpeval, testbed/rampeval): one
// round's noise pooled over the whole grid, and two means told apart only
// past two standard deviations of their difference.
package gridnoise

import (
	"math"

	"gonum.org/v1/gonum/stat"
)

// Pooled is the standard deviation of one round's figure: each
// allocation's sample variance over its rounds (sums, one slice an
// allocation), pooled by degrees of freedom; 0 with no repeated round.
func Pooled(sums [][]float64) float64 {
	var ss float64
	df := 0
	for _, v := range sums {
		if len(v) < 2 {
			continue
		}
		ss += stat.Variance(v, nil) * float64(len(v)-1)
		df += len(v) - 1
	}
	if df == 0 {
		return 0
	}
	return math.Sqrt(ss / float64(df))
}

// Resolved says whether means a and b of na and nb rounds differ by more
// than two standard deviations of their difference, noise x
// sqrt(1/na + 1/nb). A rule on each pair's own spreads (half their sum)
// was too lenient: two rounds give a spread that is itself a poor
// estimate, and on WordPress two allocations with the same children
// differed by 25% and were called resolved.
func Resolved(a, b float64, na, nb int, noise float64) bool {
	if na == 0 || nb == 0 {
		return false
	}
	return math.Abs(a-b) > 2*noise*math.Sqrt(1/float64(na)+1/float64(nb))
}
