package algorithms

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
)

// Mode selects how faithfully Algorithm 1 is followed.
type Mode string

const (
	// ModeEfficient (the default) gives the paper's answer with fewer
	// experiments: after doubling a saturated pool it continues at the
	// current workload instead of restarting from the first step, and the
	// small-step scan starts near the saturation found by the first procedure.
	ModeEfficient Mode = "efficient"
	// ModePaper runs the pseudo-code as written (with its two slips mended,
	// see InferMinConcurrentJobs).
	ModePaper Mode = "paper"
)

// MinJobsReading selects the workload at which minJobs is read.
type MinJobsReading string

const (
	// ReadAtKnee reads minJobs at WLmin, the knee of SLO satisfaction found
	// by intervention analysis: the paper's method.
	ReadAtKnee MinJobsReading = "knee"
	// ReadAtSaturation reads minJobs at the smallest measured workload (to
	// the small step) at which the critical resource is saturated: a minimum
	// saturating workload WLmin in the paper's own words, read from the
	// resource's utilisation rather than from SLO satisfaction. Not
	// interpolated down to the exact crossing: a pool of the mean number of
	// jobs that only just reaches the threshold on average cannot absorb
	// their variance (on the testbed it gave 2.9 jobs and 0.84 of the best).
	ReadAtSaturation MinJobsReading = "saturation"
)

// Options tune the three procedures. Zero fields take the defaults of
// DefaultOptions.
type Options struct {
	Mode   Mode
	Timing Timing
	// HardwareThreshold: a hardware resource at or above this utilisation is saturated.
	HardwareThreshold float64
	// SoftThreshold: a pool is saturated when every unit was busy for at least
	// this share of the runtime ("fully busy most of the runtime"). When a
	// runner cannot measure that share, mean busy/size >= HardwareThreshold is used.
	SoftThreshold float64
	// Step is FindCriticalResource's workload step (users); SmallStep is
	// InferMinConcurrentJobs's.
	Step, SmallStep int
	// MaxWorkload bounds every scan (users).
	MaxWorkload int
	// MaxDoublings bounds how often a saturated allocation is doubled.
	MaxDoublings int
	// NoWarmStart turns off the efficient mode's warm start (MVA's
	// prediction of the saturation workload from one low-load trial).
	NoWarmStart bool
	// ScanSpan: in efficient mode the small-step scan starts this many users
	// below the saturation workload of FindCriticalResource.
	ScanSpan int
	// SLA is the response-time threshold of goodput, seconds.
	SLA float64
	// KneeThreshold is the response time (s) at which SLO satisfaction is
	// measured for the knee. Zero: KneeFactor x the mean page response time at
	// the lowest workload of the scan (efficient mode) or the SLA (paper mode).
	KneeThreshold float64
	KneeFactor    float64
	MinJobsAt     MinJobsReading
	// DemandDrift guards the saturation reading, which trusts the
	// utilisation law: when the critical server's CPU per request at the
	// saturating workload is more than this share below its CPU per request
	// at the lowest workload measured, the server does more work per
	// CPU-second as load rises (batching, fewer wake-ups), so its
	// utilisation reaches the threshold before its throughput stops growing.
	// Then minJobs is read where throughput stops growing instead (the
	// peak of a small-step scan), with a warning. A negative value turns
	// the check off.
	DemandDrift  float64
	Intervention InterventionOptions
	// OnStart and OnTrial, when set, are called before and after every
	// experiment (progress display).
	OnStart func(procedure string, e Experiment)
	OnTrial func(Trial)
}

// DefaultOptions are the documented defaults.
func DefaultOptions() Options {
	return Options{
		Mode:              ModeEfficient,
		Timing:            PaperTiming,
		HardwareThreshold: 0.95,
		SoftThreshold:     0.5,
		Step:              500,
		SmallStep:         100,
		MaxWorkload:       100000,
		MaxDoublings:      8,
		ScanSpan:          1500,
		SLA:               2,
		KneeFactor:        5,
		MinJobsAt:         ReadAtSaturation,
		DemandDrift:       0.15,
		Intervention:      DefaultInterventionOptions(),
	}
}

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.Mode == "" {
		o.Mode = d.Mode
	}
	if o.Timing.Runtime == 0 {
		o.Timing = d.Timing
	}
	if o.HardwareThreshold == 0 {
		o.HardwareThreshold = d.HardwareThreshold
	}
	if o.SoftThreshold == 0 {
		o.SoftThreshold = d.SoftThreshold
	}
	if o.Step == 0 {
		o.Step = d.Step
	}
	if o.SmallStep == 0 {
		o.SmallStep = d.SmallStep
	}
	if o.MaxWorkload == 0 {
		o.MaxWorkload = d.MaxWorkload
	}
	if o.MaxDoublings == 0 {
		o.MaxDoublings = d.MaxDoublings
	}
	if o.ScanSpan == 0 {
		o.ScanSpan = d.ScanSpan
	}
	if o.SLA == 0 {
		o.SLA = d.SLA
	}
	if o.KneeFactor == 0 {
		o.KneeFactor = d.KneeFactor
	}
	if o.MinJobsAt == "" {
		o.MinJobsAt = d.MinJobsAt
	}
	if o.DemandDrift == 0 {
		o.DemandDrift = d.DemandDrift
	}
	return o
}

