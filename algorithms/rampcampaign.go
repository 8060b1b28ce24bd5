package algorithms

import (
	"context"
	"fmt"
	"math"
	"sort"
)

// RampCampaign is the evidence of a campaign run as a ramp: every window,
// the ones the answer rests on, and the confirming trials.
type RampCampaign struct {
	Windows []RampWindow `json:"windows"`
	// Ramps counts the ramps run: the first, one more after each doubling
	// of a full pool and after a jump that overshot.
	Ramps int `json:"ramps"`
	// Answer are the indexes in Windows the answer rests on: the last
	// window below saturation and the first at it, on the reserve.
	Answer []int `json:"answer"`
	// Seconds is the time the ramps took, windows and settling, on the
	// runner's clock (simulated seconds on the simulator).
	Seconds float64 `json:"seconds"`
	// RampMinJobs is minJobs as the saturating window reads it (the
	// throughput peak's window when Peak holds windows); the
	// recommendation's is the confirming trial's.
	RampMinJobs float64 `json:"rampMinJobs,omitempty"`
	// Peak are the indexes in Windows of the ramp past saturation that
	// looked for the throughput peak, when the critical server's CPU per
	// request fell with load (demandDrift) and minJobs was read at the
	// peak rather than where the CPU crossed the threshold.
	Peak []int `json:"peak,omitempty"`
	// Confirmations are the confirming trials' goodput at the SLA: at the
	// saturation workload on the reserve and on the recommended allocation.
	ReserveGoodput     *Interval `json:"reserveGoodput,omitempty"`
	RecommendedGoodput *Interval `json:"recommendedGoodput,omitempty"`
	ConfirmSeconds     float64   `json:"confirmSeconds,omitempty"`
}

// rampFlatWindows are the windows of throughput that has not grown after
// which a ramp with no saturated resource ends (a rise within the noise is
// no rise, and one window's step is small).
const rampFlatWindows = 3

// A window that decides nothing to the campaign's precision is measured to
// looseFactor times it (at most maxLoosePrecision): the low-load windows
// that only predict where the ramp jumps (the utilisation law's demands
// move the jump by the throughput's error, well inside the step below the
// prediction it leaves), and the plateau probe, which asks whether a
// quarter more load saturated a resource or raised throughput by more than
// the noise. On the simulator the window at 500 users took 100-330 of a
// ramp's 400-1,700 simulated seconds, and the probe past 1/6/2/6 seed 2's
// plateau ran to its longest window, 730 s, its transient never trusted.
const (
	looseFactor       = 2.5
	maxLoosePrecision = 0.2
)

// LoosePrecision is the precision of a ramp's windows that decide nothing
// to the campaign's precision p (looseFactor).
func LoosePrecision(p float64) float64 { return min(maxLoosePrecision, looseFactor*p) }

// withPrecision gives every step of next without a precision of its own
// the campaign's, p: a ramp whose first window was measured to another
// goes on at p.
func withPrecision(p float64, next func(RampWindow) (RampStep, error)) func(RampWindow) (RampStep, error) {
	return func(w RampWindow) (RampStep, error) {
		st, err := next(w)
		if st.Users > 0 && st.Precision == 0 {
			st.Precision = p
		}
		return st, err
	}
}

