package evaluate

import (
	"context"
	"testing"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/sim"
	"github.com/softalloc/softalloc/internal/topology"
)

// BenchmarkRecommendCampaign backs section 6 of the evaluation and issue
// 21's target: the default recommend campaign on the simulator (efficient
// mode), with the default adaptive trials and with --fixed ones (60 s
// warm-up, 12 min measured). `make bench` runs it on one core. Its
// simulated seconds are the trials' whole lengths: a refined trial counts
// in full, though the simulator went on from the coarser one, so
// simulated-s/s is the campaign's pace, not the engine's.
func BenchmarkRecommendCampaign(b *testing.B) {
	for _, topo := range []string{"1/2/1/2", "1/4/1/4"} {
		for _, tc := range []struct {
			name   string
			timing algorithms.Timing
		}{{"adaptive", AdaptiveTiming()}, {"fixed", sim.DefaultTiming()}} {
			b.Run(topo+"/"+tc.name, func(b *testing.B) {
				d, err := topology.ParseTopology(topo)
				if err != nil {
					b.Fatal(err)
				}
				cfg := DefaultConfig()
				var experiments int
				var simulated float64
				for i := 0; i < b.N; i++ {
					rec, c, err := runCampaign(context.Background(), cfg, d, uint64(i+1), algorithms.ModeEfficient, algorithms.DefaultOptions().MinJobsAt, tc.timing)
					if err != nil || c.Error != "" {
						b.Fatal(err, c.Error)
					}
					experiments += rec.Experiments
					simulated += c.SimulatedSeconds
				}
				b.ReportMetric(float64(experiments)/float64(b.N), "experiments/op")
				b.ReportMetric(simulated/float64(b.N), "simulated-s/op")
				b.ReportMetric(simulated/b.Elapsed().Seconds(), "simulated-s/s")
			})
		}
	}
}

// BenchmarkRampCampaign is recommend --ramp on the simulator as the CLI
// runs it (the default adaptive trials), beside BenchmarkRecommendCampaign's
// adaptive staircase on the same topologies and seeds: `make bench` runs
// both in one go, so that their ns/op make a ratio. Its simulated seconds
// are the ramps' (one simulation each, nothing simulated twice) and the
// confirming trial's.
func BenchmarkRampCampaign(b *testing.B) {
	for _, topo := range []string{"1/2/1/2", "1/4/1/4"} {
		b.Run(topo, func(b *testing.B) {
			d, err := topology.ParseTopology(topo)
			if err != nil {
				b.Fatal(err)
			}
			cfg := DefaultConfig()
			var windows int
			var simulated float64
			for i := 0; i < b.N; i++ {
				_, c, err := runRampCampaign(context.Background(), cfg, d, uint64(i+1), AdaptiveTiming())
				if err != nil || c.Error != "" {
					b.Fatal(err, c.Error)
				}
				windows += c.Windows
				simulated += c.SimulatedSeconds
			}
			b.ReportMetric(float64(windows)/float64(b.N), "windows/op")
			b.ReportMetric(simulated/float64(b.N), "simulated-s/op")
			b.ReportMetric(simulated/b.Elapsed().Seconds(), "simulated-s/s")
		})
	}
}
