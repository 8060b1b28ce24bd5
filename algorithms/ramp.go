package algorithms

import (
	"context"
	"fmt"
)

// Ramp is one continuous ramp of load on one allocation: the load starts at
// From users and rises in steps without a reset; at each level the runner
// measures one window, of the length the noise needs (the adaptive trials'
// stopping rule: MSER-5 finds where the step's transient ends, batch means
// give each figure's interval), and asks what to do next.
type Ramp struct {
	Deployment Deployment
	Allocation Allocation
	// From is the first level's users.
	From int
	// Timing is each window's: RampUp the least settling time after a step,
	// Runtime the longest window, Precision the relative half-width every
	// figure is measured to, SLAs the goodput thresholds.
	Timing Timing
}

// RampStep is what a ramp does after a window: rise to Users (at least the
// window's users; the same users measure another window at that level), or
// end when Users is 0. Precision, when set, is the next window's in place of
// the ramp's (a refinement of a window within the noise).
type RampStep struct {
	Users     int
	Precision float64
}

// RampWindow is one window of a ramp: a level's observation.
type RampWindow struct {
	// Index counts the windows of the ramp from 0, across its resumptions.
	Index int `json:"index"`
	Users int `json:"users"`
	// Allocation is the ramp's, as the campaign names it.
	Allocation string `json:"allocation,omitempty"`
	// Start and End are the window's edges, and Elapsed the time the level
	// took (its settling included), seconds of the runner's clock since the
	// ramp (or its resumption) began.
	Start   float64 `json:"startSeconds"`
	End     float64 `json:"endSeconds"`
	Elapsed float64 `json:"elapsedSeconds"`
	// Reused: the window was read from a journal, not measured now.
	Reused bool `json:"reused,omitempty"`
	// Record is the key of the window's record in the journal, when one
	// keeps it: the output's answer points at the journal's lines.
	Record      string      `json:"record,omitempty"`
	Observation Observation `json:"-"`
}

// Ramper is a runner that can run a ramp: an optional capability beside
// Experimenter; a campaign on a runner without it keeps the staircase of
// separate trials. RunRamp calls next after every window, in order, and
// ends when next returns a step of 0 users, an error, or ctx is done.
type Ramper interface {
	RunRamp(ctx context.Context, r Ramp, next func(RampWindow) (RampStep, error)) error
}

// Check refuses a ramp no runner can run.
func (r Ramp) Check() error {
	if r.From < 1 {
		return fmt.Errorf("ramp: want a first level of at least 1 user, got %d", r.From)
	}
	if !r.Timing.Adaptive() {
		return fmt.Errorf("ramp: want windows measured to a precision (adaptive timing), got precision %g", r.Timing.Precision)
	}
	if r.Timing.Runtime <= 0 {
		return fmt.Errorf("ramp: want a longest window > 0, got %v", r.Timing.Runtime)
	}
	return r.Timing.CheckAdaptive()
}
