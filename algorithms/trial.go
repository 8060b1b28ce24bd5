package algorithms

import (
	"context"
	"fmt"
)

// Trial is one experiment a procedure ran, with what it saw.
type Trial struct {
	Procedure   string // "find-critical" or "infer-min-jobs"
	Experiment  Experiment
	Observation Observation
	// Saturated lists what was saturated: "app-1/cpu", "web-1/threads".
	Saturated []string
}

// procedure runs the experiments of one of Algorithm 1's procedures on one
// deployment and keeps each as a Trial, telling OnStart and OnTrial.
type procedure struct {
	x      Experimenter
	d      Deployment
	opts   Options
	name   string // "find-critical", "infer-min-jobs", "sweep"
	trials []Trial
}

// run measures allocation a at users and says what was saturated.
func (r *procedure) run(ctx context.Context, a Allocation, users int) (Observation, []Saturation, []Saturation, error) {
	return r.runTimed(ctx, a, users, r.opts.Timing)
}

// decided measures allocation a at users like run, and while decide finds
// the observation Indistinguishable (an interval that contains the
// threshold it tests) measures it again at half the precision, at most
// Options.Refinements times: an adaptive trial runs as long as the answer
// needs. A trial that is not refinable is never refined: one the runner
// did not run to the precision, or one that reached its longest window
// short of it, where a finer trial would end at the same window. The
// verdict is the last observation's.
func (r *procedure) decided(ctx context.Context, a Allocation, users int, decide func(Observation) Verdict) (Observation, []Saturation, []Saturation, Verdict, error) {
	t := r.opts.Timing
	o, hw, soft, err := r.runTimed(ctx, a, users, t)
	if err != nil {
		return o, hw, soft, Indistinguishable, err
	}
	v := decide(o)
	for i := 0; v == Indistinguishable && refinable(o, t) && i < r.opts.Refinements; i++ {
		t.Precision /= 2
		if o, hw, soft, err = r.runTimed(ctx, a, users, t); err != nil {
			return o, hw, soft, Indistinguishable, err
		}
		v = decide(o)
	}
	return o, hw, soft, v, nil
}

// refinable says a finer trial could tell more than o: an adaptive trial
// that the runner ran to t's precision (a fixed trial, a program that
// ignores the precision, or a replayed recording of another precision
// cannot be refined) and that reached it before its longest window.
func refinable(o Observation, t Timing) bool {
	return t.Adaptive() && o.HasIntervals() && o.Window.Precision == t.Precision && o.Window.Precise
}

// runTimed is run with timing t.
func (r *procedure) runTimed(ctx context.Context, a Allocation, users int, timing Timing) (Observation, []Saturation, []Saturation, error) {
	e := Experiment{Deployment: r.d, Allocation: a.Clone(), Workload: Workload{Users: users}, Timing: timing}
	if r.opts.OnStart != nil {
		r.opts.OnStart(r.name, e)
	}
	o, err := r.x.RunExperiment(ctx, e)
	if err != nil {
		return Observation{}, nil, nil, fmt.Errorf("%s: experiment at %d users: %w", r.name, users, err)
	}
	hw, soft := Saturations(r.d, o, r.opts)
	t := Trial{Procedure: r.name, Experiment: e, Observation: o}
	for _, s := range append(append([]Saturation{}, hw...), soft...) {
		t.Saturated = append(t.Saturated, s.String())
	}
	r.trials = append(r.trials, t)
	if r.opts.OnTrial != nil {
		r.opts.OnTrial(t)
	}
	return o, hw, soft, nil
}
