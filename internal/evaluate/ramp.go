package evaluate

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/topology"
)

// RampRow is the ramp campaign (recommend --ramp) on one topology and
// seed beside today's default campaign (the adaptive staircase), both as
// recommend runs them on the simulator (Config.RampTiming), and the
// default campaign with fixed-length trials (section 2's, the reference's).
type RampRow struct {
	Topology string    `json:"topology"`
	Seed     uint64    `json:"seed"`
	Ramp     Campaign  `json:"ramp"`
	Default  Campaign  `json:"default"`
	Fixed    *Campaign `json:"fixed,omitempty"`
	// Compared are the three answers' maximum goodput over the best of
	// the topology's grid (section 3's), as roles roleRamp, roleDefault and
	// roleFixed; an answer that failed, or a topology whose default
	// campaign failed before its grid, has none.
	Compared []Quality `json:"compared,omitempty"`
}

// The ramp section's roles on a grid. Named recommended-*, so that a grid
// this run measures measures them as finely as the recommendation
// (withAnswers).
const (
	roleRamp    = "recommended-ramp"
	roleDefault = "recommended-default"
)

// ramps says whether this run sets the ramp beside the staircase: a ramp
// measures its windows to a precision, and a fixed-length run (the
// reference) has no adaptive trials to set it beside.
func (cfg Config) ramps() bool { return cfg.Timing.Adaptive() && cfg.RampTiming.Adaptive() }

// rampRun is a topology's ramp row as measured, with the answers to judge.
type rampRun struct {
	row        RampRow
	ramp, dflt algorithms.Allocation // nil: that campaign failed
}

// roles are the ramp's and the default campaign's answers as grid roles.
func (r *rampRun) roles() []role {
	if r == nil {
		return nil
	}
	return []role{{roleRamp, r.ramp}, {roleDefault, r.dflt}}
}

// runRampRow runs recommend --ramp and the default campaign on d with
// cfg.RampTiming, one after the other on this goroutine's thread.
func runRampRow(ctx context.Context, cfg Config, topo string, d algorithms.Deployment, seed uint64) (*rampRun, error) {
	r := &rampRun{row: RampRow{Topology: topo, Seed: seed}}
	rec, c, err := runRampCampaign(ctx, cfg, d, seed, cfg.RampTiming)
	if err != nil {
		return nil, err
	}
	r.row.Ramp = c
	if c.Error == "" {
		r.ramp = rec.Allocation
	}
	rec, c, err = runCampaign(ctx, cfg, d, seed, algorithms.ModeEfficient, algorithms.DefaultOptions().MinJobsAt, cfg.RampTiming)
	if err != nil {
		return nil, err
	}
	r.row.Default = c
	if c.Error == "" {
		r.dflt = rec.Allocation
	}
	return r, nil
}

// runRampCampaign runs recommend --ramp on the simulator as the CLI does
// (runRecommendRamp): the default options, trials of timing t
// (campaignTiming), from 400-150-60. Its simulated time is the ramps'
// (windows and settling, one simulation each) and its confirming trials'.
func runRampCampaign(ctx context.Context, cfg Config, d algorithms.Deployment, seed uint64, t algorithms.Timing) (algorithms.Recommendation, Campaign, error) {
	opts := algorithms.DefaultOptions()
	opts.Timing = campaignTiming(t)
	start, _ := topology.ParseAllocation("400-150-60")
	t0, cpu0 := time.Now(), threadCPUSeconds()
	sx, err := cfg.experimenter(seed)
	if err != nil {
		return algorithms.Recommendation{}, Campaign{}, err
	}
	rp, ok := sx.(algorithms.Ramper)
	if !ok {
		return algorithms.Recommendation{}, Campaign{}, fmt.Errorf("the simulator's runner cannot ramp")
	}
	x := &counting{x: sx}
	rec, camp, err := algorithms.RecommendRamp(ctx, rp, x, d, start, opts)
	c := Campaign{Mode: "ramp", Seed: seed, Experiments: rec.Experiments, WallSeconds: time.Since(t0).Seconds(),
		CPUSeconds: threadCPUSeconds() - cpu0, SimulatedSeconds: camp.Seconds + x.simulated, EngineSeconds: camp.Seconds + x.engine,
		Precision: t.Precision, Imprecise: x.imprecise, Critical: rec.Critical.Tier + "/" + rec.Critical.Resource,
		Saturation: rec.Critical.SaturationWorkload, Predicted: rec.Critical.PredictedSaturation, MinJobs: rec.MinJobs.MinJobs,
		Reading: rec.MinJobs.Reading, Ramps: camp.Ramps, Windows: len(camp.Windows)}
	for _, w := range camp.Windows {
		if w.Observation.Window != nil && !w.Observation.Window.Precise {
			c.Imprecise++
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return rec, c, err
		}
		c.Error = err.Error()
		return rec, c, nil
	}
	if s, ferr := topology.FormatAllocation(rec.Allocation); ferr == nil {
		c.Allocation = s
	}
	return rec, c, nil
}