func (o Options) validate() error {
	switch {
	case o.Mode != ModeEfficient && o.Mode != ModePaper:
		return fmt.Errorf("mode %q: want %q or %q", o.Mode, ModeEfficient, ModePaper)
	case o.MinJobsAt != ReadAtKnee && o.MinJobsAt != ReadAtSaturation:
		return fmt.Errorf("minJobs reading %q: want %q or %q", o.MinJobsAt, ReadAtKnee, ReadAtSaturation)
	case !(o.HardwareThreshold > 0 && o.HardwareThreshold <= 1):
		return fmt.Errorf("hardware threshold %g: want a utilisation in (0,1]", o.HardwareThreshold)
	case !(o.SoftThreshold > 0 && o.SoftThreshold <= 1):
		return fmt.Errorf("soft threshold %g: want a share of the runtime in (0,1]", o.SoftThreshold)
	case o.Step < 1 || o.SmallStep < 1:
		return fmt.Errorf("workload steps %d and %d: want positive numbers of users", o.Step, o.SmallStep)
	case o.MaxWorkload < 1:
		return fmt.Errorf("maximum workload %d: want a positive number of users", o.MaxWorkload)
	case o.Step > o.MaxWorkload:
		// The first step would already pass the bound: no experiment at all.
		return fmt.Errorf("step %d users is larger than the maximum workload %d: want a step of at most %d users", o.Step, o.MaxWorkload, o.MaxWorkload)
	case o.SmallStep > o.MaxWorkload:
		return fmt.Errorf("small step %d users is larger than the maximum workload %d: want a small step of at most %d users", o.SmallStep, o.MaxWorkload, o.MaxWorkload)
	case o.DemandDrift >= 1:
		return fmt.Errorf("demand drift %g: want a share below 1 (negative: no check)", o.DemandDrift)
	case o.SLA <= 0 || o.KneeThreshold < 0 || o.KneeFactor <= 0:
		return fmt.Errorf("thresholds: want SLA > 0 (got %g), knee threshold >= 0 (got %g), knee factor > 0 (got %g)",
			o.SLA, o.KneeThreshold, o.KneeFactor)
	}
	return nil
}

// Trial is one experiment a procedure ran, with what it saw.
type Trial struct {
	Procedure   string // "find-critical" or "infer-min-jobs"
	Experiment  Experiment
	Observation Observation
	// Saturated lists what was saturated: "app-1/cpu", "web-1/threads".
	Saturated []string
}

// Saturation is one saturated resource of one server.
type Saturation struct {
	Server      string  `json:"server"`
	Tier        string  `json:"tier"`
	Resource    string  `json:"resource"` // "cpu", another hardware resource, or a pool name
	Utilization float64 `json:"utilization"`
	Hardware    bool    `json:"hardware"`
}

func (s Saturation) String() string { return s.Server + "/" + s.Resource }

// Saturations lists the saturated hardware resources and the saturated pools
// that the deployment's allocation controls, hardware first, each group by
// decreasing utilisation.
func Saturations(d Deployment, o Observation, opts Options) (hardware, soft []Saturation) {
	opts = opts.withDefaults()
	for _, s := range o.Servers {
		if s.CPU >= opts.HardwareThreshold {
			hardware = append(hardware, Saturation{s.Name, s.Tier, "cpu", s.CPU, true})
		}
		for r, u := range s.Resources {
			if u >= opts.HardwareThreshold {
				hardware = append(hardware, Saturation{s.Name, s.Tier, r, u, true})
			}
		}
		tier, ok := d.Tier(s.Tier)
		for _, p := range s.Pools {
			if !ok || !tier.HasPool(p.Name) || p.Size <= 0 {
				continue
			}
			full := p.FullShare >= opts.SoftThreshold
			if p.FullShare < 0 {
				full = p.Utilization() >= opts.HardwareThreshold
			}
			if full {
				soft = append(soft, Saturation{s.Name, s.Tier, p.Name, p.Utilization(), false})
			}
		}
	}
	byUse := func(x []Saturation) {
		sort.SliceStable(x, func(i, j int) bool { return x[i].Utilization > x[j].Utilization })
	}
	byUse(hardware)
	byUse(soft)
	return hardware, soft
}

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
	// Saturated lists every saturated hardware resource at that workload.
	Saturated []Saturation `json:"saturated"`
	// Throttled: the critical CPU's usage stayed below the threshold, and
	// its saturation was read from its quota throttling (CPUSaturation)
	// once throughput stopped growing.
	Throttled   bool     `json:"throttled,omitempty"`
	Experiments int      `json:"experiments"`
	Trials      []Trial  `json:"-"`
	Warnings    []string `json:"warnings,omitempty"`
}

type runner struct {
	x         Experimenter
	d         Deployment
	opts      Options
	procedure string
	trials    []Trial
}

