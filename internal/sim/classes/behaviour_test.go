//go:build !race

// The seed texts' behaviours on the model, with issue 13's bands. They run
// without the race detector (make test runs them in its second pass); each
// takes well under a second.

package classes

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
)

// seeds are the random seeds each band must hold for.
var seeds = []uint64{1, 2, 3}

// seed000 runs seed 000's workload set 1 (30 light, heavy 0..40 by 5, 4 CPUs,
// no think time) on one setup and returns the light and heavy drops from
// solo at each level, in percent.
func seed000(t *testing.T, s algorithms.ClassSetup, seed uint64) (light, heavy []float64, sc algorithms.DegradationScheme) {
	t.Helper()
	w := Seed000()
	schemes, err := algorithms.DegradationSchemes(context.Background(), Runner{Workload: w, Seed: seed}, w.Description(), algorithms.DegradationOptions{
		Classes: []string{"light", "heavy"}, Swept: "heavy", Levels: []int{0, 5, 10, 15, 20, 25, 30, 35, 40},
		Setups: []algorithms.ClassSetup{s},
	})
	require.NoError(t, err)
	for _, p := range schemes[0].Points {
		light = append(light, 100*p.Class("light").Drop)
		heavy = append(heavy, 100*p.Class("heavy").Drop)
	}
	return light, heavy, schemes[0]
}

// Under processor sharing the light class keeps 30 of 70 equal shares.
func TestBehaviourSeed000ProcessorSharing(t *testing.T) {
	for _, seed := range seeds {
		light, _, _ := seed000(t, algorithms.ClassSetup{Policy: algorithms.PolicyPS}, seed)
		assert.InDelta(t, 100*(1-30.0/70), light[8], 2, "seed %d", seed)
	}
}

// Linux 2.6's 100 ms slice: a light request waits a whole turn of 40 heavy
// slices; the text measured -97..-99% on Linux, FreeBSD and Windows.
func TestBehaviourSeed000RoundRobin100ms(t *testing.T) {
	for _, seed := range seeds {
		light, _, _ := seed000(t, algorithms.ClassSetup{Policy: algorithms.PolicyRR, QuantumSeconds: 0.1}, seed)
		assert.GreaterOrEqual(t, light[8], 95.0, "seed %d", seed)
		assert.LessOrEqual(t, light[8], 99.0, "seed %d", seed)
	}
}

// A Solaris-like 10 ms slice degrades gracefully: -70..-85% at 40 heavy
// (Solaris measured -78%), no step over 30 points. In this model the band
// holds up to about 15 ms at 40 heavy, but only 10 ms keeps the first step
// (0 -> 5 heavy) under 30 points; 20 ms gives -86%
// (TestBehaviourSeed000RoundRobinMeanValue says why).
func TestBehaviourSeed000RoundRobin10ms(t *testing.T) {
	for _, seed := range seeds {
		light, _, _ := seed000(t, algorithms.ClassSetup{Policy: algorithms.PolicyRR, QuantumSeconds: 0.01}, seed)
		assert.GreaterOrEqual(t, light[8], 70.0, "seed %d", seed)
		assert.LessOrEqual(t, light[8], 85.0, "seed %d", seed)
		for i := 1; i < len(light); i++ {
			assert.LessOrEqual(t, light[i]-light[i-1], 30.0, "seed %d: step to %d heavy", seed, 5*i)
			assert.GreaterOrEqual(t, light[i], light[i-1], "seed %d: falls at every step", seed)
		}
	}
}

// Per-class pools with the light pool at strict priority (seed 001's
// mechanism applied to seed 000): the light class does not notice the heavy
// one. The price: with 30 light requests and no think time the 4 CPUs never
// idle for light, so heavy starves (no heavy response at any level).
func TestBehaviourSeed000PriorityPerClassPools(t *testing.T) {
	s := algorithms.ClassSetup{Policy: algorithms.PolicyPriority, PerClassPools: true, Priorities: map[string]int{"light": 1, "heavy": 0}}
	for _, seed := range seeds {
		light, _, sc := seed000(t, s, seed)
		for i, d := range light {
			assert.Less(t, d, 5.0, "seed %d: %d heavy", seed, 5*i)
		}
		last := sc.Points[8].Class("heavy")
		assert.Positive(t, last.Solo)
		assert.Less(t, last.Throughput, 0.01*last.Solo, "seed %d: heavy starves", seed)
	}
}