// FindCriticalRamp is FindCriticalResource as one continuous ramp: from
// Options.Step users (a low load whose utilisation law predicts where the
// busiest resource saturates, the warm start), the ramp jumps to a scan
// span below the prediction and rises by Options.SmallStep, one window per
// level, until a hardware resource saturates (the answer) or throughput
// stops growing. A pool that is full in a window before the critical
// resource saturates, or full in a tenth of the window where it does
// (boundingFullShare), bounds what the critical server can hold: that pool
// alone is doubled, and a new ramp goes on from that workload (two small
// steps below it when the critical resource had saturated too).
//
// The steps Options.DeriveSteps names come from where the staircase's do
// (deriveSteps), without a trial of their own: with the step to derive, the
// ramp starts at FirstTrialUsers and its first window (and one more at a
// fifth of the prediction when that was far below it) predicts the
// saturation; the step is an eleventh of it and the small step, the rise
// per level, a fifth of the step. No level passes Options.MaxWorkload: the
// last one below it is followed by a level at it.
func FindCriticalRamp(ctx context.Context, rp Ramper, d Deployment, s0 Allocation, opts Options) (Critical, RampCampaign, error) {
	opts = opts.withDefaults()
	var camp RampCampaign
	if err := opts.validate(); err != nil {
		return Critical{}, camp, err
	}
	timing := opts.Timing
	if !timing.Adaptive() {
		return Critical{}, camp, fmt.Errorf("find-critical: a ramp measures each window to a precision: want adaptive timing, got fixed trials")
	}
	res := Critical{}
	s := s0.Clone()
	from := opts.Step
	// deriving: the step is still to be predicted from the first windows,
	// firstWindows their workloads.
	deriving := opts.DeriveSteps.Step
	var firstWindows []int
	useSteps := func(st Steps) {
		res.Steps = &st
		opts = st.Apply(opts)
		opts.DeriveSteps = StepsToDerive{}
		if opts.OnSteps != nil {
			opts.OnSteps(st)
		}
	}
	switch {
	case deriving:
		from = min(FirstTrialUsers(d), opts.MaxWorkload)
	case opts.DeriveSteps.Any():
		// A step given: the others follow it with no window.
		st, err := followSteps(Steps{Step: opts.Step, SmallStep: opts.SmallStep, ScanSpan: opts.ScanSpan}, opts.DeriveSteps, "", opts.MaxWorkload)
		if err != nil {
			return res, camp, fmt.Errorf("find-critical: %w", err)
		}
		useSteps(st)
	}
	doublings, warmed := 0, false
	var lastSoft string
	stuckNoted := false
	var lastSoftTp Interval
	var trials []Trial
	// The plateau probe (plateauProbe, as find-critical's): probeAt is its
	// level once taken, plateauAt the flat level it confirms; a ramp that
	// ends at the probe goes on from plateauAt, and flat windows end none
	// below the probe (flatFrom), where a resource saturated.
	probeAt, plateauAt, flatFrom := 0, 0, 0
	loose := LoosePrecision(timing.Precision)
	for {
		camp.Ramps++
		first := len(camp.Windows)
		best, flat := Interval{Mean: -1}, 0
		var action string // what ended this ramp: "answer", "double", "back", "flat", "bound"
		var stop error
		atProbe := false // this ramp ended at the plateau probe's window
		ramp := Ramp{Deployment: d, Allocation: s, From: from, Timing: timing}
		if camp.Ramps == 1 && (deriving || (opts.Mode == ModeEfficient && !opts.NoWarmStart)) {
			// Its first window only predicts where the ramp jumps.
			ramp.Timing.Precision = loose
		}
		err := rp.RunRamp(ctx, ramp, withPrecision(timing.Precision, func(w RampWindow) (RampStep, error) {
			w.Index, w.Allocation = len(camp.Windows), s.String()
			camp.Windows = append(camp.Windows, w)
			camp.Seconds += w.Elapsed
			o := w.Observation
			hw, soft := Saturations(d, o, opts)
			jumped := len(camp.Windows)-first >= 2 && w.Users-camp.Windows[len(camp.Windows)-2].Users > opts.SmallStep
			if len(hw) > 0 {
				// Memory that larger pools exhaust is no reason to double
				// them (overAllocation): only a CPU's queue is bounded.
				soft = nil
				if hw[0].Resource == "cpu" {
					soft = boundingPools(d, o, opts)
					if len(camp.Windows)-first >= 2 && !jumped {
						// Judged where minJobs is read (RecommendRamp).
						soft = boundingPoolsAtThreshold(d, camp.Windows[len(camp.Windows)-2].Observation, o, hw[0], opts)
					}
				}
			}
			t := Trial{Procedure: "ramp", Experiment: Experiment{Deployment: d, Allocation: s.Clone(), Workload: Workload{Users: w.Users}, Timing: timing}, Observation: o}
			for _, x := range append(append([]Saturation{}, hw...), soft...) {
				t.Saturated = append(t.Saturated, x.String())
			}
			trials = append(trials, t)
			if opts.OnTrial != nil {
				opts.OnTrial(t)
			}
			res.MaxThroughput = math.Max(res.MaxThroughput, o.Throughput)
			tp := o.ThroughputInterval()
			atProbe = jumped && w.Users == probeAt
			switch {
			case len(hw) > 0 && len(soft) > 0 && doublings < opts.MaxDoublings && !atProbe:
				// (At the probe, well past the plateau, every pool may fill:
				// the ramp from the plateau reads them where it saturates.)
				action = "double"
				s = doubleFull(s, soft)
				doublings++
				res.Warnings = append(res.Warnings, fmt.Sprintf("%s full at %d users when %s saturated: doubled that pool (%s) and ramped again",
					joinSaturations(soft), w.Users, hw[0], s))
				from = max(opts.SmallStep, w.Users-2*opts.SmallStep)
				return RampStep{}, nil
			case len(hw) > 0 && jumped:
				// The warm start's jump overshot: ramp again from a scan span below.
				action = "back"
				from = max(opts.SmallStep, (w.Users-opts.ScanSpan)/opts.SmallStep*opts.SmallStep)
				return RampStep{}, nil
			case len(hw) > 0:
				action = "answer"
				c := hw[0]
				res.Tier, res.Server, res.Resource, res.Utilization = c.Tier, c.Server, c.Resource, c.Utilization
				res.SaturationWorkload, res.Saturated = w.Users, hw
				camp.Answer = []int{w.Index}
				if w.Index > first {
					camp.Answer = []int{w.Index - 1, w.Index}
				}
				if len(hw) > 1 && hw[1].Tier != c.Tier {
					res.Warnings = append(res.Warnings, fmt.Sprintf(
						"more than one tier saturated at %d users (%s at %.2f, %s at %.2f): the paper assumes a single bottleneck",
						w.Users, c, c.Utilization, hw[1], hw[1].Utilization))
				}
				return RampStep{}, nil
			case len(soft) > 0 && lastSoft == soft[0].String() && tp.Versus(lastSoftTp.Scaled(flatGrowth)) != Above:
				// Doubled, still full, and throughput did not grow: the pool
				// is not what bounds it here. The ramp goes on rising (a
				// staircase gave up here from an under-allocated start);
				// throughput that stays flat ends it below.
				if !stuckNoted {
					stuckNoted = true
					res.Warnings = append(res.Warnings, fmt.Sprintf("%s stayed full after doubling it and throughput did not grow (%s -> %s pages/s at %d users): not doubled again at that level; the ramp went on",
						soft[0], lastSoftTp, tp, w.Users))
				}
			case len(soft) > 0:
				if doublings >= opts.MaxDoublings {
					stop = fmt.Errorf("find-critical: %s still saturated after doubling %d times", soft[0], doublings)
					return RampStep{}, nil
				}
				action = "double"
				lastSoft, lastSoftTp = soft[0].String(), tp
				s = doubleFull(s, soft)
				doublings++
				res.Warnings = append(res.Warnings, fmt.Sprintf("%s saturated at %d users: doubled that pool (%s)", joinSaturations(soft), w.Users, s))
				from = w.Users
				return RampStep{}, nil
			}
			if tp.Versus(best) == Above {
				best, flat = tp, 0
			} else if flat++; flat >= rampFlatWindows && w.Users >= flatFrom {
				if probe := plateauProbe(w.Users, opts); probeAt == 0 && opts.Mode == ModeEfficient && probe <= opts.MaxWorkload {
					// Small steps near the knee can rise within the noise
					// while the critical resource still climbs (issue 39:
					// 1/6/2/6 seed 2 stopped at 12,300 users, cluster-2's
					// CPU at 0.93): confirm the plateau well past it, as
					// find-critical does. A rise there resumes the ramp.
					probeAt, plateauAt = probe, w.Users
					res.Warnings = append(res.Warnings, fmt.Sprintf(
						"throughput did not rise over %d windows up to %d users (%s pages/s, best %s) with no hardware resource at %.2f (busiest: %s): a window at %d users checks the plateau",
						flat, w.Users, tp, best, opts.HardwareThreshold, busiestHardware(o), probe))
					return RampStep{Users: probe, Precision: loose}, nil
				}
				action = "flat"
				return RampStep{}, nil
			}
			if deriving {
				pred, err := PredictSaturation(d, o, w.Users, opts.HardwareThreshold, opts.MaxWorkload)
				if err != nil {
					stop = fmt.Errorf("find-critical: %w from a window at %s: %w", ErrStepsNotDerived, usersList([]int{w.Users}), err)
					return RampStep{}, nil
				}
				firstWindows = append(firstWindows, w.Users)
				// As deriveSteps: a window far below the prediction read
				// CPU shares too small to trust; one more at a fifth of it.
				if next := min(pred/5, opts.MaxWorkload); len(firstWindows) == 1 && pred > refineBelow*w.Users && next > w.Users {
					return RampStep{Users: next, Precision: loose}, nil
				}
				deriving, warmed = false, true
				st := Steps{Step: max(1, roundDiv(pred, stepsPerSaturation)), SmallStep: opts.SmallStep, ScanSpan: opts.ScanSpan,
					FirstTrials: firstWindows, PredictedSaturation: pred}
				st, err = followSteps(st, opts.DeriveSteps, fmt.Sprintf("derived from the ramp's first windows at %s: predicted saturation %d users; the step is 1/%d of it",
					usersList(firstWindows), pred, stepsPerSaturation), opts.MaxWorkload)
				if err != nil {
					stop = fmt.Errorf("find-critical: %w", err)
					return RampStep{}, nil
				}
				useSteps(st)
				res.PredictedSaturation = pred
				// The warm start's jump, a step below the prediction; without
				// it, on to the step, where the staircase starts.
				next := max(w.Users+opts.SmallStep, opts.Step)
				if opts.Mode == ModeEfficient && !opts.NoWarmStart {
					next = max(w.Users+opts.SmallStep, (pred-opts.Step)/opts.SmallStep*opts.SmallStep)
				}
				return RampStep{Users: min(opts.MaxWorkload, next)}, nil
			}
			next := w.Users + opts.SmallStep
			if !warmed && opts.Mode == ModeEfficient && !opts.NoWarmStart {
				warmed = true
				pred, err := PredictSaturation(d, o, w.Users, opts.HardwareThreshold, opts.MaxWorkload)
				if err != nil {
					res.Warnings = append(res.Warnings, fmt.Sprintf("warm start skipped: %v", err))
				} else {
					res.PredictedSaturation = pred
					next = max(next, (pred-opts.Step)/opts.SmallStep*opts.SmallStep)
				}
			}
			if next > opts.MaxWorkload && w.Users < opts.MaxWorkload {
				next = opts.MaxWorkload // the last level is the bound itself
			}
			if next > opts.MaxWorkload {
				action = "bound"
				stop = &WorkloadBoundError{MaxWorkload: opts.MaxWorkload, Users: w.Users, Throughput: o.Throughput}
				return RampStep{}, nil
			}
			return RampStep{Users: next}, nil
		}))
		res.Trials, res.Experiments, res.Reserve = trials, camp.Ramps, s
		if err == nil {
			err = stop
		}
		if err != nil {
			return res, camp, err
		}
		if atProbe && (action == "back" || action == "double") {
			// Past the probe's jump: ramp again from the plateau, and to
			// the probe at least, where something saturated or filled.
			from, flatFrom = plateauAt, probeAt
		}
		switch action {
		case "answer":
			if note, ok := overAllocation(res.Trials, Saturation{Server: res.Server, Tier: res.Tier, Resource: res.Resource}, s); ok {
				res.OverAllocated = true
				res.Warnings = append(res.Warnings, note)
			}
			return res, camp, nil
		case "flat":
			last := camp.Windows[len(camp.Windows)-1]
			if c, ok := throttledCritical(res, last.Observation, last.Users, opts); ok {
				return c, camp, nil
			}
			return res, camp, fmt.Errorf("find-critical: throughput stopped growing at %d users (%s pages/s) with no hardware resource at or above %.2f (busiest: %s)%s: %w",
				last.Users, last.Observation.ThroughputInterval(), opts.HardwareThreshold, busiestHardware(last.Observation),
				thresholdHint(last.Observation, opts.HardwareThreshold), ErrNoCriticalResource)
		case "":
			return res, camp, fmt.Errorf("find-critical: the ramp ended before a decision")
		}
	}
}