func (r *runner) run(ctx context.Context, a Allocation, users int) (Observation, []Saturation, []Saturation, error) {
	e := Experiment{Deployment: r.d, Allocation: a.Clone(), Workload: Workload{Users: users}, Timing: r.opts.Timing}
	if r.opts.OnStart != nil {
		r.opts.OnStart(r.procedure, e)
	}
	o, err := r.x.RunExperiment(ctx, e)
	if err != nil {
		return Observation{}, nil, nil, fmt.Errorf("%s: experiment at %d users: %w", r.procedure, users, err)
	}
	hw, soft := Saturations(r.d, o, r.opts)
	t := Trial{Procedure: r.procedure, Experiment: e, Observation: o}
	for _, s := range append(append([]Saturation{}, hw...), soft...) {
		t.Saturated = append(t.Saturated, s.String())
	}
	r.trials = append(r.trials, t)
	if r.opts.OnTrial != nil {
		r.opts.OnTrial(t)
	}
	return o, hw, soft, nil
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
	r := &runner{x: x, d: d, opts: opts, procedure: "find-critical"}
	res := Critical{}
	s := s0.Clone()
	workload, tpCurr, tpMax := opts.Step, 0.0, -1.0
	doublings := 0
	warmed, jumpedTo := false, -1
	var last Observation
	lastUsers := 0
	var lastSoft []Saturation
	var lastSoftThroughput float64
	for tpCurr > tpMax {
		tpMax = tpCurr
		if workload > opts.MaxWorkload {
			// Throughput grew up to here: the bound, not saturation, ends the scan.
			res.Trials, res.Experiments, res.Reserve = r.trials, len(r.trials), s
			return res, &WorkloadBoundError{MaxWorkload: opts.MaxWorkload, Users: lastUsers, Throughput: tpMax}
		}
		o, hw, soft, err := r.run(ctx, s, workload)
		if err != nil {
			res.Trials, res.Experiments = r.trials, len(r.trials)
			return res, err
		}
		last, lastUsers = o, workload
		// The pseudo-code assigns TP; the loop tests TPcurr: they are one value.
		tpCurr = o.Throughput
		res.MaxThroughput = math.Max(res.MaxThroughput, o.Throughput)
		switch {
		case len(hw) > 0:
			if workload == jumpedTo {
				// The prediction may overshoot: walk back to the first
				// saturating step, the answer the plain scan gives.
				for w := workload - opts.Step; w > opts.Step; w -= opts.Step {
					o2, hw2, _, err := r.run(ctx, s, w)
					if err != nil {
						res.Trials, res.Experiments = r.trials, len(r.trials)
						return res, err
					}
					if len(hw2) == 0 {
						break
					}
					workload, hw = w, hw2
					res.MaxThroughput = math.Max(res.MaxThroughput, o2.Throughput)
				}
			}
			c := hw[0]
			res.Tier, res.Server, res.Resource, res.Utilization = c.Tier, c.Server, c.Resource, c.Utilization
			res.SaturationWorkload, res.Saturated, res.Reserve = workload, hw, s
			res.Trials, res.Experiments = r.trials, len(r.trials)
			if len(hw) > 1 && hw[1].Tier != c.Tier {
				res.Warnings = append(res.Warnings, fmt.Sprintf(
					"more than one tier saturated at %d users (%s at %.2f, %s at %.2f): the paper assumes a single bottleneck",
					workload, c, c.Utilization, hw[1], hw[1].Utilization))
			}
			return res, nil
		case len(soft) > 0:
			if opts.Mode == ModeEfficient && len(lastSoft) > 0 && soft[0].String() == lastSoft[0].String() &&
				o.Throughput < lastSoftThroughput*1.005 {
				// Doubling the pool did not raise throughput at the same
				// workload: the full pool is a symptom, the bottleneck is
				// elsewhere (an unmonitored resource, or several at once).
				res.Trials, res.Experiments, res.Reserve = r.trials, len(r.trials), s
				if c, ok := throttledCritical(res, o, workload, opts); ok {
					return c, nil
				}
				return res, fmt.Errorf("find-critical: %s stayed saturated after doubling the allocation and throughput did not grow (%.1f -> %.1f pages/s at %d users), with no hardware resource at or above %.2f (busiest: %s): %w",
					soft[0], lastSoftThroughput, o.Throughput, workload, opts.HardwareThreshold, busiestHardware(o), ErrNoCriticalResource)
			}
			lastSoft, lastSoftThroughput = soft, o.Throughput
			if doublings >= opts.MaxDoublings {
				res.Trials, res.Experiments = r.trials, len(r.trials)
				return res, fmt.Errorf("find-critical: %s still saturated after doubling the allocation %d times", soft[0], doublings)
			}
			doublings++
			s = s.Scaled(2)
			res.Warnings = append(res.Warnings, fmt.Sprintf("%s saturated at %d users: doubled the allocation", soft[0], workload))
			tpCurr, tpMax = 0, -1
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
					workload, jumpedTo = jump, jump
				}
			}
		}
	}
	res.Trials, res.Experiments, res.Reserve = r.trials, len(r.trials), s
	if c, ok := throttledCritical(res, last, lastUsers, opts); ok {
		return c, nil
	}
	return res, fmt.Errorf("find-critical: throughput stopped growing at %d users (%.1f pages/s, after %.1f) with no hardware resource at or above %.2f (busiest: %s): %w",
		lastUsers, tpCurr, tpMax, opts.HardwareThreshold, busiestHardware(last), ErrNoCriticalResource)
}

// throttledCritical answers when throughput stopped growing at workload
// with no hardware resource at the threshold, but a CPU-capped server was
// throttled in at least the threshold's share of its quota periods: its
// CPU is the critical resource, saturated from the first workload at the
// reserve allocation where its throttling reached the threshold. Usage stays
// the first test; throttling alone can read saturation early, while
// throughput still grows (issue 25's testbed runs with 20 ms quota slices).
func throttledCritical(res Critical, o Observation, workload int, opts Options) (Critical, bool) {
	var sat []Saturation
	for _, s := range o.Servers {
		if s.Throttled >= opts.HardwareThreshold {
			sat = append(sat, Saturation{s.Name, s.Tier, "cpu", s.CPUSaturation(), true})
		}
	}
	if len(sat) == 0 {
		return res, false
	}
	sort.SliceStable(sat, func(i, j int) bool { return sat[i].Utilization > sat[j].Utilization })
	c := sat[0]
	res.Tier, res.Server, res.Resource, res.Utilization = c.Tier, c.Server, c.Resource, c.Utilization
	res.Saturated, res.Throttled, res.SaturationWorkload = sat, true, workload
	for _, t := range res.Trials {
		s, ok := t.Observation.Server(c.Server)
		if ok && t.Experiment.Allocation.Key() == res.Reserve.Key() && s.Throttled >= opts.HardwareThreshold &&
			t.Experiment.Workload.Users < res.SaturationWorkload {
			res.SaturationWorkload = t.Experiment.Workload.Users
		}
	}
	srv, _ := o.Server(c.Server)
	res.Warnings = append(res.Warnings, fmt.Sprintf(
		"throughput stopped growing with no hardware resource at %.2f, but %s was throttled in %.2f of its CPU quota's periods (usage %.2f of the quota): its CPU is taken as the critical resource, saturated from %d users; a capped server can lose quota it cannot use",
		opts.HardwareThreshold, c.Server, srv.Throttled, srv.CPU, res.SaturationWorkload))
	return res, true
}

// busiestHardware names the three highest hardware readings of an
// observation, with CPU throttling where a quota was measured, so that an
// answer without a critical resource still says what was seen.
func busiestHardware(o Observation) string {
	type reading struct {
		what string
		u    float64
	}
	var rs []reading
	for _, s := range o.Servers {
		cpu := fmt.Sprintf("%s cpu %.2f", s.Name, s.CPU)
		if s.Throttled > 0 {
			cpu += fmt.Sprintf(" (throttled in %.2f of its quota periods)", s.Throttled)
		}
		rs = append(rs, reading{cpu, s.CPUSaturation()})
		for _, r := range slices.Sorted(maps.Keys(s.Resources)) {
			rs = append(rs, reading{fmt.Sprintf("%s %s %.2f", s.Name, r, s.Resources[r]), s.Resources[r]})
		}
	}
	if len(rs) == 0 {
		return "no server"
	}
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].u > rs[j].u })
	parts := make([]string, 0, 3)
	for _, r := range rs[:min(3, len(rs))] {
		parts = append(parts, r.what)
	}
	return strings.Join(parts, ", ")
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