// judge sets the row's ratios from a ranked comparison holding the ramp's,
// the default's and the fixed campaign's answers (fixed: nil if none).
func (r *rampRun) judge(cmp algorithms.Comparison, fixed algorithms.Allocation, slas []float64) {
	_, r.row.Compared = qualities(cmp, append(r.roles(), role{roleFixed, fixed}), slas)
}

// rampSummary is what the ramp section's prose says of its rows.
type rampSummary struct {
	// Rows counts the rows, Answered those whose ramp answered.
	Rows, Answered int
	// SameCriticalFixed and SameCriticalDefault count the ramp's critical
	// resource equal to the fixed and the default campaign's; SameFixed and
	// SameDefault its allocation.
	SameCriticalFixed, SameCriticalDefault, SameFixed, SameDefault int
	// Judged counts the rows with the ramp's and the fixed answer's ratios;
	// WithinHalf those whose ratios differ by at most half a point at every
	// threshold. MaxDiff is the largest difference (points) and Where
	// names it; MaxShortfall the most the ramp's is below the fixed one's.
	Judged, WithinHalf    int
	MaxDiff, MaxShortfall float64
	Where                 string
	// Seconds simulated (the engine's), wall and CPU, summed over the rows
	// both campaigns answered; DefaultWhole counts refined trials whole.
	RampSim, DefaultSim, DefaultWhole, FixedSim float64
	RampCPU, DefaultCPU, FixedCPU               float64
	RampWall, DefaultWall, FixedWall            float64
	// MaxSimRatio is the largest ramp/default simulated ratio of a row, and
	// AtMostHalf counts the rows at or under 0.5.
	MaxSimRatio float64
	AtMostHalf  int
	Timed       int
}

// rampDiff is the largest difference of the ramp's ratio from the fixed
// answer's over the thresholds (points), where, and the most the ramp's
// is below; ok is false when either lacks ratios.
func rampDiff(row RampRow, slas []string) (diff float64, at string, shortfall float64, ok bool) {
	var ramp, fixed Quality
	for _, q := range row.Compared {
		switch q.Role {
		case roleRamp:
			ramp = q
		case roleFixed:
			fixed = q
		}
	}
	for _, s := range slas {
		v, okR := ramp.Ratio[s]
		w, okF := fixed.Ratio[s]
		if !okR || !okF {
			continue
		}
		if d := 100 * math.Abs(v-w); !ok || d > diff {
			diff, at = d, s
		}
		shortfall = math.Max(shortfall, 100*(w-v))
		ok = true
	}
	return diff, at, shortfall, ok
}

func summarizeRamps(rows []RampRow, slas []string) rampSummary {
	var s rampSummary
	for _, r := range rows {
		s.Rows++
		if r.Ramp.Error != "" {
			continue
		}
		s.Answered++
		if r.Fixed != nil && r.Fixed.Error == "" {
			if r.Ramp.Critical == r.Fixed.Critical {
				s.SameCriticalFixed++
			}
			if r.Ramp.Allocation == r.Fixed.Allocation {
				s.SameFixed++
			}
		}
		if r.Default.Error == "" {
			if r.Ramp.Critical == r.Default.Critical {
				s.SameCriticalDefault++
			}
			if r.Ramp.Allocation == r.Default.Allocation {
				s.SameDefault++
			}
		}
		if d, at, short, ok := rampDiff(r, slas); ok {
			s.Judged++
			if d <= 0.5 {
				s.WithinHalf++
			}
			if d > s.MaxDiff || s.Where == "" {
				s.MaxDiff, s.Where = d, fmt.Sprintf("%s seed %d at %s s", r.Topology, r.Seed, at)
			}
			s.MaxShortfall = math.Max(s.MaxShortfall, short)
		}
		if r.Default.Error != "" {
			continue
		}
		s.Timed++
		s.RampSim += r.Ramp.EngineSeconds
		s.DefaultSim += r.Default.EngineSeconds
		s.DefaultWhole += r.Default.SimulatedSeconds
		s.RampCPU += r.Ramp.CPUSeconds
		s.DefaultCPU += r.Default.CPUSeconds
		s.RampWall += r.Ramp.WallSeconds
		s.DefaultWall += r.Default.WallSeconds
		if r.Fixed != nil {
			s.FixedSim += r.Fixed.EngineSeconds
			s.FixedCPU += r.Fixed.CPUSeconds
			s.FixedWall += r.Fixed.WallSeconds
		}
		if r.Default.EngineSeconds > 0 {
			ratio := r.Ramp.EngineSeconds / r.Default.EngineSeconds
			s.MaxSimRatio = math.Max(s.MaxSimRatio, ratio)
			if ratio <= 0.5 {
				s.AtMostHalf++
			}
		}
	}
	return s
}