// doubleFull doubles the pools that are full, only them: a pool that is not
// full bounds nothing, and doubling it would change what the campaign
// measures for no reason (on a PHP stack the web tier's threads were
// doubled beside the full children).
func doubleFull(a Allocation, full []Saturation) Allocation {
	b := a.Clone()
	for _, f := range full {
		p, ok := b[f.Tier]
		if !ok {
			continue
		}
		switch f.Resource {
		case PoolConnections:
			if p.Connections > 0 && p.Connections == a[f.Tier].Connections {
				p.Connections *= 2
			}
		default: // threads, children: the tier's units
			if p.Threads > 0 && p.Threads == a[f.Tier].Threads {
				p.Threads *= 2
			}
		}
		b[f.Tier] = p
	}
	return b
}

// boundingFullShare is the share of a window in which a pool full when the
// critical CPU saturates bounds the jobs that reach it: far below the soft
// threshold (a pool full half the time), a pool full a twentieth of it
// already clips the queue minJobs reads. On the simulator's 1/2/1/2 at the
// threshold, 20 app threads were full in 0.39-0.41 of the window and
// minJobs read 30 jobs, 40 threads in 0.06-0.08 and 38, 80 threads and
// 150 in 0.00 and 41-42; 60 connections, full in GC pauses, 0.01-0.03.
const boundingFullShare = 0.05