// A weighted share W for light gives it W of the CPU once heavy has work.
func TestBehaviourSeed000WeightedShare(t *testing.T) {
	for _, W := range []float64{0.2, 0.5, 0.8} {
		s := algorithms.ClassSetup{Policy: algorithms.PolicyWeighted, Weights: map[string]float64{"light": W, "heavy": 1 - W}}
		for _, seed := range seeds {
			light, _, _ := seed000(t, s, seed)
			assert.InDelta(t, 100*(1-W), light[8], 3, "W %g seed %d", W, seed)
		}
	}
}

// seed002 runs seed 002's service on one CPU with or without the selector.
func seed002(t *testing.T, file string, selection bool, rate float64, seed uint64) ClassResult {
	t.Helper()
	w, err := LoadWorkload("testdata/" + file)
	require.NoError(t, err)
	c := &w.Classes[0]
	if !selection {
		c.Selector = nil
	}
	if rate > 0 {
		c.Load.Arrivals.Rate = rate
	}
	return simulate(t, w, seed).Classes[0]
}

// Steady overload at 1.3 x the full approach's capacity (4/s): the baseline's
// queue grows without end (the text: no adequate response, the fastest
// 69 s); the selector keeps most responses within 1 s (the text: over 50%).
func TestBehaviourSeed002SteadyOverload(t *testing.T) {
	for _, seed := range seeds {
		base := seed002(t, "seed002-steady.yaml", false, 0, seed)
		sel := seed002(t, "seed002-steady.yaml", true, 0, seed)
		assert.Less(t, base.Adequacy, 0.02, "seed %d", seed)
		assert.GreaterOrEqual(t, sel.Adequacy, 0.40, "seed %d", seed)
	}
}

// Bursts of 10 s at 1.5 x capacity every 70 s: the text's baseline had about
// 9% adequate, approach selection about 48%.
func TestBehaviourSeed002Bursts(t *testing.T) {
	for _, seed := range seeds {
		base := seed002(t, "seed002-bursty.yaml", false, 0, seed)
		sel := seed002(t, "seed002-bursty.yaml", true, 0, seed)
		assert.LessOrEqual(t, base.Adequacy, 0.10, "seed %d", seed)
		assert.GreaterOrEqual(t, sel.Adequacy, 0.35, "seed %d", seed)
		assert.GreaterOrEqual(t, sel.Adequacy-base.Adequacy, 0.25, "seed %d", seed)
	}
}

// At 0.3 x capacity the selector hardly degrades: the full approach serves
// at least 90% of requests.
func TestBehaviourSeed002LightLoadKeepsTheFullApproach(t *testing.T) {
	for _, seed := range seeds {
		sel := seed002(t, "seed002-steady.yaml", true, 1.2, seed)
		assert.GreaterOrEqual(t, sel.Approaches[0].Share, 0.90, "seed %d", seed)
	}
}

// Seed 004: users ramp into a 15-minute capacity slump. Bounded admission
// (Windows) refuses connections and keeps durations short; unbounded
// (Linux) refuses none and durations grow through the slump; both deliver
// about the same hits/s.
func TestBehaviourSeed004BoundedVersusUnbounded(t *testing.T) {
	for _, seed := range seeds {
		win, err := LoadWorkload("testdata/seed004-bounded.yaml")
		require.NoError(t, err)
		lin, err := LoadWorkload("testdata/seed004-unbounded.yaml")
		require.NoError(t, err)
		rw, rl := simulate(t, win, seed), simulate(t, lin, seed)
		slump := func(r Result) []Bin { return r.Series[30:45] } // minutes 30..44
		var errs, durW, durL float64
		for i := range 15 {
			errs += slump(rw)[i].ErrorsPerSecond
			durW += slump(rw)[i].Duration / 15
			durL += slump(rl)[i].Duration / 15
		}
		assert.Positive(t, errs/15, "seed %d: bounded refuses in the slump", seed)
		for _, b := range slump(rw)[1:] {
			assert.Positive(t, b.ErrorsPerSecond, "seed %d: minute %.0f", seed, b.Start/60)
		}
		assert.LessOrEqual(t, durW, 0.6*durL, "seed %d: slump durations", seed)
		assert.LessOrEqual(t, rw.Classes[0].ResponseTime, 0.6*rl.Classes[0].ResponseTime, "seed %d: run durations", seed)
		assert.Zero(t, rl.ErrorsPerSecond, "seed %d", seed)
		// Rising through the slump: each third's mean above the last.
		third := func(i int) float64 {
			var s float64
			for _, b := range slump(rl)[5*i : 5*i+5] {
				s += b.Duration / 5
			}
			return s
		}
		assert.Less(t, third(0), third(1), "seed %d", seed)
		assert.Less(t, third(1), third(2), "seed %d", seed)
		assert.InEpsilon(t, rl.HitsPerSecond, rw.HitsPerSecond, 0.10, "seed %d", seed)
	}
}

