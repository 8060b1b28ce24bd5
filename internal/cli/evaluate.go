package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/softalloc/softalloc/internal/evaluate"
	"github.com/softalloc/softalloc/internal/runner"
	"github.com/softalloc/softalloc/internal/safefile"
)

// evaluateOptions are evaluate's.
type evaluateOptions struct {
	f          *factory
	cmd        *cobra.Command
	out        string
	topologies string
	seeds      string
	runtime    time.Duration
	rampUp     time.Duration
	parallel   int
	model      string
	progress   progressFlags
	precision  precisionValue
	fixed      bool
	reference  string
	coverage   int
	replicas   bool
}

// newCmdEvaluate is `softalloc evaluate`: the figures we compete on.
func newCmdEvaluate(f *factory, runF func(*evaluateOptions) error) *cobra.Command {
	o := &evaluateOptions{f: f}
	def := evaluate.DefaultConfig()
	cmd := &cobra.Command{
		Use:   "evaluate",
		Short: "Measure simulator speed, experiments and recommendation quality (docs/evaluation.md)",
		Long: `evaluate measures, in one run on this machine:
  1. simulator speed: events/s, events/page and wall time of default trials,
     growth with users and replicas, and whether it is linear in events;
  2. experiments needed by find-critical + recommend in the efficient and the
     paper mode, beside an exhaustive grid and a random search of the
     efficient mode's budget;
  3. quality: the recommendation's maximum goodput over the grid's best at
     SLA thresholds of 0.2, 0.5 and 2 s, beside 400-150-60, Tomcat's defaults
     and the HikariCP rule of thumb, on several seeds;
  4. the wall time of whole recommend campaigns.
Trials are adaptive (--precision; --runtime is the longest window) and the
default campaign also runs with fixed-length trials beside them (--ramp-up
and --runtime); the coverage of the intervals is measured over
--coverage-seeds seeds at three workloads.
--reference names a fixed-length evaluation (softalloc evaluate --fixed).
Its grids (evaluation-grids.jsonl beside it) are the ground truth: each
topology and seed it holds is judged on its grid, measured once, after one
of its trials is reproduced exactly (a reference of another simulator is
refused); this run measures only the answers the grid lacks, and one grid
of its own as validate would (1/4/1/4 seed 1) to set beside it. The
coverage's long-run means come from it too. Every ratio is compared with
the reference's answers on the same grid.
It writes evaluation.md, evaluation.json, the grids it measured
(evaluation-grids.jsonl) and SVG plots to --out.`,
		Example: `  softalloc evaluate --out docs --runtime 2m --reference docs/fixed/evaluation.json
  softalloc evaluate --fixed --out /tmp/fixed --runtime 2m
  softalloc evaluate --topologies 1/4/1/4 --seeds 1 --runtime 3m --coverage-seeds 0 --out /tmp/eval
  softalloc evaluate --replicas --out docs`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(o)
			}
			return runEvaluate(o)
		},
	}
	o.cmd = cmd
	fs := cmd.Flags()
	fs.StringVar(&o.out, "out", "docs", "directory for evaluation.md, evaluation.json and the plots")
	fs.StringVar(&o.topologies, "topologies", "", "comma-separated topologies (default "+strings.Join(def.Topologies, ",")+")")
	fs.StringVar(&o.seeds, "seeds", "", "comma-separated simulator seeds (default 1,2)")
	fs.DurationVar(&o.runtime, "runtime", def.Timing.Runtime, "measured runtime of fixed trials, the longest window of adaptive ones")
	fs.DurationVar(&o.rampUp, "ramp-up", def.FixedTiming.RampUp, "warm-up of fixed-length trials (adaptive ones find theirs in the data)")
	o.precision = precisionValue(def.Timing.Precision)
	fs.Var(&o.precision, "precision", "precision of the adaptive trials (see recommend --help)")
	fs.BoolVar(&o.fixed, "fixed", false, "every trial fixed-length, as before trials were adaptive (a reference for --reference)")
	fs.StringVar(&o.reference, "reference", "", "a fixed-length evaluation.json (evaluate --fixed): its grids are the ground truth, its ratios compared")
	fs.IntVar(&o.coverage, "coverage-seeds", def.Coverage.Seeds, "seeds per workload of the coverage measurement (0: none)")
	registerParallel(fs, &o.parallel, "jobs at once (campaigns, grids, trials), one core each")
	fs.StringVar(&o.model, "model", "", "simulator parameter file (default: the embedded RUBBoS testbed)")
	o.progress.register(fs)
	fs.BoolVar(&o.replicas, "replicas", false, replicasEvaluateHelp)
	return cmd
}

