package algorithms

import (
	"context"
	"errors"
	"fmt"
	"math"
)

// ErrNoCriticalResource: throughput stopped growing with no hardware resource
// saturated, the multi-bottleneck (or unmonitored) case the paper excludes.
var ErrNoCriticalResource = errors.New("no saturated hardware resource")

// WorkloadBoundError: FindCriticalResource's scan ended because its next
// step would pass Options.MaxWorkload, with throughput still growing and no
// hardware resource saturated yet. A higher bound may find one.
type WorkloadBoundError struct {
	MaxWorkload int
	// Users and Throughput are the last workload measured and its throughput (pages/s).
	Users      int
	Throughput float64
}

func (e *WorkloadBoundError) Error() string {
	return fmt.Sprintf("find-critical: reached the maximum workload of %d users with throughput still growing (%.1f pages/s at %d users); no hardware resource saturated: raise the maximum workload",
		e.MaxWorkload, e.Throughput, e.Users)
}

// Critical is the result of FindCriticalResource.
type Critical struct {
	Tier        string  `json:"tier"`
	Server      string  `json:"server"`
	Resource    string  `json:"resource"`
	Utilization float64 `json:"utilization"`
	// SaturationWorkload is the workload (users) at which it was first saturated.
	SaturationWorkload int `json:"saturationWorkload"`
	// MaxThroughput is the highest throughput (pages/s) seen.
	MaxThroughput float64 `json:"maxThroughput"`
	// PredictedSaturation is the warm start's MVA prediction (users), 0 when none.
	PredictedSaturation int `json:"predictedSaturation,omitempty"`
	// Reserve is the allocation the procedure ended with (S_reserve).
	Reserve Allocation `json:"reserve"`
	// Steps are the workload steps derived before the first step
	// (Options.DeriveSteps), nil when none was.
	Steps *Steps `json:"steps,omitempty"`
	// Saturated lists every saturated hardware resource at that workload.
	Saturated []Saturation `json:"saturated"`
	// Throttled: the critical CPU's usage stayed below the threshold, and
	// its saturation was read from its quota throttling (CPUSaturation)
	// once throughput stopped growing.
	Throttled bool `json:"throttled,omitempty"`
	// OverAllocated: the critical resource (memory, not the CPU) was
	// exhausted by the allocation itself: a smaller allocation at the same
	// workload used less of it and served as much (a warning gives the
	// trials).
	OverAllocated bool     `json:"overAllocated,omitempty"`
	Experiments   int      `json:"experiments"`
	Trials        []Trial  `json:"-"`
	Warnings      []string `json:"warnings,omitempty"`
}

// FindCriticalResource is Algorithm 1's first procedure: raise the workload
// step by step from allocation s0 until throughput stops growing; a saturated
// hardware resource is the answer; a saturated pool first means the
// allocation is too small, so it is doubled.
func FindCriticalResource(ctx context.Context, x Experimenter, d Deployment, s0 Allocation, opts Options) (Critical, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return Critical{}, err
	}
	r := &procedure{x: x, d: d, opts: opts, name: "find-critical"}
	res := Critical{}
	if opts.DeriveSteps.Any() {
		steps, err := deriveSteps(ctx, r, s0)
		if err != nil {
			res.Trials, res.Experiments = r.trials, len(r.trials)
			return res, fmt.Errorf("find-critical: %w", err)
		}
		res.Steps = &steps
		opts = steps.Apply(opts)
		opts.DeriveSteps = StepsToDerive{}
		r.opts = opts
		if opts.OnSteps != nil {
			opts.OnSteps(steps)
		}
	}
	s := s0.Clone()
	workload := opts.Step
	// Throughput has grown when its interval lies above the last one's
	// (Interval.Versus): a rise within the noise is no rise.
	tpCurr, tpMax := Interval{}, Interval{Mean: -1}
	doublings := 0
	// jumpedTo is the workload of a jump past the steps (the warm start's,
	// the plateau probe's), jumpedFrom the last one measured unsaturated
	// before it.
	warmed, jumpedTo, jumpedFrom := false, -1, 0
	var last Observation
	lastUsers, prevUsers := 0, 0
	var lastSoft []Saturation
	var lastSoftThroughput Interval
	// boundAt and boundTp are the workload and throughput where a pool full
	// at saturation was last doubled.
	boundAt, boundTp := -1, Interval{}
	hwTest := func(o Observation) Verdict { return hardwareVerdict(o, opts.HardwareThreshold) }
	probed := false