// boundingPools are the pools of the allocation that were full in at least
// boundingFullShare of o's window (a pool whose full share is not measured:
// busy at the hardware threshold).
func boundingPools(d Deployment, o Observation, opts Options) []Saturation {
	var out []Saturation
	for _, s := range o.Servers {
		tier, ok := d.Tier(s.Tier)
		for _, p := range s.Pools {
			if !ok || !tier.HasPool(p.Name) || p.Size <= 0 {
				continue
			}
			full := p.FullShare >= boundingFullShare
			if p.FullShare < 0 {
				full = p.Utilization() >= opts.HardwareThreshold
			}
			if full {
				out = append(out, Saturation{s.Name, s.Tier, p.Name, p.Utilization(), false})
			}
		}
	}
	return out
}

// boundingPoolsAtThreshold is boundingPools where the critical CPU crit
// reaches the threshold, between the window below it (the same allocation,
// a small step down) and o at it, where RecommendRamp reads minJobs: a
// measured full share is taken that share of the way from below's to o's.
// On the simulator's 1/1/1/1, 60 connections full in GC pauses in 0.11-0.12
// of the window a small step past the threshold and 0.006-0.014 of the one
// below were doubled, and the second ramp moved minJobs by a job at most.
// Without the critical CPU below the threshold in below: boundingPools.
func boundingPoolsAtThreshold(d Deployment, below, o Observation, crit Saturation, opts Options) []Saturation {
	f, ok := 0.0, false
	for _, s := range below.Servers {
		if s.Name == crit.Server {
			f, ok = thresholdShare(s.CPU, crit.Utilization, opts.HardwareThreshold)
		}
	}
	if !ok {
		return boundingPools(d, o, opts)
	}
	fb := map[[2]string]float64{}
	for _, s := range below.Servers {
		for _, p := range s.Pools {
			fb[[2]string{s.Name, p.Name}] = p.FullShare
		}
	}
	at := o
	at.Servers = make([]ServerObservation, len(o.Servers))
	for i, s := range o.Servers {
		s.Pools = append([]PoolObservation(nil), s.Pools...)
		for j, p := range s.Pools {
			if b, ok := fb[[2]string{s.Name, p.Name}]; ok && b >= 0 && p.FullShare >= 0 {
				s.Pools[j].FullShare = b + f*(p.FullShare-b)
			}
		}
		at.Servers[i] = s
	}
	return boundingPools(d, at, opts)
}

