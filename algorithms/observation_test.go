package algorithms

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// consistent is an observation whose figures agree: 800 pages/s for 10 s,
// 8,000 pages in the histogram with a mean of 0.1125 s.
func consistent() Observation {
	return Observation{
		RuntimeSeconds: 10, Throughput: 800,
		ResponseTimes: Histogram{Buckets: []Bucket{{LE: 0.1, Count: 7000}, {LE: 1, Count: 1000}}, Sum: 900},
		Servers:       []ServerObservation{{Name: "app-1", Tier: "app", CPU: 0.9, Throughput: 800, ResponseTime: 0.1}},
		Errors:        20,
	}
}

// Issue 35: the exec runner journaled observations that contradict
// themselves. Each contradiction is refused with its numbers.
func TestObservationsThatContradictThemselvesAreRefused(t *testing.T) {
	assert.Empty(t, consistent().Problems())
	for _, c := range []struct {
		name string
		edit func(o *Observation)
		want string
	}{
		{"errors no load generator sends", func(o *Observation) { o.Errors = 1e12; o.Throughput = 282; o.ResponseTimes.Buckets[0].Count = 1820 },
			"observation.errors: 1000000000000 failed pages in 10 s is 1e+11 a second, faster than any load generator sends (at most 1e+07 a second); want the count of the window's failed pages"},
		{"a mean above every bucket", func(o *Observation) { o.ResponseTimes.Sum = 70882 * 8000 },
			"observation.responseTimes.sum: 5.67056e+08 s over 8000 pages is a mean of 70882 s, outside the buckets that hold them (0 s to 1 s)"},
		{"a mean below every bucket", func(o *Observation) {
			o.ResponseTimes.Buckets = []Bucket{{LE: 1, Count: 0}, {LE: 2, Count: 8000}}
			o.ResponseTimes.Sum = 80
		}, "a mean of 0.01 s, outside the buckets that hold them (1 s to 2 s)"},
		{"a sum without pages", func(o *Observation) { o.ResponseTimes = Histogram{Sum: 12}; o.Throughput = 0 },
			"observation.responseTimes.sum: 12 s over no pages; want 0"},
		{"a sum without pages, and throughput", func(o *Observation) {
			o.ResponseTimes = Histogram{Buckets: []Bucket{{LE: 1}}, Sum: 12}
			o.Throughput = 0.1
		},
			"observation.responseTimes.sum: 12 s over no pages; want 0"},
		{"throughput the buckets do not hold", func(o *Observation) {
			o.Throughput = 1000
			o.ResponseTimes.Buckets = []Bucket{{LE: 1, Count: 10}}
			o.ResponseTimes.Sum = 1
		},
			"observation.responseTimes: 10 pages in the buckets, but throughput 1000 pages/s over runtimeSeconds 10 is 10000 pages"},
		{"goodput above throughput", func(o *Observation) {
			o.GoodputIntervals = []GoodputInterval{{SLA: 1, Goodput: 8000, HalfWidth: 1}}
			o.ThroughputHalfWidth = 1
			o.Window = &MeasuredWindow{IntervalSeconds: 1, Batches: 10, Precision: 0.02, Precise: true}
		}, "observation.goodput[0].goodput: 8000 pages/s within 1 s is more than the throughput, 800 pages/s; want at most the throughput"},
	} {
		o := consistent()
		c.edit(&o)
		p := o.Problems()
		if assert.Len(t, p, 1, c.name) {
			assert.Contains(t, p[0], c.want, c.name)
		}
		assert.ErrorContains(t, o.Validate(), c.want, c.name)
	}
}

// The rules allow what honest runners produce: a count a page off the
// throughput's (a window's edge, rounding), a mean at a bucket's bound, a
// goodput that rounds above the throughput, an idle window, an outage.
func TestConsistencyRulesAllowRoundingAndEdges(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(o *Observation)
	}{
		{"a page more", func(o *Observation) { o.ResponseTimes.Buckets[1].Count++ }},
		{"4% fewer pages: the window's edges", func(o *Observation) { o.ResponseTimes.Buckets[0].Count -= 320 }},
		{"throughput printed to 3 digits", func(o *Observation) { o.Throughput = 800.4 }},
		{"every page at the last bucket's bound", func(o *Observation) { o.ResponseTimes.Sum = 8000 * 1.0000001 }},
		{"no sum given, the first bucket from 0", func(o *Observation) { o.ResponseTimes.Sum = 0 }},
		{"goodput that rounds above throughput", func(o *Observation) {
			o.GoodputIntervals = []GoodputInterval{{SLA: 2, Goodput: 800.0001}}
		}},
		{"a window without response times (Advise's, from Prometheus)", func(o *Observation) { o.ResponseTimes = Histogram{} }},
		{"an idle window", func(o *Observation) { o.Throughput = 0; o.ResponseTimes = Histogram{}; o.Errors = 0 }},
		{"an outage: errors and no pages", func(o *Observation) { o.Throughput = 0; o.ResponseTimes = Histogram{}; o.Errors = 200000 }},
		{"the simulator's last bucket", func(o *Observation) {
			var r Recorder
			for range 8000 {
				r.Add(0.05)
			}
			r.Add(1e9)
			o.ResponseTimes = r.Histogram()
			o.Throughput = 800.1
		}},
	} {
		o := consistent()
		c.edit(&o)
		assert.Empty(t, o.Problems(), c.name)
	}
}

// Issue 35: a negative page rate read "no pages served (throughput 0)" and a
// negative CPU "at most 0%". Negative figures are invalid, by value.
func TestNegativeFiguresAreNamed(t *testing.T) {
	o := consistent()
	o.Throughput = -3
	o.Servers[0].CPU = -0.25
	assert.Equal(t, []string{
		"observation.throughput: want a number >= 0, got -3",
		"observation.servers[0].cpu: want a number in [0,1], got -0.25",
	}, o.Problems())
}
