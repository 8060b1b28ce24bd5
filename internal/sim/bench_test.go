package sim

import (
	"context"
	"testing"
)

// benchTrial runs one default fixed trial (the model's warm-up, 12 min
// measured, pools, admission, GC and FIN wait on) per iteration and reports
// the simulator's speed, in events and in simulated seconds per wall second.
func benchTrial(b *testing.B, topo, alloc string, users int) {
	m := DefaultModel()
	e := experiment(b, topo, alloc, users, 0, 0)
	e.Timing = DefaultTiming()
	ctx := context.Background()
	var events, lazy, pages int64
	var simulated float64
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, st, err := Simulate(ctx, m, e, uint64(i+1))
		if err != nil {
			b.Fatal(err)
		}
		events += st.Events
		lazy += st.LazyEvents
		pages += st.Pages + st.WarmUpPages
		simulated += st.SimulatedSeconds
	}
	sec := b.Elapsed().Seconds()
	b.ReportMetric(float64(events)/sec, "events/s")
	b.ReportMetric(float64(events)/float64(pages), "events/page")
	b.ReportMetric(float64(lazy)/float64(pages), "lazy-events/page")
	b.ReportMetric(simulated/sec, "simulated-s/s")
}

// BenchmarkTrial1414 is the speed target: 1/4/1/4 at 7,000 users,
// 400-150-60, default timing.
func BenchmarkTrial1414(b *testing.B) { benchTrial(b, "1/4/1/4", "400-150-60", 7000) }

// BenchmarkTrial1212 is the same on 1/2/1/2.
func BenchmarkTrial1212(b *testing.B) { benchTrial(b, "1/2/1/2", "400-150-60", 7000) }

// BenchmarkTrialUsers shows how a trial grows with the workload (1/4/1/4).
func BenchmarkTrialUsers(b *testing.B) {
	for _, users := range []struct {
		name string
		n    int
	}{{"1k", 1000}, {"10k", 10000}, {"100k", 100000}} {
		b.Run(users.name, func(b *testing.B) { benchTrial(b, "1/4/1/4", "400-150-60", users.n) })
	}
}

// BenchmarkTrialReplicas shows how a trial grows with replicas: 1/16/4/16
// at four times the users of 1/4/1/4.
func BenchmarkTrialReplicas(b *testing.B) { benchTrial(b, "1/16/4/16", "400-150-60", 28000) }
