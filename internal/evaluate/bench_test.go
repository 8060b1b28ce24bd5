package evaluate

import (
	"context"
	"testing"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/topology"
)

// BenchmarkRecommendCampaign backs section 4 of the evaluation: a whole
// recommend campaign (efficient mode, default trials) on the simulator.
func BenchmarkRecommendCampaign(b *testing.B) {
	for _, topo := range []string{"1/2/1/2", "1/4/1/4"} {
		b.Run(topo, func(b *testing.B) {
			d, err := topology.ParseTopology(topo)
			if err != nil {
				b.Fatal(err)
			}
			cfg := DefaultConfig()
			var experiments int
			for i := 0; i < b.N; i++ {
				rec, c, err := runCampaign(context.Background(), cfg, d, uint64(i+1), algorithms.ModeEfficient, algorithms.DefaultOptions().MinJobsAt)
				if err != nil || c.Error != "" {
					b.Fatal(err, c.Error)
				}
				experiments += rec.Experiments
			}
			b.ReportMetric(float64(experiments)/float64(b.N), "experiments/op")
		})
	}
}
