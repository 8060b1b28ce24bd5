// Package runner turns a runner name and its settings into an
// algorithms.Experimenter: the registry behind --runner. A runner is where
// experiments run (sim, replay, exec, live); what a caller may need to know
// of one beyond RunExperiment it learns here, from optional interfaces the
// experimenter implements, never from its concrete type.
package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/runner/replay"
	"github.com/softalloc/softalloc/internal/sim"
	"github.com/softalloc/softalloc/internal/topology"
)

// Config holds every runner's settings; each runner reads its own.
type Config struct {
	Name string
	// Seed and ModelPath are the simulator's.
	Seed      uint64
	ModelPath string
	// Campaign is the replay runner's recorded campaign (JSON Lines).
	Campaign string
	// Command (argv), Retries and Timeout are the exec runner's; Log
	// receives its program's stderr.
	Command []string
	Retries int
	Timeout time.Duration
	// Protocol is the exec protocol version the program speaks (0: 1).
	Protocol int
	Log      io.Writer
	// DeploymentFile is the deployment file the campaign runs on, when one
	// was given; DeploymentPath is where it was read from. Its runner section
	// carries settings of runners such as live.
	DeploymentFile *topology.DeploymentFile
	DeploymentPath string
}

// Runner is a configured runner: an Experimenter with what a command needs
// to know of it.
type Runner struct {
	algorithms.Experimenter
	Name string
	// DefaultTiming is the trial schedule used when the user names none:
	// adaptive (a precision above 0) on every runner that can end a trial
	// early. AdaptiveRampUp, when set, is its least warm-up in place of
	// DefaultTiming.RampUp while trials are adaptive.
	DefaultTiming  algorithms.Timing
	AdaptiveRampUp time.Duration
	// Settings identify the runner's configuration (journal keys, metrics labels).
	Settings map[string]string
	// Warnings are things the user should know (a torn campaign line).
	Warnings []string
	// Parallel says trials may run at once: true for runners whose trials
	// are independent computations (sim, replay), false for runners that
	// drive one real deployment (exec, live).
	Parallel bool
	// Seeded says WithSeed gives other random numbers (the simulator).
	Seeded bool
	// config is what the runner was built from, for WithSeed.
	config Config
}

// ExperimentChecker is implemented by runners that can tell, without
// running it, that an experiment cannot run (the simulator's rules on tiers
// and pools), so that a campaign fails before its first experiment.
type ExperimentChecker interface {
	CheckExperiment(e algorithms.Experiment) error
}

// Check reports what the runner would refuse in e, if it can tell beforehand.
func (r Runner) Check(e algorithms.Experiment) error {
	if c, ok := r.Experimenter.(ExperimentChecker); ok {
		return c.CheckExperiment(e)
	}
	return nil
}

// SizingChecker is implemented by runners that can tell, without running
// a trial, that they will not read a tier's throughput and response time,
// which a command that sizes pools (recommend) needs of every tier.
type SizingChecker interface {
	CheckSizing(e algorithms.Experiment, command string) error
}

// CheckSizing reports what the runner would not read of e's tiers that
// command's sizing needs, if it can tell beforehand.
func (r Runner) CheckSizing(e algorithms.Experiment, command string) error {
	if c, ok := r.Experimenter.(SizingChecker); ok {
		return c.CheckSizing(e, command)
	}
	return nil
}

// WithSeed is the same runner with another seed (runners with Seeded only).
func (r Runner) WithSeed(seed uint64) (Runner, error) {
	if !r.Seeded {
		return Runner{}, fmt.Errorf("only the sim runner has seeds (runner %q)", r.Name)
	}
	cfg := r.config
	cfg.Seed = seed
	return New(cfg)
}

// Workers is how many trials to run at once for a request of n.
func (r Runner) Workers(n int) int {
	if !r.Parallel {
		return 1
	}
	return max(1, n)
}

type factory func(Config) (Runner, error)

func factories() map[string]factory {
	return map[string]factory{
		"sim":    newSim,
		"replay": newReplay,
		"exec":   newExec,
		"live":   newLive,
	}
}

// Names lists the registered runners.
func Names() []string {
	var names []string
	for n := range factories() {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// New builds the named runner.
func New(cfg Config) (Runner, error) {
	f, ok := factories()[cfg.Name]
	if !ok {
		return Runner{}, fmt.Errorf("runner %q: want one of %s", cfg.Name, strings.Join(Names(), ", "))
	}
	r, err := f(cfg)
	r.config = cfg
	return r, err
}

func newSim(cfg Config) (Runner, error) {
	m := sim.DefaultModel()
	model := "default"
	if cfg.ModelPath != "" {
		var err error
		if m, err = sim.LoadModel(cfg.ModelPath); err != nil {
			return Runner{}, fmt.Errorf("runner sim: %w", err)
		}
		model = cfg.ModelPath
	}
	// The model's parameters are part of the runner's identity: a journal
	// recorded with other demands or bounds must not be reused.
	params, err := json.Marshal(m)
	if err != nil {
		return Runner{}, fmt.Errorf("runner sim: %w", err)
	}
	sum := sha256.Sum256(params)
	t := sim.DefaultTiming()
	t.Precision = algorithms.DefaultPrecision
	return Runner{
		Experimenter:   &sim.Runner{Model: m, Seed: cfg.Seed, Trials: sim.NewTrials(sim.DefaultTrialsBudget)},
		Name:           "sim",
		DefaultTiming:  t,
		AdaptiveRampUp: sim.AdaptiveRampUp,
		Settings:       map[string]string{"seed": fmt.Sprint(cfg.Seed), "model": model + "@" + hex.EncodeToString(sum[:6])},
		Parallel:       true,
		Seeded:         true,
	}, nil
}

func newReplay(cfg Config) (Runner, error) {
	if cfg.Campaign == "" {
		return Runner{}, fmt.Errorf("runner replay: want --campaign FILE (a recorded campaign, JSON Lines)")
	}
	r, err := replay.Load(cfg.Campaign)
	if err != nil {
		return Runner{}, err
	}
	// Adaptive by default, as the campaigns it replays were recorded: a
	// recording at the asked precision answers first (Runner).
	t := algorithms.PaperTiming
	t.Precision = algorithms.DefaultPrecision
	return Runner{
		Experimenter:  r,
		Name:          "replay",
		DefaultTiming: t,
		Settings:      map[string]string{"campaign": cfg.Campaign},
		Warnings:      r.Warnings,
		Parallel:      true,
	}, nil
}
