package runner

import (
	"fmt"
	"strings"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/runner/exec"
)

// newExec builds the exec runner: the user's program, once per experiment.
func newExec(cfg Config) (Runner, error) {
	if cfg.Retries < 0 {
		return Runner{}, fmt.Errorf("runner exec: --runner-retries %d: want 0 or more", cfg.Retries)
	}
	if cfg.Timeout < 0 {
		return Runner{}, fmt.Errorf("runner exec: --runner-timeout %v: want a positive duration (0: the trial's length plus a margin)", cfg.Timeout)
	}
	r, err := exec.New(cfg.Command)
	if err != nil {
		return Runner{}, fmt.Errorf("runner exec: %w", err)
	}
	r.Retries, r.Timeout, r.Log, r.Protocol = cfg.Retries, cfg.Timeout, cfg.Log, cfg.Protocol
	if err := r.CheckProtocol(); err != nil {
		return Runner{}, fmt.Errorf("runner exec: --runner-protocol: %w", err)
	}
	// A real deployment needs the paper's warm-up to reach steady state.
	// Adaptive: a program that runs the trial to the precision ends early;
	// one that ignores it measures the paper's 12 minutes, as before.
	t := algorithms.PaperTiming
	t.Precision = algorithms.DefaultPrecision
	return Runner{
		Experimenter:  r,
		Name:          "exec",
		DefaultTiming: t,
		// The program decides what is measured, so a journal keys on it.
		Settings: map[string]string{"command": strings.Join(cfg.Command, " ")},
	}, nil
}
