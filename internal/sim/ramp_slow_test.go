//go:build !race

package sim

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
)

// campaignOptions are the sim CLI's defaults for an adaptive campaign.
func campaignOptions() algorithms.Options {
	o := algorithms.DefaultOptions()
	o.Timing = algorithms.Timing{RampUp: AdaptiveRampUp, Runtime: DefaultTiming().Runtime, Precision: algorithms.DefaultPrecision, SLAs: []float64{o.SLA}}
	return o
}

// campaignRun is one campaign's answer and cost.
type campaignRun struct {
	critical    string
	saturation  int
	minJobs     float64
	allocation  algorithms.Allocation
	experiments int
	windows     int
	simSeconds  float64
	wall        time.Duration
}

func runRampCampaign(t testing.TB, topo string, start algorithms.Allocation, seed uint64) (campaignRun, algorithms.RampCampaign) {
	r := Runner{Seed: seed, Trials: NewTrials(DefaultTrialsBudget)}
	t0 := time.Now()
	rec, camp, err := algorithms.RecommendRamp(context.Background(), r, r, topology(t, topo), start, campaignOptions())
	require.NoError(t, err)
	return campaignRun{critical: rec.Critical.Server + "/" + rec.Critical.Resource, saturation: rec.Critical.SaturationWorkload,
		minJobs: rec.MinJobs.MinJobs, allocation: rec.Allocation, experiments: rec.Experiments, windows: len(camp.Windows),
		simSeconds: camp.Seconds + camp.ConfirmSeconds, wall: time.Since(t0)}, camp
}

func runStaircase(t testing.TB, topo string, start algorithms.Allocation, seed uint64, opts algorithms.Options) campaignRun {
	r := Runner{Seed: seed, Trials: NewTrials(DefaultTrialsBudget)}
	t0 := time.Now()
	var sim float64
	opts.OnTrial = func(tr algorithms.Trial) {
		o := tr.Observation
		sim += o.RuntimeSeconds
		if o.Window != nil {
			sim += o.Window.WarmUpSeconds
		}
	}
	rec, err := algorithms.Recommend(context.Background(), r, topology(t, topo), start, opts)
	require.NoError(t, err)
	return campaignRun{critical: rec.Critical.Server + "/" + rec.Critical.Resource, saturation: rec.Critical.SaturationWorkload,
		minJobs: rec.MinJobs.MinJobs, allocation: rec.Allocation, experiments: rec.Experiments,
		simSeconds: sim, wall: time.Since(t0)}
}

func TestSlowRampExplore(t *testing.T) {
	for _, topo := range []string{"1/2/1/2", "1/4/1/4"} {
		for seed := uint64(1); seed <= 1; seed++ {
			rr, camp := runRampCampaign(t, topo, allocation(t, "400-150-60"), seed)
			fmt.Printf("ramp %s seed %d: %+v confirm %.0f s\n", topo, seed, rr, camp.ConfirmSeconds)
			for _, w := range camp.Windows {
				fmt.Printf("  w%d %d users %s tp %.1f elapsed %.0f\n", w.Index, w.Users, w.Allocation, w.Observation.Throughput, w.Elapsed)
			}
			sr := runStaircase(t, topo, allocation(t, "400-150-60"), seed, campaignOptions())
			fmt.Printf("stair %s seed %d: %+v\n", topo, seed, sr)
		}
	}
}

// TestSlowRampAgainstTheStaircase measures the ramp campaign against the
// adaptive staircase and the fixed staircase (the ground truth) on 1/2/1/2
// and 1/4/1/4, seeds 1-3: SOFTALLOC_RAMP_TABLE=1 prints the table.
func TestSlowRampAgainstTheStaircase(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute of campaigns")
	}
	for _, topo := range []string{"1/2/1/2", "1/4/1/4"} {
		for seed := uint64(1); seed <= 3; seed++ {
			rr, camp := runRampCampaign(t, topo, allocation(t, "400-150-60"), seed)
			sr := runStaircase(t, topo, allocation(t, "400-150-60"), seed, campaignOptions())
			fixed := campaignOptions()
			fixed.Timing = DefaultTiming()
			fixed.Timing.Runtime = 2 * time.Minute
			fr := runStaircase(t, topo, allocation(t, "400-150-60"), seed, fixed)
			fmt.Printf("| %s | %d | %s / %s / %s | %d / %d / %d | %.1f / %.1f / %.1f | %d windows + %d trials / %d / %d | %.0f / %.0f / %.0f | %.1f / %.1f / %.1f | %s / %s / %s |\n",
				topo, seed, rr.critical, sr.critical, fr.critical, rr.saturation, sr.saturation, fr.saturation,
				rr.minJobs, sr.minJobs, fr.minJobs, rr.windows, rr.experiments-camp.Ramps, sr.experiments, fr.experiments,
				rr.simSeconds, sr.simSeconds, fr.simSeconds, rr.wall.Seconds(), sr.wall.Seconds(), fr.wall.Seconds(),
				rr.allocation, sr.allocation, fr.allocation)
		}
	}
}