// ScanPoint is one workload of InferMinConcurrentJobs's scan.
type ScanPoint struct {
	Workload        int     `json:"workload"`
	Throughput      float64 `json:"throughput"`
	SLOSatisfaction float64 `json:"sloSatisfaction"`
	// CriticalThroughput and CriticalResponseTime are the critical tier's
	// (summed over its servers; response time throughput-weighted).
	CriticalThroughput   float64 `json:"criticalThroughput"`
	CriticalResponseTime float64 `json:"criticalResponseTime"`
	CriticalUtilization  float64 `json:"criticalUtilization"`
}

// TierMeasurement is a tier's throughput (requests/s, all servers) and mean
// response time (s) at the minimum saturating workload.
type TierMeasurement struct {
	Tier         string  `json:"name" yaml:"name"`
	Throughput   float64 `json:"throughput" yaml:"throughput"`
	ResponseTime float64 `json:"responseTime" yaml:"responseTime"`
}

// MinJobs is the result of InferMinConcurrentJobs.
type MinJobs struct {
	// MinJobs is the mean number of concurrent jobs in the critical tier
	// (all its servers) at WLmin, by Little's law.
	MinJobs float64 `json:"minJobs"`
	WLmin   int     `json:"wlMin"`
	// Reading says where minJobs was read: "knee", "saturation", or
	// "throughput-peak" where throughput stopped growing (no knee found, or
	// the utilisation law failed: see Warnings).
	Reading       string            `json:"reading"`
	Knee          bool              `json:"knee"`
	KneeThreshold float64           `json:"kneeThreshold"`
	Points        []ScanPoint       `json:"points"`
	Measurements  []TierMeasurement `json:"measurements"`
	Experiments   int               `json:"experiments"`
	Trials        []Trial           `json:"-"`
	Warnings      []string          `json:"warnings,omitempty"`
}

// InferMinConcurrentJobs is Algorithm 1's second procedure: with the reserved
// allocation, raise the workload in small steps until throughput stops
// growing; intervention analysis of SLO satisfaction against workload finds
// the minimum saturating workload WLmin, and minJobs = TP(WLmin) * RTT(WLmin)
// of the critical tier.
//
// Two slips of the pseudo-code are mended as the paper's text reads: line 29
// runs the analysis on SLO satisfaction (not RTT), and line 30's undefined
// RSI is the critical server's RTT.
func InferMinConcurrentJobs(ctx context.Context, x Experimenter, d Deployment, c Critical, opts Options) (MinJobs, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return MinJobs{}, err
	}
	if _, ok := d.Tier(c.Tier); !ok {
		return MinJobs{}, fmt.Errorf("infer-min-jobs: critical tier %q is not in the deployment", c.Tier)
	}
	r := &runner{x: x, d: d, opts: opts, procedure: "infer-min-jobs"}
	res := MinJobs{KneeThreshold: opts.KneeThreshold}
	if opts.Mode == ModePaper && res.KneeThreshold == 0 {
		res.KneeThreshold = opts.SLA
	}
	readPeak := false
	if opts.Mode == ModeEfficient && opts.MinJobsAt == ReadAtSaturation && c.SaturationWorkload > 0 {
		bis, drift, err := bisectSaturation(ctx, r, d, c, opts, res)
		if err != nil || drift == "" {
			return bis, err
		}
		// The utilisation law failed, so saturation is where throughput
		// stops growing (Algorithm 1's own test): scan until it has not
		// grown by 0.5% for three steps and read minJobs at its peak. The
		// bisection's trials stay counted (the runner keeps them).
		readPeak = true
		res.Warnings = append(res.Warnings, drift)
	}
	start := opts.SmallStep
	if opts.Mode == ModeEfficient && c.SaturationWorkload > 0 {
		// Round down to the small step so scans of neighbouring campaigns share workloads.
		start = max(opts.SmallStep, (c.SaturationWorkload-opts.ScanSpan)/opts.SmallStep*opts.SmallStep)
	}
	var obs []Observation
	scan := func(workload int) error {
		o, _, _, err := r.run(ctx, c.Reserve, workload)
		if err != nil {
			return err
		}
		if res.KneeThreshold == 0 {
			res.KneeThreshold = opts.KneeFactor * o.ResponseTimes.Mean()
			if res.KneeThreshold <= 0 {
				res.KneeThreshold = opts.SLA
			}
		}
		obs = append(obs, o)
		tp, rt, _ := o.TierTotals(c.Tier)
		res.Points = append(res.Points, ScanPoint{
			Workload: workload, Throughput: o.Throughput, SLOSatisfaction: o.SLOSatisfaction(res.KneeThreshold),
			CriticalThroughput: tp, CriticalResponseTime: rt, CriticalUtilization: tierUtilization(o, c),
		})
		return nil
	}
	finish := func(err error) (MinJobs, error) {
		res.Trials, res.Experiments = r.trials, len(r.trials)
		return res, err
	}
	// Raise the workload until throughput stops growing: at the first step
	// that does not grow (Algorithm 1), or, reading the peak, after three
	// steps that do not grow by 0.5% (a curve that only creeps towards its
	// asymptote has stopped growing).
	patience, growth := 1, 1.0
	if readPeak {
		patience, growth = 3, 1.005
	}
	workload, best, flat := start, -1.0, 0
	for flat < patience && workload <= opts.MaxWorkload {
		if err := scan(workload); err != nil {
			return finish(err)
		}
		if tp := res.Points[len(res.Points)-1].Throughput; tp > best*growth {
			best, flat = tp, 0
		} else {
			flat++
		}
		workload += opts.SmallStep
	}
	if len(res.Points) == 0 {
		return finish(fmt.Errorf("infer-min-jobs: the scan would start at %d users, above the maximum workload of %d users", start, opts.MaxWorkload))
	}
	capped := flat < patience
	if capped {
		res.Warnings = append(res.Warnings, fmt.Sprintf(
			"the scan reached the maximum workload of %d users with throughput still growing: minJobs may be read below saturation", opts.MaxWorkload))
	}
	if readPeak {
		at := peakIndex(res.Points)
		p := res.Points[at]
		res.Reading, res.WLmin, res.MinJobs = "throughput-peak", p.Workload, LittlesLaw(p.CriticalThroughput, p.CriticalResponseTime)
		return finish(res.measure(d, obs[at], c))
	}
	peak := workload - 2*opts.SmallStep // the last point whose throughput still grew
	if capped {
		peak = workload - opts.SmallStep // the scan's last point, still growing
	}
	knee, err := intervention(res.Points, opts)
	if err != nil {
		return finish(fmt.Errorf("infer-min-jobs: %w", err))
	}
	if !knee.Knee && opts.Mode == ModeEfficient {
		// Where response times cluster, SLO satisfaction can hold past the
		// throughput peak; scan on to a bound rather than invent a knee.
		bound := min(opts.MaxWorkload, peak+opts.ScanSpan)
		res.Warnings = append(res.Warnings, fmt.Sprintf(
			"no knee of SLO satisfaction at %.3g s before throughput stopped growing at %d users: scanning on to %d users",
			res.KneeThreshold, peak, bound))
		for workload <= bound && !knee.Knee {
			if err := scan(workload); err != nil {
				return finish(err)
			}
			workload += opts.SmallStep
			if knee, err = intervention(res.Points, opts); err != nil {
				return finish(fmt.Errorf("infer-min-jobs: %w", err))
			}
		}
	}
	res.Warnings = append(res.Warnings, knee.Warnings...)
	at := -1
	switch {
	case opts.MinJobsAt == ReadAtSaturation:
		res.Reading = string(ReadAtSaturation)
		res.Knee = knee.Knee
		if i, jobs, ok := readAtSaturation(res.Points, opts.HardwareThreshold); ok {
			res.MinJobs, res.WLmin, at = jobs, res.Points[i].Workload, i
		} else {
			res.Warnings = append(res.Warnings, fmt.Sprintf(
				"the critical resource never reached %.2f in the scan: reading minJobs at the knee instead", opts.HardwareThreshold))
		}
	}
	if at < 0 {
		if knee.Knee {
			res.Reading, res.Knee, at = string(ReadAtKnee), true, knee.Index
		} else {
			res.Reading, at = "throughput-peak", peakIndex(res.Points)
			res.Warnings = append(res.Warnings, fmt.Sprintf(
				"no knee found in %d points: minJobs read where throughput peaked (%d users), an upper estimate",
				len(res.Points), res.Points[at].Workload))
		}
		p := res.Points[at]
		res.WLmin, res.MinJobs = p.Workload, LittlesLaw(p.CriticalThroughput, p.CriticalResponseTime)
	}
	return finish(res.measure(d, obs[at], c))
}