func joinSaturations(s []Saturation) string {
	names := make([]string, len(s))
	for i, x := range s {
		names[i] = x.String()
	}
	return joinAnd(names)
}

// RecommendRamp is Recommend on a ramp: FindCriticalRamp gives the
// critical resource and the saturation workload, and the first window on
// the reserve at saturation, measured to the campaign's precision, gives
// minJobs and every tier's throughput and response time; then one
// confirming trial of the recommended allocation at that workload
// measures its goodput beside the reserve's window.
func RecommendRamp(ctx context.Context, rp Ramper, x Experimenter, d Deployment, s0 Allocation, opts Options) (Recommendation, RampCampaign, error) {
	var rec Recommendation
	c, camp, err := FindCriticalRamp(ctx, rp, d, s0, opts)
	rec.Critical, rec.Experiments = c, camp.Ramps
	if err != nil {
		return rec, camp, err
	}
	opts = opts.withDefaults()
	// The reserve's windows by workload (a jump's window, measured before
	// the ramp that went back below it, comes after it in the trials).
	var ws []rampLevel
	for _, t := range c.Trials {
		if t.Experiment.Allocation.Key() == c.Reserve.Key() {
			ws = append(ws, rampLevel{t.Experiment.Workload.Users, t.Observation})
		}
	}
	sortLevels(ws)
	points := levelPoints(ws, c)
	i, _, ok := readAtSaturation(points, opts.HardwareThreshold)
	if !ok {
		return rec, camp, fmt.Errorf("infer-min-jobs: no window of the reserve %s read %s/%s at or above %.2f", c.Reserve, c.Server, c.Resource, opts.HardwareThreshold)
	}
	// The saturating window is measured to the campaign's precision, pools
	// included, in the steady state the ramp passed through.
	sat, satUsers := ws[i].o, ws[i].users
	camp.RampMinJobs = LittlesLaw(points[i].CriticalThroughput, points[i].CriticalResponseTime)
	// Read where the staircase reads it (ReadAtSaturation): the smallest
	// workload, here the first window, with the critical resource saturated.
	m := MinJobs{WLmin: satUsers, MinJobs: camp.RampMinJobs, Reading: string(ReadAtSaturation), Points: points}
	var peakTrials []Trial
	if drift := levelsDemandDrift(ws, i, c, opts); drift != "" {
		// The utilisation law failed, as the staircase checks it
		// (bisectSaturation): saturation is where throughput stops
		// growing. On the live Go testbed the ramp read minJobs 3.8 where
		// the app's CPU crossed 0.95 at 100 users, and its 100-4-4 reached
		// 0.22-0.73 of the staircases' 100-20-20, read at the peak.
		more, trials, err := rampToPeak(ctx, rp, d, c.Reserve, ws[len(ws)-1].users, sat.ThroughputInterval(), opts, &camp)
		peakTrials = trials
		if err != nil {
			m.Trials, m.Experiments = peakTrials, len(peakTrials)
			rec.MinJobs, rec.Experiments = m, camp.Ramps
			return rec, camp, err
		}
		ws = append(ws, more...)
		sortLevels(ws)
		points = levelPoints(ws, c)
		warnings := []string{drift}
		// A pool full at the peak may be what ends the growth there: the
		// peak's is where the critical resource saturates, and a pool full
		// there bounds what minJobs reads (issue 39). On the live Go
		// testbed the ramp's peak on 10 connections, full at 9.6-9.7,
		// stopped at 276 pages/s, where the fixed staircase on 20 served
		// 344 at 190 users and 385 at 230. Past saturation every pool of
		// the simulator's batching fake fills too, its peak unmoved: so
		// the doubled pools ramp again from the peak's workload and are
		// kept only if throughput rises past the peak's by more than its
		// noise.
		for doubled := 0; doubled < opts.MaxDoublings; doubled++ {
			top := peakIndex(points)
			full := boundingPools(d, ws[top].o, opts)
			next := doubleFull(c.Reserve, full)
			if len(full) == 0 || next.Key() == c.Reserve.Key() {
				break
			}
			peak, peakUsers := ws[top].o.ThroughputInterval(), ws[top].users
			more, trials, err := rampToPeak(ctx, rp, d, next, peakUsers-opts.SmallStep, peak, opts, &camp)
			peakTrials = append(peakTrials, trials...)
			if err != nil {
				m.Trials, m.Experiments = peakTrials, len(peakTrials)
				rec.MinJobs, rec.Experiments = m, camp.Ramps
				return rec, camp, err
			}
			if len(more) == 0 {
				break
			}
			morePoints := levelPoints(more, c)
			j := peakIndex(morePoints)
			if more[j].o.ThroughputInterval().Versus(peak.Scaled(flatGrowth)) != Above {
				warnings = append(warnings, fmt.Sprintf("%s full at the throughput peak (%d users, %s pages/s): doubled (%s), the peak rose no more than the noise (%s pages/s at %d users): minJobs read on %s",
					joinSaturations(full), peakUsers, peak, next, more[j].o.ThroughputInterval(), more[j].users, c.Reserve))
				break
			}
			warnings = append(warnings, fmt.Sprintf("%s full at the throughput peak (%d users, %s pages/s): doubled that pool (%s), and the peak rose to %s pages/s at %d users",
				joinSaturations(full), peakUsers, peak, next, more[j].o.ThroughputInterval(), more[j].users))
			c.Reserve, rec.Critical.Reserve = next, next
			ws, points = more, morePoints
		}
		i = kneeIndex(points)
		sat, satUsers = ws[i].o, ws[i].users
		camp.RampMinJobs = LittlesLaw(points[i].CriticalThroughput, points[i].CriticalResponseTime)
		m = MinJobs{WLmin: satUsers, MinJobs: camp.RampMinJobs, Reading: "throughput-peak", Points: points, Warnings: warnings}
	}
	rec.Experiments = camp.Ramps
	if err := m.measure(d, sat, c); err != nil {
		m.Trials, m.Experiments = peakTrials, len(peakTrials)
		rec.MinJobs = m
		return rec, camp, err
	}
	if i > 0 && m.Reading == string(ReadAtSaturation) {
		// That window can lie a small step past where the critical
		// resource reaches the threshold, and near saturation its jobs
		// climb steeply over the step (issue 39: 1/1/1/1 read 34-37 jobs
		// at 0.97 of the CPU where the staircases read 24-25 at 0.95-0.96,
		// a trial of its own at that workload 34): read every tier where
		// the threshold lies between the window below and this one.
		if f, ok := thresholdShare(points[i-1].CriticalUtilization, points[i].CriticalUtilization, opts.HardwareThreshold); ok {
			b := ws[i-1]
			m.WLmin = b.users + int(math.Round(f*float64(satUsers-b.users)))
			m.Measurements = interpolateMeasurements(b.o, f, m.Measurements)
			for _, t := range m.Measurements {
				if t.Tier == c.Tier {
					m.MinJobs = LittlesLaw(t.Throughput, t.ResponseTime)
				}
			}
			m.Warnings = append(m.Warnings, fmt.Sprintf(
				"minJobs %.1f read where %s's %s reaches %.2f, between the windows at %d users (%.3f, %.1f jobs) and %d (%.3f, %.1f jobs)",
				m.MinJobs, c.Server, c.Resource, opts.HardwareThreshold, b.users, points[i-1].CriticalUtilization,
				LittlesLaw(points[i-1].CriticalThroughput, points[i-1].CriticalResponseTime), satUsers, points[i].CriticalUtilization, camp.RampMinJobs))
		}
	}
	g := sat.GoodputInterval(opts.SLA)
	camp.ReserveGoodput = &g
	sz, err := CalculateMinAllocation(d, c.Tier, m.MinJobs, m.Measurements)
	if err != nil {
		rec.MinJobs = m
		return rec, camp, fmt.Errorf("calculate-min-allocation: %w", err)
	}
	rec.Sizing = sz
	rec.Allocation, rec.Tiers = RecommendAllocation(d, sz, c.Reserve)
	// The confirming trial is compared by goodput alone, held to the
	// precision by throughput and goodput (Timing.GoodputOnly): at
	// saturation a pool's busy units wander for minutes.
	copts := opts
	copts.Timing.GoodputOnly = true
	p := &procedure{x: x, d: d, opts: copts, name: "confirm"}
	// At the saturating window's workload, beside the reserve's goodput there.
	o2, _, _, err := p.run(ctx, rec.Allocation, satUsers)
	rec.Experiments++
	m.Trials = append(peakTrials, p.trials...)
	m.Experiments = len(m.Trials)
	rec.MinJobs = m
	if err != nil {
		return rec, camp, err
	}
	g2 := o2.GoodputInterval(opts.SLA)
	camp.RecommendedGoodput = &g2
	camp.ConfirmSeconds += trialSeconds(o2)
	if g2.Versus(g) == Below {
		rec.MinJobs.Warnings = append(rec.MinJobs.Warnings, fmt.Sprintf(
			"the recommended allocation's goodput at %d users (%s pages/s) is below the reserve's window (%s): the ramp's reading may be off",
			satUsers, g2, g))
	}
	return rec, camp, nil
}

