package cli

import (
	"fmt"
	"strings"

	"github.com/softalloc/softalloc/internal/evaluate"
	"github.com/softalloc/softalloc/internal/runner"
	"github.com/softalloc/softalloc/internal/topology"
)

const replicasEvaluateHelp = "measure replica ranges instead (docs/replicas-evaluation.md): on each --topologies range (default 1/2..8/1/2,1/2..8/1/4; seeds default 1) the campaign at every count judged on a grid at that count"

// runEvaluateReplicas is evaluate --replicas: the per-count campaign's
// answer at every count of a replica range against a grid at that count.
func runEvaluateReplicas(o *evaluateOptions) error {
	cmd, s := o.cmd, o.f.Streams
	fl := cmd.Flags()
	for _, name := range []string{"reference", "fixed", "coverage-seeds", "ramp-up"} {
		if fl.Changed(name) {
			return usagef("--replicas with --%s: the replicas evaluation judges each count on a grid of its own, with adaptive trials", name)
		}
	}
	if err := checkOutputDir("--out", o.out); err != nil {
		return err
	}
	if err := checkParallel(o.parallel); err != nil {
		return err
	}
	rc := evaluate.DefaultReplicasConfig()
	rc.Parallel = o.parallel
	if fl.Changed("topologies") {
		rc.Ranges = nil
		for _, t := range strings.Split(o.topologies, ",") {
			rc.Ranges = append(rc.Ranges, strings.TrimSpace(t))
		}
	}
	for _, r := range rc.Ranges {
		if _, err := topology.ParseRangedTopology(r); err != nil {
			return usagef("--topologies: %v", err)
		}
	}
	if fl.Changed("seeds") {
		if strings.TrimSpace(o.seeds) == "" {
			return usagef("--seeds %q: want comma-separated seeds such as 1,2 (leave it out for seed 1)", o.seeds)
		}
		seeds, err := parseSeeds(o.seeds, runnerFlags{name: "sim"})
		if err != nil {
			return err
		}
		rc.Seeds = seeds
	}
	if fl.Changed("runtime") {
		rc.Timing.Runtime = o.runtime
	}
	if err := checkSimRuntime(rc.Timing.Runtime); err != nil {
		return err
	}
	switch {
	case o.precision <= 0:
		return usagef("--replicas with --precision 0: the grids are screened adaptive trials; give a precision above 0")
	default:
		rc.Timing.Precision = float64(o.precision)
	}
	if o.model != "" {
		if _, err := o.f.NewRunner(runner.Config{Name: "sim", ModelPath: o.model}); err != nil {
			return configError(fmt.Errorf("--model: %w", err))
		}
		rc.ModelPath = o.model
	}
	mode, err := o.progress.resolve(s)
	if err != nil {
		return err
	}
	if mode != "none" {
		rc.Log = func(format string, a ...any) { fmt.Fprintf(s.Err, "evaluate: "+format+"\n", a...) }
	}
	// The report as it stands after each count: a run cut short leaves
	// the counts it judged.
	var werr error
	rc.Progress = func(r evaluate.ReplicasReport) {
		if err := evaluate.WriteReplicas(o.out, r); err != nil && werr == nil {
			werr = err
		}
	}
	rep, err := evaluate.RunReplicas(cmd.Context(), rc)
	if err == nil {
		err = werr
	}
	if err != nil {
		return err
	}
	if err := evaluate.WriteReplicas(o.out, rep); err != nil {
		return err
	}
	fmt.Fprintf(s.Out, "wrote %s/%s and %s in %.0f s; %d counts below %.2f of their grid's best\n", o.out, evaluate.ReplicasMarkdown,
		evaluate.ReplicasJSON, rep.WallSeconds, len(rep.Misses), rc.Target)
	return nil
}