// measure records every tier's throughput and response time at WLmin (o).
func (res *MinJobs) measure(d Deployment, o Observation, c Critical) error {
	for _, t := range d.Tiers {
		tp, rt, n := o.TierTotals(t.Name)
		if n > 0 && tp > 0 {
			res.Measurements = append(res.Measurements, TierMeasurement{Tier: t.Name, Throughput: tp, ResponseTime: rt})
		}
	}
	if res.MinJobs <= 0 {
		return fmt.Errorf("infer-min-jobs: the critical tier %q reported no throughput or response time at %d users", c.Tier, res.WLmin)
	}
	return nil
}

func intervention(points []ScanPoint, opts Options) (InterventionResult, error) {
	w := make([]float64, len(points))
	s := make([]float64, len(points))
	for i, p := range points {
		w[i], s[i] = float64(p.Workload), p.SLOSatisfaction
	}
	return InterventionAnalysis(w, s, opts.Intervention)
}

// tierUtilization is the utilisation of the critical resource on the
// critical tier's busiest server: the measure FindCriticalResource tests.
func tierUtilization(o Observation, c Critical) float64 {
	var u float64
	for _, s := range o.Servers {
		if s.Tier != c.Tier {
			continue
		}
		switch {
		case c.Resource != "cpu" && c.Resource != "":
			u = math.Max(u, s.Resources[c.Resource])
		case c.Throttled:
			u = math.Max(u, s.CPUSaturation())
		default:
			u = math.Max(u, s.CPU)
		}
	}
	return u
}