// rampLevel is one of a ramp's windows on the reserve: its users and
// observation.
type rampLevel struct {
	users int
	o     Observation
}

func sortLevels(ws []rampLevel) {
	sort.SliceStable(ws, func(i, j int) bool { return ws[i].users < ws[j].users })
}

func levelPoints(ws []rampLevel, c Critical) []ScanPoint {
	points := make([]ScanPoint, len(ws))
	for i, w := range ws {
		points[i] = scanPoint(w.users, w.o, c)
	}
	return points
}

// levelsDemandDrift is demandDrift between the campaign's lowest window
// below the saturating one (ws[sat], on the reserve) that held enough
// requests, whatever its allocation (at low load the pools hardly touch
// the CPU per request, as the staircase's lowest takes it), else the
// reserve's window just below it, and the saturating window: "" when the
// CPU per request held, or no window lies below. The reserve's own windows
// are not enough: each doubling ramps again from two small steps below
// where the pool filled, and on the live Go testbed from 100-4-2 the
// reserve's windows at 60-80 users read no fall and minJobs 3.4 at the
// crossing (100-3-3), where the default start's, from 40 users, read a
// 27% fall and 19 jobs at the peak.
func levelsDemandDrift(ws []rampLevel, sat int, c Critical, opts Options) string {
	var low *rampLevel
	for _, t := range c.Trials {
		u := t.Experiment.Workload.Users
		if u > 0 && u < ws[sat].users && (low == nil || u < low.users) && enoughRequests(t.Observation, ws[sat].o, c) {
			low = &rampLevel{u, t.Observation}
		}
	}
	if low == nil && sat > 0 {
		low = &ws[sat-1]
	}
	if low == nil {
		return ""
	}
	return demandDrift(low.o, low.users, ws[sat].o, ws[sat].users, c, opts.DemandDrift)
}

