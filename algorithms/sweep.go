package algorithms

import (
	"context"
)

// Sweep measures an allocation as configured: it raises the workload by
// Options.Step until throughput stops growing (or Options.MaxWorkload), and
// unlike FindCriticalResource never doubles a saturated pool. It is the
// capacity a CI check compares with a baseline.
func Sweep(ctx context.Context, x Experimenter, d Deployment, a Allocation, opts Options) ([]Trial, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	p := &procedure{x: x, d: d, opts: opts, name: "sweep"}
	// Grown means the interval lies above the last one's (FindCriticalResource).
	tpCurr, tpMax := Interval{}, Interval{Mean: -1}
	for w := opts.Step; tpCurr.Versus(tpMax) == Above && w <= opts.MaxWorkload; w += opts.Step {
		tpMax = tpCurr
		o, _, _, err := p.run(ctx, a, w)
		if err != nil {
			return p.trials, err
		}
		tpCurr = o.ThroughputInterval()
	}
	return p.trials, nil
}

// Capacity summarises trials of one allocation: the highest goodput at the
// SLA and throughput seen, and the first resource to saturate as the
// workload grew.
type Capacity struct {
	// MaxGoodput and MaxThroughput are pages per second.
	MaxGoodput    float64
	MaxThroughput float64
	// FirstSaturated is the first hardware resource to saturate, or else
	// the first pool (the allocation, not the hardware, limits capacity);
	// nil when nothing saturated.
	FirstSaturated *Saturation
	// SaturationWorkload is the workload (users) at which it did.
	SaturationWorkload int
	Experiments        int
}

// MeasureCapacity summarises trials (in workload order) at the SLA (seconds).
func MeasureCapacity(d Deployment, trials []Trial, sla float64, opts Options) Capacity {
	opts = opts.withDefaults()
	c := Capacity{Experiments: len(trials)}
	for _, t := range trials {
		c.MaxGoodput = max(c.MaxGoodput, t.Observation.Goodput(sla))
		c.MaxThroughput = max(c.MaxThroughput, t.Observation.Throughput)
		if c.FirstSaturated != nil {
			continue
		}
		hw, soft := Saturations(d, t.Observation, opts)
		switch {
		case len(hw) > 0:
			c.FirstSaturated = &hw[0]
		case len(soft) > 0:
			c.FirstSaturated = &soft[0]
		default:
			continue
		}
		c.SaturationWorkload = t.Experiment.Workload.Users
	}
	return c
}
