package live

import (
	"fmt"
	"math"
	"strconv"
)

// ShareTolerance is how far outside [0, 1] a utilisation (cpu, throttled,
// gcShare, resources.*, a pool's fullShare) may read and still be taken as
// in it, clipped. rate() extrapolates a counter to its window's edges, and
// a scrape reads its target some milliseconds after the timestamp it
// records, so a saturated server can read a little over 1, and 1 - idle a
// little under 0: on windows of two scrapes or more, by well under 5%.
// Beyond it the query is in other units: a CPU in cores (what
// rate(process_cpu_seconds_total) gives) reads up to the host's cores, and
// clipped it read 1.0 where the server was far from saturated.
const ShareTolerance = 0.05

// share reads v, the value query (as sent) gave for field, as a share in
// [0, 1]: within ShareTolerance of it, clipped; else it returns a problem
// naming the query and the value, with a hint (cores is {cores}'s value).
func share(field, query string, v float64, cores string) (float64, string) {
	if v >= -ShareTolerance && v <= 1+ShareTolerance {
		return min(1, max(0, v)), ""
	}
	msg := fmt.Sprintf("query %s read %s, not a share in [0, 1] (within %g of it is clipped, for rate()'s jitter)",
		query, strconv.FormatFloat(v, 'g', -1, 64), ShareTolerance)
	switch {
	case field == "cpu" && v > 1:
		msg += fmt.Sprintf(": does it count cores, as rate(process_cpu_seconds_total) does? divide it by {cores} (%s here)", cores)
	case v > 1:
		msg += ": want a share of the time, not a count or a rate"
	}
	return 0, msg
}

// nonNegative reads v, the value query gave for field (a rate, a time, a
// count of busy units), which cannot be negative: a tiny negative from
// floating-point subtraction reads 0; a real one (a query subtracting the
// wrong series, a gauge read as a counter) is a problem naming the query and
// the value. Read as 0 it said "no pages served" of a window that served them.
func nonNegative(query string, v float64) (float64, string) {
	if v >= -1e-9 || math.IsNaN(v) {
		return max(0, v), ""
	}
	return 0, fmt.Sprintf("query %s read %s: want a number >= 0", query, strconv.FormatFloat(v, 'g', -1, 64))
}