// Seed 001's Fig. 5 (high competition): with the original Tomcat Gold and
// Silver split the server; with Gold's pool at real-time priority Gold gets
// all it asks at the response time it has alone, Silver what is left.
func TestBehaviourSeed001GoldSilver(t *testing.T) {
	w, err := LoadWorkload("testdata/seed001.yaml")
	require.NoError(t, err)
	alone := w.Clone()
	alone.Class("silver").Load.Arrivals.Rate = 0
	soloRun := simulate(t, alone, 1)
	solo := soloRun.Class("gold")
	prio := simulate(t, w, 1)
	w.Server.Policy = policyPS
	ps := simulate(t, w, 1)
	g, s := ps.Class("gold"), ps.Class("silver")
	assert.InEpsilon(t, g.Throughput, s.Throughput, 0.10, "original: an even split")
	assert.Positive(t, g.ErrorsPerSecond, "original: Gold is refused too")
	g, s = prio.Class("gold"), prio.Class("silver")
	assert.InEpsilon(t, 200, g.Throughput, 0.03, "QoS: Gold gets what it asks")
	assert.Zero(t, g.Refused)
	assert.Less(t, g.ResponseTime, 1.5*solo.ResponseTime, "QoS: Gold's response time as if alone")
	assert.Less(t, s.Throughput, 110.0, "QoS: Silver gets the rest")
}

// recommend --workload on seed 000 under Linux's 100 ms slice: per-class pools
// keep light at its objective with 40 heavy, where the shared pool of 150
// misses it; heavy, best effort, loses little.
func TestBehaviourRecommendSeed000(t *testing.T) {
	w, err := LoadWorkload("testdata/seed000-linux.yaml")
	require.NoError(t, err)
	rec, err := algorithms.RecommendClassPools(context.Background(), Runner{Workload: w, Seed: 1}, w.Description(), algorithms.ClassPoolOptions{})
	require.NoError(t, err)
	assert.Equal(t, "cpu", rec.Critical.Resource)
	light, heavy := rec.Classes[0], rec.Classes[1]
	require.Equal(t, "light", light.Name)
	assert.False(t, light.Shared.Met, "shared pool: adequacy %.2f", light.Shared.Adequacy)
	assert.True(t, light.Recommended.Met, "recommended: adequacy %.2f", light.Recommended.Adequacy)
	assert.Equal(t, 4, heavy.MinJobs, "heavy alone saturates 4 CPUs with 4 threads")
	assert.GreaterOrEqual(t, heavy.Pool, heavy.MinJobs)
	assert.Less(t, heavy.Pool, 40)
	assert.Greater(t, heavy.Recommended.Throughput, 0.8*heavy.Shared.Throughput)
	// The scheme at 40 heavy matches the recommendation's own trial.
	require.Len(t, rec.Schemes, 2)
	last := rec.Schemes[1].Points[len(rec.Schemes[1].Points)-1]
	assert.Equal(t, 40, last.Level)
	assert.GreaterOrEqual(t, last.Class("light").Adequacy, 0.9)
	assert.Less(t, rec.Schemes[0].Points[len(rec.Schemes[0].Points)-1].Class("light").Adequacy, 0.9)
	// And the same with a 1 s limit would not show it: the shared pool's
	// light response (one turn of the run queue) is just under 1 s.
	assert.Less(t, light.Shared.ResponseTime, 1.0)
}