scan:
	for tpCurr.Versus(tpMax) == Above {
		tpMax = tpCurr
		if workload > opts.MaxWorkload {
			// Throughput grew up to here: the bound, not saturation, ends the scan.
			res.Trials, res.Experiments, res.Reserve = r.trials, len(r.trials), s
			return res, &WorkloadBoundError{MaxWorkload: opts.MaxWorkload, Users: lastUsers, Throughput: tpMax.Mean}
		}
		o, hw, soft, v, err := r.decided(ctx, s, workload, hwTest)
		if err != nil {
			res.Trials, res.Experiments = r.trials, len(r.trials)
			return res, err
		}
		if v == Indistinguishable && o.HasIntervals() {
			res.Warnings = append(res.Warnings, indistinguishableNote("the busiest hardware", workload, busiestInterval(o), opts.HardwareThreshold,
				"decided by the mean"))
		}
		last, lastUsers, prevUsers = o, workload, lastUsers
		// The pseudo-code assigns TP; the loop tests TPcurr: they are one value.
		tpCurr = o.ThroughputInterval()
		res.MaxThroughput = math.Max(res.MaxThroughput, o.Throughput)
		bound := []Saturation(nil)
		if len(hw) > 0 && hw[0].Resource == "cpu" && opts.Mode == ModeEfficient && doublings < opts.MaxDoublings {
			bound = boundingPools(d, o, opts)
			if len(bound) > 0 && boundAt == workload && o.ThroughputInterval().Versus(boundTp.Scaled(flatGrowth)) != Above {
				// The doubled pool fills again and throughput did not
				// grow: past saturation every pool fills, whatever its
				// size; the last doubling is kept, and no more is asked.
				bound = nil
			}
		}
		switch {
		case len(bound) > 0:
			// A pool full when the critical resource saturates bounds
			// what minJobs can read: double it, only it, and measure
			// again at this workload (issue 39: from 5 php-fpm children
			// minJobs read 4.3, from 20 it read 8.6).
			boundAt, boundTp = workload, o.ThroughputInterval()
			doublings++
			s = doubleFull(s, bound)
			res.Warnings = append(res.Warnings, fmt.Sprintf("%s full when %s saturated at %d users: doubled that pool (%s)", joinSaturations(bound), hw[0], workload, s))
			tpCurr, tpMax = Interval{}, Interval{Mean: -1}
		case len(hw) > 0:
			if workload == jumpedTo {
				// The prediction may overshoot: back to the first
				// saturating step, the answer the plain scan gives, by
				// bisection on the step grid between the last workload
				// measured unsaturated and the jump. A step at a time,
				// WordPress's prediction of 23 users against saturation
				// at 14 took nine trials.
				lo := jumpedFrom
				for workload-lo > opts.Step {
					// At least a step above lo, so that a bracket off the
					// step grid still narrows.
					w := lo + max(opts.Step, (workload-lo)/opts.Step/2*opts.Step)
					o2, hw2, _, _, err := r.decided(ctx, s, w, hwTest)
					if err != nil {
						res.Trials, res.Experiments = r.trials, len(r.trials)
						return res, err
					}
					res.MaxThroughput = math.Max(res.MaxThroughput, o2.Throughput)
					if len(hw2) == 0 {
						lo = w
					} else {
						workload, hw = w, hw2
					}
				}
			}
			c := hw[0]
			res.Tier, res.Server, res.Resource, res.Utilization = c.Tier, c.Server, c.Resource, c.Utilization
			res.SaturationWorkload, res.Saturated, res.Reserve = workload, hw, s
			res.Trials, res.Experiments = r.trials, len(r.trials)
			if note, ok := overAllocation(res.Trials, c, s); ok {
				res.OverAllocated = true
				res.Warnings = append(res.Warnings, note)
			}
			if len(hw) > 1 && hw[1].Tier != c.Tier {
				res.Warnings = append(res.Warnings, fmt.Sprintf(
					"more than one tier saturated at %d users (%s at %.2f, %s at %.2f): the paper assumes a single bottleneck",
					workload, c, c.Utilization, hw[1], hw[1].Utilization))
			}
			return res, nil
		case len(soft) > 0:
			if opts.Mode == ModeEfficient && len(lastSoft) > 0 && soft[0].String() == lastSoft[0].String() &&
				o.ThroughputInterval().Versus(lastSoftThroughput.Scaled(flatGrowth)) != Above {
				// Doubling the pool did not raise throughput at the same
				// workload: the full pool is a symptom, the bottleneck is
				// elsewhere (an unmonitored resource, or several at once).
				res.Trials, res.Experiments, res.Reserve = r.trials, len(r.trials), s
				if c, ok := throttledCritical(res, o, workload, opts); ok {
					return c, nil
				}
				return res, fmt.Errorf("find-critical: %s stayed saturated after doubling the allocation and throughput did not grow (%s -> %s pages/s at %d users), with no hardware resource at or above %.2f (busiest: %s)%s: %w",
					soft[0], lastSoftThroughput, o.ThroughputInterval(), workload, opts.HardwareThreshold, busiestHardware(o), thresholdHint(o, opts.HardwareThreshold), ErrNoCriticalResource)
			}
			lastSoft, lastSoftThroughput = soft, o.ThroughputInterval()
			if doublings >= opts.MaxDoublings {
				res.Trials, res.Experiments = r.trials, len(r.trials)
				return res, fmt.Errorf("find-critical: %s still saturated after doubling the allocation %d times", soft[0], doublings)
			}
			doublings++
			if opts.Mode == ModePaper {
				s = s.Scaled(2)
				res.Warnings = append(res.Warnings, fmt.Sprintf("%s saturated at %d users: doubled the allocation", soft[0], workload))
			} else {
				// Only the full pools: one that is not full bounds nothing
				// (issue 39: the web tier's threads were doubled beside
				// the full children).
				s = doubleFull(s, soft)
				res.Warnings = append(res.Warnings, fmt.Sprintf("%s saturated at %d users: doubled that pool (%s)", joinSaturations(soft), workload, s))
			}
			tpCurr, tpMax = Interval{}, Interval{Mean: -1}
			if opts.Mode == ModePaper {
				workload = opts.Step
			}
		default:
			workload += opts.Step
			if opts.Mode == ModeEfficient && !opts.NoWarmStart && !warmed {
				warmed = true
				// Warm start: the utilisation law turns this low-load trial
				// into per-server demands; exact MVA predicts where the
				// busiest resource reaches the threshold. Jump to the step
				// below the prediction.
				pred, err := PredictSaturation(d, o, workload-opts.Step, opts.HardwareThreshold, opts.MaxWorkload)
				if err != nil {
					res.Warnings = append(res.Warnings, fmt.Sprintf("warm start skipped: %v", err))
					break
				}
				res.PredictedSaturation = pred
				if jump := (pred/opts.Step - 1) * opts.Step; jump > workload {
					workload, jumpedTo, jumpedFrom = jump, jump, lastUsers
				}
			}
		}
	}
	if probe := plateauProbe(lastUsers, opts); !probed && opts.Mode == ModeEfficient && probe <= opts.MaxWorkload {
		// A step near the knee of a closed system can rise within the
		// noise while the critical resource still climbs towards the
		// threshold (issue 36: WordPress's php-fpm CPU read 0.87-0.94 when
		// one-user steps stopped rising). Confirm the plateau well past
		// it: a saturated resource there is bisected back to its first
		// saturating step; a rise there resumes the scan.
		probed = true
		res.Warnings = append(res.Warnings, fmt.Sprintf(
			"throughput did not rise from %d to %d users (%s -> %s pages/s) with no hardware resource at %.2f (busiest: %s): a trial at %d users checks the plateau",
			prevUsers, lastUsers, tpMax, tpCurr, opts.HardwareThreshold, busiestHardware(last), probe))
		workload, jumpedTo, jumpedFrom = probe, probe, lastUsers
		tpCurr, tpMax = tpMax, Interval{Mean: -1}
		goto scan
	}
	res.Trials, res.Experiments, res.Reserve = r.trials, len(r.trials), s
	if c, ok := throttledCritical(res, last, lastUsers, opts); ok {
		return c, nil
	}
	return res, fmt.Errorf("find-critical: throughput stopped growing at %d users (%s pages/s, after %s) with no hardware resource at or above %.2f (busiest: %s)%s: %w",
		lastUsers, tpCurr, tpMax, opts.HardwareThreshold, busiestHardware(last), thresholdHint(last, opts.HardwareThreshold), ErrNoCriticalResource)
}