// bisectSaturation is the efficient mode's saturation reading: find-critical
// already bracketed the workload at which the critical resource crosses the
// hardware threshold (its last step below and its first step at or above),
// so bisect that bracket down to SmallStep and read minJobs at its upper end,
// instead of scanning every small step. A non-empty string instead says why
// the reading cannot be trusted (demandDrift): the caller scans for the
// throughput peak.
func bisectSaturation(ctx context.Context, r *runner, d Deployment, c Critical, opts Options, res MinJobs) (MinJobs, string, error) {
	type point struct {
		w int
		o Observation
	}
	var pts []point
	for _, t := range c.Trials {
		if t.Experiment.Allocation.Key() == c.Reserve.Key() {
			pts = append(pts, point{t.Experiment.Workload.Users, t.Observation})
		}
	}
	var drift string
	finish := func(err error) (MinJobs, string, error) {
		res.Trials, res.Experiments = r.trials, len(r.trials)
		return res, drift, err
	}
	probe := func(w int) (point, error) {
		o, _, _, err := r.run(ctx, c.Reserve, w)
		return point{w, o}, err
	}
	saturated := func(p point) bool { return tierUtilization(p.o, c) >= opts.HardwareThreshold }
	sort.Slice(pts, func(i, j int) bool { return pts[i].w < pts[j].w })
	var lo, hi *point
	for i := range pts {
		if saturated(pts[i]) {
			hi = &pts[i]
			break
		}
		lo = &pts[i]
	}
	if hi == nil {
		p, err := probe(c.SaturationWorkload)
		if err != nil {
			return finish(err)
		}
		if !saturated(p) {
			return finish(fmt.Errorf("infer-min-jobs: %s below %.2f at %d users, where find-critical saw it saturated",
				c.Resource, opts.HardwareThreshold, c.SaturationWorkload))
		}
		hi = &p
	}
	// A bracket needs an unsaturated point below; step down until one shows.
	for lo == nil || lo.w >= hi.w {
		w := hi.w - opts.Step
		if w < opts.SmallStep {
			w = opts.SmallStep
		}
		if w >= hi.w {
			return finish(fmt.Errorf("infer-min-jobs: %s is saturated already at %d users", c.Resource, hi.w))
		}
		p, err := probe(w)
		if err != nil {
			return finish(err)
		}
		if saturated(p) {
			hi = &p
			continue
		}
		lo = &p
	}
	// The utilisation law is checked on the bracket, before bisecting it:
	// if it fails, the bisection's trials would be wasted.
	low := *lo
	if len(pts) > 0 && pts[0].w < low.w {
		low = pts[0]
	}
	if drift = demandDrift(low.o, low.w, hi.o, hi.w, c, opts.DemandDrift); drift != "" {
		return finish(nil)
	}
	loP, hiP := *lo, *hi
	for hiP.w-loP.w > opts.SmallStep {
		p, err := probe((loP.w + hiP.w) / 2)
		if err != nil {
			return finish(err)
		}
		if saturated(p) {
			hiP = p
		} else {
			loP = p
		}
	}
	scanPoint := func(p point) ScanPoint {
		tp, rt, _ := p.o.TierTotals(c.Tier)
		return ScanPoint{Workload: p.w, Throughput: p.o.Throughput, CriticalThroughput: tp, CriticalResponseTime: rt,
			CriticalUtilization: tierUtilization(p.o, c)}
	}
	if res.KneeThreshold == 0 {
		res.KneeThreshold = opts.KneeFactor * loP.o.ResponseTimes.Mean()
	}
	a, b := scanPoint(loP), scanPoint(hiP)
	a.SLOSatisfaction, b.SLOSatisfaction = loP.o.SLOSatisfaction(res.KneeThreshold), hiP.o.SLOSatisfaction(res.KneeThreshold)
	res.Points = []ScanPoint{a, b}
	_, jobs, _ := readAtSaturation(res.Points, opts.HardwareThreshold)
	res.Reading, res.MinJobs, res.WLmin = string(ReadAtSaturation), jobs, hiP.w
	for _, t := range d.Tiers {
		if tp, rt, n := hiP.o.TierTotals(t.Name); n > 0 && tp > 0 {
			res.Measurements = append(res.Measurements, TierMeasurement{Tier: t.Name, Throughput: tp, ResponseTime: rt})
		}
	}
	if res.MinJobs <= 0 {
		return finish(fmt.Errorf("infer-min-jobs: the critical tier %q reported no throughput or response time at %d users", c.Tier, res.WLmin))
	}
	return finish(nil)
}

// demandDrift checks the utilisation law on the critical server between a
// low workload and the saturating one: its CPU per request (U / X, the
// demand up to the constant number of cores) should not fall by more than
// limit. It returns a warning when it does, or "".
func demandDrift(low Observation, lowUsers int, sat Observation, satUsers int, c Critical, limit float64) string {
	if limit < 0 || (c.Resource != "cpu" && c.Resource != "") {
		return ""
	}
	// The busiest server at saturation, and the same server at low load.
	var l, h ServerObservation
	for _, s := range sat.Servers {
		if s.Tier == c.Tier && s.CPU > h.CPU {
			h = s
		}
	}
	for _, s := range low.Servers {
		if s.Name == h.Name {
			l = s
		}
	}
	if l.Throughput <= 0 || h.Throughput <= 0 || l.CPU <= 0 {
		return ""
	}
	dl, dh := ServiceDemand(l.CPU, l.Throughput), ServiceDemand(h.CPU, h.Throughput)
	if dh >= (1-limit)*dl {
		return ""
	}
	return fmt.Sprintf("%s: CPU per request fell %.0f%% from %d users (cpu %.2f at %.1f req/s) to %d (cpu %.2f at %.1f req/s): "+
		"it does more work per CPU-second as load rises, so its utilisation reaches the threshold before throughput stops growing; "+
		"minJobs read where throughput stops growing instead",
		h.Name, 100*(1-dh/dl), lowUsers, l.CPU, l.Throughput, satUsers, h.CPU, h.Throughput)
}

// readAtSaturation reads the critical tier's jobs (L = X R) at the first
// point whose utilisation is at or above threshold.
func readAtSaturation(points []ScanPoint, threshold float64) (int, float64, bool) {
	for i, p := range points {
		if p.CriticalUtilization >= threshold {
			return i, LittlesLaw(p.CriticalThroughput, p.CriticalResponseTime), true
		}
	}
	return 0, 0, false
}

func peakIndex(points []ScanPoint) int {
	best := 0
	for i, p := range points {
		if p.Throughput > points[best].Throughput {
			best = i
		}
	}
	return best
}

// TierSize is one tier's pool sizes from CalculateMinAllocation.
type TierSize struct {
	Name     string `json:"name"`
	Replicas int    `json:"replicas"`
	// Jobs is the tier's mean concurrent jobs L (all servers).
	Jobs             float64 `json:"jobs"`
	TotalThreads     int     `json:"totalThreads"`
	ThreadsPerServer int     `json:"threadsPerServer"`
	// Connections are set for tiers with a connection pool only.
	HasConnections       bool `json:"-"`
	TotalConnections     int  `json:"totalConnections"`
	ConnectionsPerServer int  `json:"connectionsPerServer"`
	// ReqRatio (critical tier requests per request of this tier) and
	// RTTRatio (this tier's RTT over the critical tier's) for front tiers.
	ReqRatio float64 `json:"reqRatio,omitempty"`
	RTTRatio float64 `json:"rttRatio,omitempty"`
	Position string  `json:"position"` // "front", "critical" or "behind"
}

// Sizing is the result of CalculateMinAllocation.
type Sizing struct {
	Critical string     `json:"critical"`
	MinJobs  float64    `json:"minJobs"`
	Tiers    []TierSize `json:"tiers"`
}