// Seed 000's services as memory-bound (testdata/seed000-memory.yaml, a 1 GB
// heap): in the shared pool of 150 the 40 heavy requests hold 800 MB, the
// collector takes most of the CPU, and the light service drops far more
// than processor sharing alone would (-57%) and misses its objective.
// recommend caps the heavy pool where light keeps its objective and heavy
// itself is served best: less collection serves both classes more.
func TestBehaviourRecommendSeed000MemoryBound(t *testing.T) {
	w, err := LoadWorkload("testdata/seed000-memory.yaml")
	require.NoError(t, err)
	shared := simulate(t, w, 1)
	assert.Greater(t, shared.GCShare, 0.4, "shared pool: the collector takes much of the CPU")
	assert.Less(t, shared.Class("light").Throughput, (1-0.7)*4/0.0039, "shared pool: light drops over 70%")
	rec, err := algorithms.RecommendClassPools(context.Background(), Runner{Workload: w, Seed: 1}, w.Description(), algorithms.ClassPoolOptions{})
	require.NoError(t, err)
	light, heavy := rec.Classes[0], rec.Classes[1]
	require.Equal(t, "light", light.Name)
	assert.False(t, light.Shared.Met)
	assert.True(t, light.Recommended.Met, "recommended: adequacy %.2f", light.Recommended.Adequacy)
	assert.Greater(t, heavy.Recommended.Throughput, 1.3*heavy.Shared.Throughput)
	assert.Greater(t, light.Recommended.Throughput, 2*light.Shared.Throughput)

	// Its neighbours serve heavy no better (beyond trial noise), and a pool
	// of all 40 serves it far worse.
	heavyAt := func(p int) *Result {
		c, err := apply(algorithms.ClassSetup{PerClassPools: true, PoolSizes: map[string]int{"heavy": p}}, w)
		require.NoError(t, err)
		r := simulate(t, c, 1)
		return &r
	}
	at := heavyAt(heavy.Pool)
	assert.Less(t, at.GCShare, shared.GCShare/2)
	x := at.Class("heavy").Throughput
	for _, p := range []int{heavy.Pool / 2, heavy.Pool + 6} {
		assert.Less(t, heavyAt(p).Class("heavy").Throughput, 1.1*x, "heavy pool %d", p)
	}
	assert.Less(t, heavyAt(40).Class("heavy").Throughput, 0.75*x)
}

// Round robin from one FIFO run queue has a mean-value form: a request waits
// W in the queue whatever its class, then runs one turn, a light one its
// whole 3.9 ms and a heavy one min(rest, q), of mean E = D(1 - exp(-q/D))
// for an exponential heavy demand of mean D. With the 4 cores always busy,
// 30 x 3.9 ms / (W + 3.9 ms) + H E / (W + E) = 4 fixes W, and the light
// throughput is 30 / (W + 3.9 ms). The simulator must follow it at every
// quantum and level. It also says which quanta can meet issue 13's
// Solaris-like band: -70..-85% at 40 heavy holds for 7.2 <= q <= 18.1 ms, and
// a first step (0 -> 5 heavy) of at most 30 points needs q <= 12.1 ms; at
// 20 ms the drop is -86%. No FIFO round robin meets the band across 10-20 ms;
// TestBehaviourSeed000RoundRobin10ms holds it at 10 ms.
func TestBehaviourSeed000RoundRobinMeanValue(t *testing.T) {
	const light, heavy, cores = 0.0039, 0.4, 4.0
	solo := 30 / (30 * light / cores)
	for _, q := range []float64{0.005, 0.01, 0.015, 0.02, 0.1} {
		e := heavy * (1 - math.Exp(-q/heavy))
		drops, _, _ := seed000(t, algorithms.ClassSetup{Policy: algorithms.PolicyRR, QuantumSeconds: q}, 1)
		want := make([]float64, len(drops))
		for i := range drops {
			h := 5 * float64(i)
			busy := func(w float64) float64 { return 30*light/(w+light) + h*e/(w+e) }
			lo, hi := -light+1e-12, 1e3 // busy falls as W grows
			for range 200 {
				if m := (lo + hi) / 2; busy(m) > cores {
					lo = m
				} else {
					hi = m
				}
			}
			want[i] = 100 * (1 - 30/(lo+light)/solo)
			// At a 100 ms slice a heavy request rejoins a queue that the
			// lights have turned over many times: waits differ by class
			// by a few points' worth at 5 heavy.
			tol := 1.5
			if q >= 0.1 {
				tol = 3.5
			}
			assert.InDelta(t, want[i], drops[i], tol, "rr %g ms, %d heavy", q*1000, 5*i)
		}
		t.Logf("rr %5.1f ms: sim %5.1f\n             mean value %5.1f", q*1000, drops, want)
	}
}