// plateauProbe is the workload at which a plateau read at users is
// confirmed: a quarter more, at least one step, on the step grid.
func plateauProbe(users int, opts Options) int {
	return users + max(opts.Step, (users/4+opts.Step-1)/opts.Step*opts.Step)
}

// PredictSaturation predicts the workload (users) at which the busiest
// server's CPU reaches threshold, from one trial at a low workload: the
// utilisation law gives each server's demand per page (D = U x cores / X),
// the response time law the think time (Z = N/X - R), and exact MVA of that
// closed network the utilisation at every population.
func PredictSaturation(d Deployment, o Observation, users int, threshold float64, bound int) (int, error) {
	if o.Throughput <= 0 || users <= 0 {
		return 0, fmt.Errorf("no throughput at %d users to predict from", users)
	}
	think := ResponseTimeLaw(float64(users), o.Throughput, 0) - o.ResponseTimes.Mean()
	if think < 0 {
		think = 0
	}
	var st []Station
	for _, s := range o.Servers {
		cores := 1
		if t, ok := d.Tier(s.Tier); ok && t.Cores > 0 {
			cores = t.Cores
		}
		if s.CPU > 0 {
			st = append(st, Station{Name: s.Name, Demand: ServiceDemand(s.CPU*float64(cores), o.Throughput), Servers: cores})
		}
	}
	if len(st) == 0 {
		return 0, fmt.Errorf("no server reported CPU use at %d users", users)
	}
	// Beyond twice the asymptotic bound N* the utilisation is ~1 everywhere.
	nStar, _ := MVASaturation(st, think)
	limit := min(bound, max(users+1, int(2*nStar)+1))
	pts, err := MVA(st, think, limit)
	if err != nil {
		return 0, err
	}
	for _, p := range pts {
		for _, u := range p.Utilization {
			if u >= threshold {
				return p.Users, nil
			}
		}
	}
	return 0, fmt.Errorf("no server reaches %.2f below %d users", threshold, limit)
}
