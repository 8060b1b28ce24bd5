package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/softalloc/softalloc/internal/evaluate"
	"github.com/softalloc/softalloc/internal/runner"
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
It writes evaluation.md, evaluation.json and SVG plots to --out.`,
		Example: `  softalloc evaluate --out docs
  softalloc evaluate --topologies 1/2/1/2,1/4/1/4 --seeds 1 --runtime 3m --out /tmp/eval`,
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
	fs.DurationVar(&o.runtime, "runtime", def.Timing.Runtime, "measured runtime of campaign and grid trials")
	fs.DurationVar(&o.rampUp, "ramp-up", def.Timing.RampUp, "warm-up of campaign and grid trials")
	registerParallel(fs, &o.parallel, "grid trials at once")
	fs.StringVar(&o.model, "model", "", "simulator parameter file (default: the embedded RUBBoS testbed)")
	o.progress.register(fs)
	return cmd
}

func runEvaluate(o *evaluateOptions) error {
	cmd, s := o.cmd, o.f.Streams
	if err := checkOutputDir("--out", o.out); err != nil {
		return err
	}
	if err := checkParallel(o.parallel); err != nil {
		return err
	}
	cfg := evaluate.DefaultConfig()
	cfg.Parallel = o.parallel
	if o.topologies != "" {
		cfg.Topologies = strings.Split(o.topologies, ",")
	}
	for _, t := range cfg.Topologies {
		if _, err := parseTopologyArg(t); err != nil {
			return err
		}
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
		cfg.Timing.Runtime = o.runtime
	}
	if cmd.Flags().Changed("ramp-up") {
		cfg.Timing.RampUp = o.rampUp
	}
	if cfg.Timing.RampUp < 0 {
		return usagef("--ramp-up: want a duration >= 0, got %v", cfg.Timing.RampUp)
	}
	if err := checkSimRuntime(cfg.Timing.Runtime); err != nil {
		return err
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