// CalculateMinAllocation is Algorithm 1's third procedure. The critical tier
// and the tiers behind it get minJobs; a tier in front gets, by Little's law
// and the forced flow law (Formula 3), L = minJobs * RTTratio / Reqratio,
// which equals its own TP * RTT. Totals are rounded to the nearest integer
// (at least 1) and split across replicas rounding up: these are lower bounds.
// minJobs 0 means: take it from the critical tier's measurement. Inputs must
// be finite, one measurement per tier, and every pool size must fit an int32.
func CalculateMinAllocation(d Deployment, critical string, minJobs float64, measured []TierMeasurement) (Sizing, error) {
	ci := d.TierIndex(critical)
	if ci < 0 {
		return Sizing{}, fmt.Errorf("critical tier %q is not in the deployment (tiers: %s)", critical, tierNames(d))
	}
	switch {
	case math.IsInf(minJobs, 0):
		return Sizing{}, fmt.Errorf("minJobs: want a finite number, got %g", minJobs)
	case !(minJobs >= 0): // NaN too
		return Sizing{}, fmt.Errorf("minJobs: want > 0, got %g", minJobs)
	}
	byTier := map[string]TierMeasurement{}
	at := map[string]int{}
	for i, m := range measured {
		if d.TierIndex(m.Tier) < 0 {
			return Sizing{}, fmt.Errorf("measured tier %q is not in the deployment (tiers: %s)", m.Tier, tierNames(d))
		}
		// A second row for a tier would silently replace the first.
		if j, dup := at[m.Tier]; dup {
			return Sizing{}, fmt.Errorf("tiers[%d] and tiers[%d] are both named %q: want one measurement per tier", j, i, m.Tier)
		}
		at[m.Tier] = i
		for _, f := range []struct {
			name string
			v    float64
		}{{"throughput", m.Throughput}, {"responseTime", m.ResponseTime}} {
			if !(f.v > 0) || math.IsInf(f.v, 0) {
				return Sizing{}, fmt.Errorf("tier %q: %s: want a finite number > 0, got %g", m.Tier, f.name, f.v)
			}
		}
		byTier[m.Tier] = m
	}
	crit, haveCrit := byTier[critical]
	source := "minJobs"
	if minJobs == 0 {
		if !haveCrit {
			return Sizing{}, fmt.Errorf("critical tier %q: no throughput and response time measured, and no minJobs given", critical)
		}
		minJobs = LittlesLaw(crit.Throughput, crit.ResponseTime)
		source = fmt.Sprintf("critical tier %q: throughput x responseTime", critical)
	}
	if err := poolSize(source, minJobs); err != nil {
		return Sizing{}, err
	}
	out := Sizing{Critical: critical, MinJobs: minJobs}
	for i, t := range d.Tiers {
		ts := TierSize{Name: t.Name, Replicas: t.Replicas, HasConnections: t.HasPool(PoolConnections)}
		switch {
		case i < ci:
			m, ok := byTier[t.Name]
			if !ok {
				return Sizing{}, fmt.Errorf("front tier %q: throughput and response time are needed to size it", t.Name)
			}
			if !haveCrit {
				return Sizing{}, fmt.Errorf("critical tier %q: throughput and response time are needed to size the front tiers", critical)
			}
			ts.Position = "front"
			ts.ReqRatio = crit.Throughput / m.Throughput
			ts.RTTRatio = m.ResponseTime / crit.ResponseTime
			ts.Jobs = minJobs * ts.RTTRatio / ts.ReqRatio
			// Extreme but finite measurements can overflow a ratio, which
			// no output format can carry.
			for _, r := range []struct {
				name string
				v    float64
			}{{"Reqratio", ts.ReqRatio}, {"RTTratio", ts.RTTRatio}} {
				if math.IsInf(r.v, 0) || !(r.v > 0) {
					return Sizing{}, fmt.Errorf("front tier %q: %s to the critical tier is %g: want a finite ratio; check the tiers' throughput and responseTime", t.Name, r.name, r.v)
				}
			}
			if err := poolSize(fmt.Sprintf("front tier %q: minJobs x RTTratio / Reqratio", t.Name), ts.Jobs); err != nil {
				return Sizing{}, err
			}
		case i == ci:
			ts.Position, ts.Jobs = "critical", minJobs
		default:
			ts.Position, ts.Jobs = "behind", minJobs
		}
		ts.TotalThreads = max(1, int(math.Round(ts.Jobs)))
		ts.ThreadsPerServer = ceilDiv(ts.TotalThreads, max(1, t.Replicas))
		if ts.HasConnections {
			ts.TotalConnections, ts.ConnectionsPerServer = ts.TotalThreads, ts.ThreadsPerServer
		}
		out.Tiers = append(out.Tiers, ts)
	}
	return out, nil
}