func runEvaluate(o *evaluateOptions) error {
	if o.replicas {
		return runEvaluateReplicas(o) // evaluate_replicas.go
	}
	cmd, s := o.cmd, o.f.Streams
	if err := checkOutputDir("--out", o.out); err != nil {
		return err
	}
	if err := checkParallel(o.parallel); err != nil {
		return err
	}
	cfg := evaluate.DefaultConfig()
	cfg.Parallel = o.parallel
	if cmd.Flags().Changed("topologies") {
		if strings.TrimSpace(o.topologies) == "" {
			return usagef("--topologies %q: want comma-separated topologies such as 1/4/1/4,1/2/1/2 (leave it out for the default six)", o.topologies)
		}
		cfg.Topologies = strings.Split(o.topologies, ",")
	}
	tops := make([]string, len(cfg.Topologies))
	for i, t := range cfg.Topologies {
		cfg.Topologies[i] = strings.TrimSpace(t)
		d, err := parseTopologyArg(t)
		if err != nil {
			return err
		}
		tops[i] = d.Topology
	}
	if err := refuseRepeats(fmt.Sprintf("--topologies %q", o.topologies), "topology", cfg.Topologies, func(i int) string { return tops[i] }); err != nil {
		return err
	}
	if cmd.Flags().Changed("seeds") && strings.TrimSpace(o.seeds) == "" {
		return usagef("--seeds %q: want comma-separated seeds such as 1,2 (leave it out for the default)", o.seeds)
	}
	rf := runnerFlags{name: "sim"}
	seeds, err := parseSeeds(o.seeds, rf)
	if err != nil {
		return err
	}
	if o.seeds != "" {
		cfg.Seeds = seeds
	}
	if cmd.Flags().Changed("runtime") {
		cfg.Timing.Runtime, cfg.FixedTiming.Runtime = o.runtime, o.runtime
	}
	if cmd.Flags().Changed("ramp-up") {
		cfg.FixedTiming.RampUp = o.rampUp
	}
	if cfg.FixedTiming.RampUp < 0 {
		return usagef("--ramp-up: want a duration >= 0, got %v", cfg.FixedTiming.RampUp)
	}
	if err := checkSimRuntime(cfg.Timing.Runtime); err != nil {
		return err
	}
	switch {
	case o.fixed && cmd.Flags().Changed("precision") && o.precision > 0:
		return usagef("--fixed and --precision %v: give one (--fixed is --precision 0)", o.precision)
	case o.fixed || o.precision == 0:
		cfg.Timing, cfg.Coverage.Seeds = cfg.FixedTiming, 0
	default:
		cfg.Timing.Precision = float64(o.precision)
		cfg.Coverage.Timing.Precision = float64(o.precision)
	}
	if o.coverage < 0 {
		return usagef("--coverage-seeds: want a number of seeds >= 0, got %d", o.coverage)
	}
	if !o.fixed && cmd.Flags().Changed("coverage-seeds") {
		cfg.Coverage.Seeds = o.coverage
	}
	if o.reference != "" {
		b, err := safefile.Read(o.reference, 16<<20)
		if err != nil {
			return configError(fmt.Errorf("--reference: %w", err))
		}
		var ref evaluate.Report
		if err := json.Unmarshal(b, &ref); err != nil || len(ref.Results) == 0 {
			return usagef("--reference %q: not an evaluation.json with results (%v)", o.reference, err)
		}
		cfg.Reference = &ref
		// Its grids, beside it: the ground truth this run's answers are
		// judged on. A reference without them leaves each run its own.
		grids := filepath.Join(filepath.Dir(o.reference), evaluate.GridsFile)
		switch g, err := evaluate.ReadGrids(grids); {
		case err == nil:
			if ref.Config.Precision > 0 {
				return usagef("--reference %q: an adaptive evaluation; its grids are no ground truth (want one of evaluate --fixed)", o.reference)
			}
			cfg.ReferenceGrids = g
		case !errors.Is(err, fs.ErrNotExist):
			return configError(fmt.Errorf("--reference: %w", err))
		}
	}
	if o.model != "" {
		// Read once now: a bad file is refused before any measurement.
		if _, err := o.f.NewRunner(runner.Config{Name: "sim", ModelPath: o.model}); err != nil {
			return configError(fmt.Errorf("--model: %w", err))
		}
		cfg.ModelPath = o.model
	}
	mode, err := o.progress.resolve(s)
	if err != nil {
		return err
	}
	if mode != "none" {
		cfg.Log = func(format string, a ...any) { fmt.Fprintf(s.Err, "evaluate: "+format+"\n", a...) }
	}
	rep, err := evaluate.Run(cmd.Context(), cfg)
	if err != nil {
		return err
	}
	if err := evaluate.Write(o.out, rep); err != nil {
		return err
	}
	fmt.Fprintf(s.Out, "wrote %s/evaluation.md, evaluation.json and plots in %.0f s\n", o.out, rep.WallTotal)
	return nil
}
