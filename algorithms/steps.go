package algorithms

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// The simulator's default steps (500, 100 and 1,500 users) as shares of its
// default campaign's saturation workload: on the embedded RUBBoS model
// (1/2/1/2) the warm start predicts 5,432 users from its 500-user trial and
// find-critical reads 5,500, so the step is about a eleventh of the
// prediction, the small step a fifth of the step and the scan span three
// steps. DeriveSteps keeps those ratios on any deployment.
const (
	stepsPerSaturation = 11
	smallStepsPerStep  = 5
	scanSpanSteps      = 3
	// refineBelow: a first trial under 1/refineBelow of the predicted
	// saturation read CPU shares too small to trust (an idle server's own
	// work is most of them), so one more runs at a fifth of the prediction.
	refineBelow = 20
)

// ErrStepsNotDerived: the first low-load trial could not predict where the
// deployment saturates, so the workload steps must be given.
var ErrStepsNotDerived = errors.New("cannot derive the workload steps")

// StepsToDerive names the workload steps a campaign derives from the
// deployment (those the user did not give) instead of taking Options'.
type StepsToDerive struct{ Step, SmallStep, ScanSpan bool }

// Any reports whether a step is to be derived.
func (s StepsToDerive) Any() bool { return s.Step || s.SmallStep || s.ScanSpan }

// Steps are the workload steps a campaign used and where they came from.
type Steps struct {
	Step      int `json:"step"`
	SmallStep int `json:"smallStep"`
	ScanSpan  int `json:"scanSpan"`
	// From says where they came from: "given", "the defaults", or how they
	// were derived.
	From string `json:"from"`
	// FirstTrials are the workloads (users) of the trials the steps were
	// derived from, and PredictedSaturation the saturation workload (users)
	// MVA predicted from the last of them.
	FirstTrials         []int `json:"firstTrials,omitempty"`
	PredictedSaturation int   `json:"predictedSaturation,omitempty"`
}

// Apply sets the steps in o.
func (s Steps) Apply(o Options) Options {
	o.Step, o.SmallStep, o.ScanSpan = s.Step, s.SmallStep, s.ScanSpan
	return o
}

// FirstTrialUsers is the workload of the first low-load trial: half a user
// per core of the tier with the fewest cores (at least one user). A user
// holds at most one core at a time, so even with no think time no tier is
// more than half busy: the trial is below saturation wherever the
// bottleneck is, and its CPU per page is the demand MVA needs.
func FirstTrialUsers(d Deployment) int {
	least := 0
	for _, t := range d.Tiers {
		c := max(1, t.Replicas) * max(1, t.Cores)
		if least == 0 || c < least {
			least = c
		}
	}
	return max(1, least/2)
}

// deriveSteps derives the steps opts.DeriveSteps names from the deployment:
// a low-load trial (FirstTrialUsers), and one more at a fifth of the
// prediction when that trial was far below it, give the saturation
// workload N* as the warm start predicts it (PredictSaturation: the
// utilisation law and MVA); the step is N*/11, the small step a fifth of the
// step and the scan span three steps, the simulator's ratios. A step given
// is kept, and the others follow it without a trial.
func deriveSteps(ctx context.Context, r *procedure, s0 Allocation) (Steps, error) {
	opts, want := r.opts, r.opts.DeriveSteps
	steps := Steps{Step: opts.Step, SmallStep: opts.SmallStep, ScanSpan: opts.ScanSpan}
	var from string
	if want.Step {
		name := r.name
		r.name = "derive-steps"
		defer func() { r.name = name }()
		users := min(FirstTrialUsers(r.d), opts.MaxWorkload)
		pred := 0
		for {
			o, _, _, err := r.run(ctx, s0, users)
			if err != nil {
				return steps, err
			}
			steps.FirstTrials = append(steps.FirstTrials, users)
			if pred, err = PredictSaturation(r.d, o, users, opts.HardwareThreshold, opts.MaxWorkload); err != nil {
				return steps, fmt.Errorf("%w from a trial at %s: %w", ErrStepsNotDerived, usersList([]int{users}), err)
			}
			next := min(pred/5, opts.MaxWorkload)
			if len(steps.FirstTrials) > 1 || pred <= refineBelow*users || next <= users {
				break
			}
			users = next
		}
		steps.PredictedSaturation = pred
		steps.Step = max(1, roundDiv(pred, stepsPerSaturation))
		from = fmt.Sprintf("derived from a first trial at %s: predicted saturation %d users; the step is 1/%d of it",
			usersList(steps.FirstTrials), pred, stepsPerSaturation)
	}
	return followSteps(steps, want, from, opts.MaxWorkload)
}

// followSteps derives the small step and the scan span want names from the
// step, and says where each came from (from: how the step was derived).
func followSteps(steps Steps, want StepsToDerive, from string, maxWorkload int) (Steps, error) {
	var given, follow []string
	if !want.Step {
		given = append(given, "--step")
	}
	if want.SmallStep {
		steps.SmallStep = max(1, roundDiv(steps.Step, smallStepsPerStep))
		follow = append(follow, fmt.Sprintf("the small step 1/%d of the step", smallStepsPerStep))
	} else {
		given = append(given, "--small-step")
	}
	if want.ScanSpan {
		steps.ScanSpan = scanSpanSteps * steps.Step
		follow = append(follow, fmt.Sprintf("the scan span %d steps", scanSpanSteps))
	} else {
		given = append(given, "--scan-span")
	}
	parts := []string{}
	if from != "" {
		parts = append(parts, from)
	}
	if len(given) > 0 {
		parts = append(parts, joinAnd(given)+" given")
	}
	if len(follow) > 0 {
		parts = append(parts, joinAnd(follow)+" (the simulator's ratios)")
	}
	steps.From = strings.Join(parts, "; ")
	if steps.Step > maxWorkload || steps.SmallStep > maxWorkload {
		return steps, fmt.Errorf("%w: step %d and small step %d users, %s: want at most the maximum workload of %d users",
			ErrStepsNotDerived, steps.Step, steps.SmallStep, steps.From, maxWorkload)
	}
	return steps, nil
}

// roundDiv is a/b rounded to the nearest integer (a, b > 0).
func roundDiv(a, b int) int { return (a + b/2) / b }

func usersList(users []int) string {
	s := make([]string, len(users))
	for i, u := range users {
		s[i] = fmt.Sprintf("%d users", u)
		if u == 1 {
			s[i] = "1 user"
		}
	}
	return strings.Join(s, " and one at ")
}

func joinAnd(s []string) string {
	if len(s) <= 1 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}
