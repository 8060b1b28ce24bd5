package algorithms

import "fmt"

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
	// DeriveSteps names the steps FindCriticalResource (and so Recommend)
	// derives from the deployment before its first step, from a low-load
	// trial's prediction of the saturation workload, instead of taking
	// Step, SmallStep and ScanSpan: the defaults are the simulator's scale
	// (it saturates near 5,500 users), which a deployment saturating at 30
	// users passes on its first step. See Steps.
	DeriveSteps StepsToDerive
	// OnSteps, when set, is told the steps once derived.
	OnSteps func(Steps)
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
	// peak of a small-step scan), with a warning. A smaller fall (from 5%)
	// is checked directly: throughput a quarter further, above what the
	// saturated CPU could serve at the reading's demand, reads the peak too.
	// A negative value turns both checks off.
	DemandDrift float64
	// Refinements bounds how often a trial whose interval cannot decide a
	// saturation test (it contains the threshold) is measured again at half
	// the precision (default 3; negative: never). Each is a new trial with
	// about four times the window, and refining stops once one runs to its
	// longest window. Three take a 2% trial to 0.25%, about the CPU
	// interval of a fixed 12-minute trial, and a bisection probe near the
	// threshold then falls on the same side as with fixed trials: with one,
	// the default campaign read minJobs a probe early on 3 of the 12
	// evaluation topology-seeds ("taken as at the threshold"), 15-20% fewer
	// jobs; with two, on one; with three, on none, for 20% more simulated
	// time. Six cost the same as three: a fourth runs to its longest window.
	Refinements  int
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
		Refinements:       3,
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
	if o.Refinements == 0 {
		o.Refinements = d.Refinements
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
	case o.Step > o.MaxWorkload && !o.DeriveSteps.Step:
		// The first step would already pass the bound: no experiment at all.
		return fmt.Errorf("step %d users is larger than the maximum workload %d: want a step of at most %d users", o.Step, o.MaxWorkload, o.MaxWorkload)
	case o.SmallStep > o.MaxWorkload && !o.DeriveSteps.SmallStep:
		return fmt.Errorf("small step %d users is larger than the maximum workload %d: want a small step of at most %d users", o.SmallStep, o.MaxWorkload, o.MaxWorkload)
	case o.DemandDrift >= 1:
		return fmt.Errorf("demand drift %g: want a share below 1 (negative: no check)", o.DemandDrift)
	case o.SLA <= 0 || o.KneeThreshold < 0 || o.KneeFactor <= 0:
		return fmt.Errorf("thresholds: want SLA > 0 (got %g), knee threshold >= 0 (got %g), knee factor > 0 (got %g)",
			o.SLA, o.KneeThreshold, o.KneeFactor)
	}
	return nil
}
