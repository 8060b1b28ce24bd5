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
	e := Experiment{Deployment: r.d, Allocation: a.Clone(), Workload: Workload{Users: users}, Timing: r.opts.Timing}
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