// poolSize refuses a number of jobs that no pool can be: not finite, or
// past an int32 (no server configures more threads than that).
func poolSize(source string, jobs float64) error {
	if math.IsNaN(jobs) || math.IsInf(jobs, 0) || math.Round(jobs) > math.MaxInt32 {
		return fmt.Errorf("%s = %.4g jobs: want a pool size of at most %d", source, jobs, math.MaxInt32)
	}
	return nil
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

func tierNames(d Deployment) string {
	names := make([]string, len(d.Tiers))
	for i, t := range d.Tiers {
		names[i] = t.Name
	}
	return strings.Join(names, ", ")
}

// TierRecommendation is recommend's answer for one tier: pool sizes per
// server, and the formula's minimum where a larger buffer was kept.
type TierRecommendation struct {
	Name                 string `json:"name"`
	Replicas             int    `json:"replicas"`
	ThreadsPerServer     int    `json:"threadsPerServer"`
	ConnectionsPerServer *int   `json:"connectionsPerServer"`
	TotalThreads         int    `json:"totalThreads"`
	TotalConnections     *int   `json:"totalConnections"`
	// Minimum is Formula 3's value where recommend kept a larger buffer.
	Minimum *TierMinimum `json:"minimum,omitempty"`
}

// TierMinimum is the formula's per-server sizes.
type TierMinimum struct {
	ThreadsPerServer     int  `json:"threadsPerServer"`
	ConnectionsPerServer *int `json:"connectionsPerServer"`
}

// BoundingPool is the pool that bounds the critical tier's concurrent jobs:
// the critical tier's own thread pool if it has one; else the nearest tier in
// front whose connections lead to it (C-JDBC and MySQL threads follow the app
// tier's DB connections), else that tier's threads. It returns the tier's
// index and the pool's name.
func BoundingPool(d Deployment, critical string) (int, string) {
	ci := d.TierIndex(critical)
	if ci >= 0 && d.Tiers[ci].HasPool(PoolThreads) {
		return ci, PoolThreads
	}
	for i := ci - 1; i >= 0; i-- {
		if d.Tiers[i].HasPool(PoolConnections) {
			return i, PoolConnections
		}
		if d.Tiers[i].HasPool(PoolThreads) {
			return i, PoolThreads
		}
	}
	return ci, PoolThreads
}

// inFront says whether pool p of tier i comes before the bounding pool (bt,
// bp) on a request's path: every pool of an earlier tier, and a tier's
// threads before its own connections (a thread takes a connection).
func inFront(i int, p string, bt int, bp string) bool {
	return i < bt || (i == bt && p == PoolThreads && bp == PoolConnections)
}

// RecommendAllocation turns the sizing into an allocation; a nil reserve
// gives the formula alone (what `softalloc size` prints). Formula 3 is a
// lower bound, and Sec. III-C shows a front tier must also buffer: every pool
// in front of the pool that bounds the critical server's jobs keeps at least
// its reserved size, with the formula's value shown beside it; the bounding
// pool and those behind it take the formula. On 1/4/1/4 (C-JDBC critical)
// that keeps the web pool and Tomcat's threads, which queue requests in front
// of the DB connections, and sizes the connections by the formula.
func RecommendAllocation(d Deployment, sizing Sizing, reserve Allocation) (Allocation, []TierRecommendation) {
	bt, bp := BoundingPool(d, sizing.Critical)
	alloc := Allocation{}
	recs := make([]TierRecommendation, 0, len(sizing.Tiers))
	for i, ts := range sizing.Tiers {
		t := d.Tiers[i]
		threads, conns := ts.ThreadsPerServer, ts.ConnectionsPerServer
		if inFront(i, PoolThreads, bt, bp) {
			threads = max(threads, reserve[t.Name].Threads)
		}
		if inFront(i, PoolConnections, bt, bp) {
			conns = max(conns, reserve[t.Name].Connections)
		}
		rec := TierRecommendation{Name: t.Name, Replicas: t.Replicas, ThreadsPerServer: threads, TotalThreads: ts.TotalThreads}
		buffered := threads != ts.ThreadsPerServer || (ts.HasConnections && conns != ts.ConnectionsPerServer)
		// A recommendation configures per-server pools, so its totals are
		// what those add up to; the formula's totals stay for pool-less tiers
		// (C-JDBC, MySQL) and for `size`.
		configured := buffered || (reserve != nil && len(t.Pools) > 0)
		if configured {
			rec.TotalThreads = threads * t.Replicas
		}
		if ts.HasConnections {
			c, total := conns, ts.TotalConnections
			if configured {
				total = conns * t.Replicas
			}
			rec.ConnectionsPerServer, rec.TotalConnections = &c, &total
		}
		if buffered {
			m := &TierMinimum{ThreadsPerServer: ts.ThreadsPerServer}
			if ts.HasConnections {
				c := ts.ConnectionsPerServer
				m.ConnectionsPerServer = &c
			}
			rec.Minimum = m
		}
		if len(t.Pools) > 0 {
			p := TierPools{}
			if t.HasPool(PoolThreads) {
				p.Threads = threads
			}
			if t.HasPool(PoolConnections) {
				p.Connections = conns
			}
			alloc[t.Name] = p
		}
		recs = append(recs, rec)
	}
	return alloc, recs
}

// Recommendation is the whole of Algorithm 1 on one deployment.
type Recommendation struct {
	Critical    Critical             `json:"critical"`
	MinJobs     MinJobs              `json:"minJobs"`
	Sizing      Sizing               `json:"sizing"`
	Allocation  Allocation           `json:"allocation"`
	Tiers       []TierRecommendation `json:"tiers"`
	Experiments int                  `json:"experiments"`
}

// Recommend runs the three procedures from the initial allocation s0.
// Experiments counts distinct experiments: one the second procedure repeats
// from the first is answered from memory, as a lab notebook would.
func Recommend(ctx context.Context, x Experimenter, d Deployment, s0 Allocation, opts Options) (Recommendation, error) {
	var rec Recommendation
	memo := &memoExperimenter{x: x, seen: map[string]Observation{}}
	c, err := FindCriticalResource(ctx, memo, d, s0, opts)
	rec.Critical, rec.Experiments = c, len(memo.seen)
	if err != nil {
		return rec, err
	}
	m, err := InferMinConcurrentJobs(ctx, memo, d, c, opts)
	rec.MinJobs, rec.Experiments = m, len(memo.seen)
	if err != nil {
		return rec, err
	}
	sz, err := CalculateMinAllocation(d, c.Tier, m.MinJobs, m.Measurements)
	if err != nil {
		return rec, fmt.Errorf("calculate-min-allocation: %w", err)
	}
	rec.Sizing = sz
	rec.Allocation, rec.Tiers = RecommendAllocation(d, sz, c.Reserve)
	return rec, nil
}

// memoExperimenter answers a repeated experiment from memory.
type memoExperimenter struct {
	x    Experimenter
	seen map[string]Observation
}

func (m *memoExperimenter) RunExperiment(ctx context.Context, e Experiment) (Observation, error) {
	k := fmt.Sprintf("%s|%s|%d|%v", e.Deployment.Topology, e.Allocation.Key(), e.Workload.Users, e.Timing)
	if o, ok := m.seen[k]; ok {
		return o, nil
	}
	o, err := m.x.RunExperiment(ctx, e)
	if err == nil {
		m.seen[k] = o
	}
	return o, err
}