// kneeIndex is the first of points whose throughput is within the peak
// scan's 0.5% of the highest: past the knee throughput only creeps towards
// its asymptote while jobs pile up in the queues, so the highest window is
// no place to read minJobs. On the batching fake, 120 connections where 60
// had bound served 0.46% more at 5,500 users than at 5,300, with 261 jobs
// in the app tier against 153.
func kneeIndex(points []ScanPoint) int {
	top := points[peakIndex(points)].Throughput
	for i, p := range points {
		if p.Throughput*flatGrowth >= top {
			return i
		}
	}
	return 0
}

// rampToPeak ramps allocation a (the reserve, or it with a pool doubled)
// on from a small step past last, a small step a window, until throughput
// has not grown by 0.5% past the best so far (from sat, the saturating
// window's or the peak's before the doubling) over rampFlatWindows windows
// (the staircase's peak scan: a curve that only creeps towards its
// asymptote has stopped growing) or the workload bound, and returns its
// windows, each also a trial (OnTrial).
//
// Its windows are held to the precision by throughput and goodput alone
// (Timing.GoodputOnly, as the confirming trial): flatness is a throughput
// test and minJobs at the peak is Little's law over the critical tier's
// throughput and response time, while past saturation the pools' busy
// units wander for minutes. On the live Go testbed they held 7 of the 8
// windows of the peak scan to the longest, 51 s (436 s of a 717 s ramp).
func rampToPeak(ctx context.Context, rp Ramper, d Deployment, a Allocation, last int, sat Interval, opts Options, camp *RampCampaign) ([]rampLevel, []Trial, error) {
	from := last + opts.SmallStep
	if from > opts.MaxWorkload {
		return nil, nil, nil
	}
	camp.Ramps++
	var out []rampLevel
	var trials []Trial
	best, flat := sat, 0
	timing := opts.Timing
	timing.GoodputOnly = true
	err := rp.RunRamp(ctx, Ramp{Deployment: d, Allocation: a, From: from, Timing: timing}, withPrecision(timing.Precision, func(w RampWindow) (RampStep, error) {
		w.Index, w.Allocation = len(camp.Windows), a.String()
		camp.Windows = append(camp.Windows, w)
		camp.Peak = append(camp.Peak, w.Index)
		camp.Seconds += w.Elapsed
		out = append(out, rampLevel{w.Users, w.Observation})
		t := Trial{Procedure: "infer-min-jobs", Experiment: Experiment{Deployment: d, Allocation: a.Clone(), Workload: Workload{Users: w.Users}, Timing: timing},
			Observation: w.Observation}
		trials = append(trials, t)
		if opts.OnTrial != nil {
			opts.OnTrial(t)
		}
		tp := w.Observation.ThroughputInterval()
		if tp.Versus(best.Scaled(flatGrowth)) == Above {
			best, flat = tp, 0
		} else if flat++; flat >= rampFlatWindows {
			return RampStep{}, nil
		}
		if next := w.Users + opts.SmallStep; next <= opts.MaxWorkload {
			return RampStep{Users: next}, nil
		}
		return RampStep{}, nil
	}))
	return out, trials, err
}

// trialSeconds is the runner's time a trial took: its warm-up and window.
func trialSeconds(o Observation) float64 {
	if o.Window != nil {
		return o.Window.WarmUpSeconds + o.RuntimeSeconds
	}
	return o.RuntimeSeconds
}

// thresholdShare is where threshold lies between a utilisation below it
// and one at or above it, as a share of the way from below to at; ok is
// false when it does not lie between them.
func thresholdShare(below, at, threshold float64) (float64, bool) {
	if !(below < threshold && threshold <= at) {
		return 0, false
	}
	return (threshold - below) / (at - below), true
}

// interpolateMeasurements are the tiers' throughput and response time a
// share f of the way from the window below to the one at saturation (at,
// the measurements read there: a tier that window lacks is left out).
func interpolateMeasurements(below Observation, f float64, at []TierMeasurement) []TierMeasurement {
	out := make([]TierMeasurement, 0, len(at))
	for _, m := range at {
		tp, rt, n := below.TierTotals(m.Tier)
		if n > 0 && tp > 0 && rt > 0 {
			m.Throughput += (1 - f) * (tp - m.Throughput)
			m.ResponseTime += (1 - f) * (rt - m.ResponseTime)
		}
		out = append(out, m)
	}
	return out
}
