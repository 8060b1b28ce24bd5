package jvmwarm

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/softalloc/softalloc/testbed/runfiles"
)

// HotAlloc is the lifted warm-up trial's allocation, by threads variant:
// pools that let the JIT see the load. On its own 2 connections a JVM was
// pushed to 107-114 pages/s (against 241-268 on generous pools), and one
// never settled under the cap.
var HotAlloc = map[string]string{
	"platform": "web.threads=400,app.threads=40,app.connections=40",
	"virtual":  "web.threads=400,app.permits=40,app.connections=40",
}

// CapsInForce reads the caps the testbed set (runfiles.Cap), as testbed.sh
// caps takes them: web=C app=C db=C.
func CapsInForce(tbDir string) ([]string, error) {
	var caps []string
	for _, tier := range runfiles.Tiers {
		c, err := runfiles.Cap(tbDir, tier)
		if err != nil {
			return nil, err
		}
		caps = append(caps, tier+"="+c)
	}
	return caps, nil
}

// SetCaps moves the testbed's CPU caps (testbed.sh caps).
func SetCaps(testbed string, caps []string) error {
	cmd := exec.Command(testbed, append([]string{"caps"}, caps...)...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("testbed.sh caps %s: %w", strings.Join(caps, " "), err)
	}
	return nil
}

// WithAppCapLifted runs trial with the app tier's cap at hotCap (cores, or
// max for none), so that the JIT compiles the hot code with a full core
// rather than over minutes at a tenth of one, and puts the caps in force
// back whatever the trial did. It returns those caps, as testbed.sh caps
// takes them. testbed is testbed.sh, tbDir the testbed's directory.
func WithAppCapLifted(testbed, tbDir, hotCap string, trial func() error) (string, error) {
	caps, err := CapsInForce(tbDir)
	if err != nil {
		return "", err
	}
	inForce := strings.Join(caps, " ")
	lifted := make([]string, len(caps))
	for i, kv := range caps {
		lifted[i] = kv
		if strings.HasPrefix(kv, "app=") {
			lifted[i] = "app=" + hotCap
		}
	}
	if err := SetCaps(testbed, lifted); err != nil {
		// Part of the caps may have moved.
		return inForce, errors.Join(err, SetCaps(testbed, caps))
	}
	trialErr := trial()
	if err := SetCaps(testbed, caps); err != nil {
		return inForce, errors.Join(trialErr, fmt.Errorf("putting the caps back after the warm-up: %w", err))
	}
	if trialErr != nil {
		return inForce, fmt.Errorf("warm-up with the app's cap lifted: %w", trialErr)
	}
	return inForce, nil
}

// Record is a warm-up as the evaluation pages show it: the trial with the
// app's cap lifted, if any (the Hot fields), then trials under the cap.
type Record struct {
	// Caps are the testbed's caps, put back after the lifted trial.
	Caps          string  `json:"caps,omitempty"`
	HotCap        string  `json:"hotCap,omitempty"`
	HotUsers      int     `json:"hotUsers,omitempty"`
	HotSeconds    float64 `json:"hotSeconds,omitempty"`
	HotThroughput float64 `json:"hotThroughput,omitempty"`
	// Users of the trials under the cap, their runtime and each one's app
	// CPU per page (ms).
	Users      int       `json:"users"`
	Trial      string    `json:"trial"`
	CPUPerPage []float64 `json:"cpuPerPage"`
	// Settled: the last Window trials were Flat within the trials allowed.
	Settled bool    `json:"settled"`
	Seconds float64 `json:"seconds"`
}

// UntilFlat runs trial, which answers the app's CPU per page in ms, until
// the CPU per page is Flat or trials have run, recording each in r.
func (r *Record) UntilFlat(trials int, trial func() (float64, error)) error {
	for range trials {
		ms, err := trial()
		if err != nil {
			return fmt.Errorf("warm-up under the cap: %w", err)
		}
		r.CPUPerPage = append(r.CPUPerPage, ms)
		fmt.Fprintf(os.Stderr, "warm-up: %.2f ms of app CPU per page\n", ms)
		if r.Settled = Flat(r.CPUPerPage); r.Settled {
			return nil
		}
	}
	return nil
}
