package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/report"
	"github.com/softalloc/softalloc/internal/runner"
	"github.com/softalloc/softalloc/internal/version"
)

// This file holds the multi-class commands: `softalloc degradation` and
// `softalloc recommend --workload` (dispatched from recommend.go). They are
// wiring: flags become algorithms' class setups, runner.NewClasses loads the
// workload and runs its trials, algorithms' class procedures decide, and
// report prints.

// degradationOptions are degradation's.
type degradationOptions struct {
	f        *factory
	cmd      *cobra.Command
	workload string
	classes  string
	sweep    string
	levels   string
	users    string
	policies string
	quanta   string
	weights  string
	priority string
	pools    string
	poolSize int
	duration time.Duration
	seed     uint64
	parallel int
	plot     string
	output   string
	trial    bool
	noSelect bool
}

// newCmdDegradation is `softalloc degradation`: seed 000's experiment.
func newCmdDegradation(f *factory, runF func(*degradationOptions) error) *cobra.Command {
	o := &degradationOptions{f: f}
	cmd := &cobra.Command{
		Use:   "degradation",
		Short: "Per-class throughput as one class's load grows: each CPU policy's degradation scheme",
		Long: `degradation runs seed 000's experiment on the multi-class server model: it holds
the concurrency of some classes (closed users, no think time in the default
workload), raises one class's users through --heavy, and prints each class's
throughput beside its solo value (the class alone with the same users) and the
drop from it: the degradation scheme. One scheme per CPU policy in --policy:
ps (processor sharing), rr (round robin; one curve per --quantum), priority
(strict, in --priority order) and weighted (--weight shares).

The default workload is the embedded seed 000 set-up: light (Fibonacci 25,
3.9 ms), middle (Fibonacci 35, 480 ms) and heavy (DOM build and search, about
400 ms) services on 4 CPUs with one pool of 150 threads. --workload takes a
workload file (docs/classes.md).

--trial runs the workload once as it is, with its own loads (open arrivals,
ramps and slumps included), and prints each class's throughput, goodput,
errors/s, service adequacy, response-time percentiles and approach shares,
and the time series when the workload bins one. --no-selector turns the
approach selectors off (the baseline of seed 002).`,
		Example: `  softalloc degradation --classes light,heavy --heavy 0:40:5
  softalloc degradation --classes light,heavy --heavy 0:40:5 --policy ps,rr --quantum 10ms,100ms \
    --plot scheme.svg
  softalloc degradation --classes light,heavy --heavy 0:40:5 --policy priority --pools per-class
  softalloc degradation --classes light,heavy --heavy 0:40:5 --policy weighted \
    --weight light=0.8,heavy=0.2
  softalloc degradation --classes light,middle,heavy --hold light=20,middle=20 --heavy 0:40:10
  softalloc degradation --trial --workload internal/sim/classes/testdata/seed002-bursty.yaml
  softalloc degradation --trial --no-selector \
    --workload internal/sim/classes/testdata/seed002-bursty.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(o)
			}
			return runDegradation(o)
		},
	}
	o.cmd = cmd
	fs := cmd.Flags()
	fs.StringVar(&o.workload, "workload", "", "workload file (default: the embedded seed 000 set-up)")
	fs.StringVar(&o.classes, "classes", "", "classes taking part, comma-separated (default: every class with users, and the swept one)")
	fs.StringVar(&o.sweep, "sweep", "heavy", "the class whose users are raised")
	fs.StringVar(&o.levels, "heavy", "0:40:5", "users of the swept class: N, N1,N2,... or START:END:STEP")
	fs.StringVar(&o.users, "hold", "", "users of held classes, e.g. light=30,middle=20 (default: the workload's)")
	deprecatedAlias(fs, "users", "hold", &o.users)
	fs.StringVar(&o.policies, "policy", "", "CPU policies to compare: ps, rr, priority, weighted (comma-separated; default: the workload's)")
	fs.StringVar(&o.quanta, "quantum", "", "rr time slices, comma-separated, e.g. 10ms,100ms (default: the workload's)")
	fs.StringVar(&o.weights, "weight", "", "weighted shares, e.g. light=0.8,heavy=0.2 (default: the workload's)")
	fs.StringVar(&o.priority, "priority", "", "strict priority order, highest first, e.g. light,heavy (default: the workload's)")
	fs.StringVar(&o.pools, "pools", "shared", "shared (one pool) or per-class (each class its own pool of --pool threads)")
	fs.IntVar(&o.poolSize, "pool", 0, "pool size (default: the workload's)")
	fs.DurationVar(&o.duration, "runtime", 0, "measured time per trial (default: the workload's)")
	deprecatedAlias(fs, "duration", "runtime", &o.duration)
	fs.Uint64Var(&o.seed, "seed", 1, "simulator seed: the same seed gives the same numbers")
	registerParallel(fs, &o.parallel, "trials run at once")
	fs.StringVar(&o.plot, "plot", "", "also draw each held class's throughput as a share of its solo value, a curve per policy (.svg, .png or .pdf)")
	fs.StringVarP(&o.output, "output", "o", "table", "output format: table, json or csv")
	fs.BoolVar(&o.trial, "trial", false, "run the workload once as it is and print the per-class report")
	fs.BoolVar(&o.noSelect, "no-selector", false, "with --trial: serve every request with the full approach")
	return cmd
}

func runDegradation(o *degradationOptions) error {
	cmd, s := o.cmd, o.f.Streams
	if err := checkOutput(o.output); err != nil {
		return err
	}
	if err := checkParallel(o.parallel); err != nil {
		return err
	}
	if err := checkOutputFile("--plot", o.plot, plotExtensions...); err != nil {
		return err
	}
	// Left out, they are the workload's; given, 0 is no pool and no time.
	if cmd.Flags().Changed("pool") && o.poolSize < 1 {
		return usagef("--pool: want a pool size >= 1 (leave --pool out for the workload's), got %d", o.poolSize)
	}
	if (cmd.Flags().Changed("runtime") || cmd.Flags().Changed("duration")) && o.duration <= 0 {
		return usagef("--runtime: want a time > 0 (leave --runtime out for the workload's), got %v", o.duration)
	}
	cls, err := o.f.NewClasses(runner.ClassesConfig{WorkloadPath: o.workload, Seed: o.seed, Duration: o.duration, NoSelector: o.noSelect})
	if err != nil {
		return configError(err)
	}
	if o.trial {
		return runTrial(cmd, s, o, cls)
	}
	if o.noSelect {
		return usagef("--no-selector goes with --trial")
	}
	levels, err := parseLevels("--heavy", o.levels)
	if err != nil {
		return err
	}
	held, err := parseAssignments("--hold", o.users, func(v string) (int, error) {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 1_000_000 {
			return 0, fmt.Errorf("want a number of users in 0..1000000")
		}
		return n, nil
	})
	if err != nil {
		return err
	}
	setups, err := o.setups(cls.Workload)
	if err != nil {
		return err
	}
	schemes, err := algorithms.DegradationSchemes(cmd.Context(), cls, cls.Workload, algorithms.DegradationOptions{
		Classes: splitList(o.classes), Swept: o.sweep, Levels: levels, Held: held, Setups: setups, Parallel: o.parallel,
	})
	if err != nil {
		if cmd.Context().Err() != nil {
			return err
		}
		return usageError{err}
	}
	doc := report.NewDegradationJSON(cls.Workload.Name, o.sweep, schemes)
	doc.Version = version.String()
	if o.plot != "" {
		if err := report.PlotDegradation(o.plot, doc); err != nil {
			return err
		}
	}
	switch o.output {
	case "json":
		return report.WriteJSON(s.Out, doc)
	case "csv":
		return report.WriteDegradationCSV(s.Out, doc)
	}
	return report.WriteDegradationTable(s.Out, doc)
}

// setups turns --policy, --quantum, --weight, --priority and --pools into
// the setups to compare.
func (o *degradationOptions) setups(w algorithms.ClassWorkload) ([]algorithms.ClassSetup, error) {
	base := algorithms.ClassSetup{PoolSize: o.poolSize}
	switch o.pools {
	case "shared":
	case "per-class":
		base.PerClassPools = true
	default:
		return nil, usagef("--pools %q: want shared or per-class", o.pools)
	}
	weights, err := parseAssignments("--weight", o.weights, func(v string) (float64, error) {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || !(x > 0) || x > 1e9 {
			return 0, fmt.Errorf("want a weight > 0")
		}
		return x, nil
	})
	if err != nil {
		return nil, err
	}
	base.Weights = weights
	order, err := splitUnique("--priority", "class", o.priority)
	if err != nil {
		return nil, err
	}
	if len(order) > 0 {
		base.Priorities = map[string]int{}
		for i, n := range order {
			base.Priorities[n] = len(order) - i
		}
	}
	var quanta []float64
	texts := splitList(o.quanta)
	for _, q := range texts {
		d, err := time.ParseDuration(q)
		if err != nil || d <= 0 {
			return nil, usagef("--quantum %q: %q is not a time slice such as 10ms", o.quanta, q)
		}
		quanta = append(quanta, d.Seconds())
	}
	if err := refuseRepeats(fmt.Sprintf("--quantum %q", o.quanta), "time slice", texts, func(i int) float64 { return quanta[i] }); err != nil {
		return nil, err
	}
	policies, err := splitUnique("--policy", "policy", o.policies)
	if err != nil {
		return nil, err
	}
	if len(policies) == 0 {
		policies = []string{string(w.Policy)}
	}
	var out []algorithms.ClassSetup
	for _, p := range policies {
		switch policy := algorithms.CPUPolicy(p); policy {
		case algorithms.PolicyPS, algorithms.PolicyPriority, algorithms.PolicyWeighted:
			st := base
			st.Policy = policy
			out = append(out, st)
		case algorithms.PolicyRR:
			qs := quanta
			if len(qs) == 0 {
				qs = []float64{w.QuantumSeconds}
				if qs[0] <= 0 {
					return nil, usagef("--policy rr: want --quantum (the workload has none)")
				}
			}
			for _, q := range qs {
				st := base
				st.Policy, st.QuantumSeconds = policy, q
				out = append(out, st)
			}
		default:
			return nil, usagef("--policy %q: want ps, rr, priority or weighted", p)
		}
	}
	for _, st := range out {
		if err := w.CheckSetup(st); err != nil {
			return nil, usageError{err}
		}
	}
	return out, nil
}

// runTrial is `degradation --trial`: one trial of the workload as it is.
func runTrial(cmd *cobra.Command, s Streams, o *degradationOptions, cls runner.Classes) error {
	for _, f := range []string{"classes", "sweep", "heavy", "users", "policy", "quantum", "weight", "priority", "pools", "pool", "plot"} {
		if cmd.Flags().Changed(f) {
			return usagef("--%s does not apply with --trial (edit the workload file)", f)
		}
	}
	r, err := cls.Trial(cmd.Context())
	if err != nil {
		return err
	}
	r.Version = version.String()
	switch o.output {
	case "json":
		return report.WriteJSON(s.Out, r)
	case "csv":
		return report.WriteClassTrialCSV(s.Out, r)
	}
	return report.WriteClassTrialTable(s.Out, r)
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// parseAssignments reads name=value,name=value.
func parseAssignments[T any](flag, s string, parse func(string) (T, error)) (map[string]T, error) {
	out := map[string]T{}
	for _, f := range splitList(s) {
		name, v, ok := strings.Cut(f, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, usagef("%s %q: want name=value pairs, e.g. light=30", flag, s)
		}
		if _, twice := out[name]; twice {
			// The later value would silently win.
			return nil, usagef("%s %q: class %s is given twice; want each class once", flag, s, name)
		}
		x, err := parse(strings.TrimSpace(v))
		if err != nil {
			return nil, usagef("%s %q: %s: %v", flag, s, name, err)
		}
		out[name] = x
	}
	return out, nil
}

// parseLevels reads N, N1,N2,... or START:END:STEP of users, 0 allowed.
func parseLevels(flag, s string) ([]int, error) {
	num := func(f string) (int, error) {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 0 || v > 1_000_000 {
			return 0, usagef("%s %q: %q is not a number of users in 0..1000000", flag, s, f)
		}
		return v, nil
	}
	if strings.Contains(s, ":") {
		parts := strings.Split(s, ":")
		if len(parts) != 3 {
			return nil, usagef("%s %q: want START:END:STEP, e.g. 0:40:5", flag, s)
		}
		var v [3]int
		for i, p := range parts {
			var err error
			if v[i], err = num(p); err != nil {
				return nil, err
			}
		}
		if v[1] < v[0] || v[2] < 1 {
			return nil, usagef("%s %q: want START <= END and STEP >= 1", flag, s)
		}
		if (v[1]-v[0])/v[2] >= 1000 {
			return nil, usagef("%s %q: more than 1000 levels", flag, s)
		}
		var out []int
		for u := v[0]; u <= v[1]; u += v[2] {
			out = append(out, u)
		}
		return out, nil
	}
	var out []int
	texts := splitList(s)
	for _, f := range texts {
		v, err := num(f)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, usagef("%s: want N, N1,N2,... or START:END:STEP", flag)
	}
	if err := refuseRepeats(fmt.Sprintf("%s %q", flag, s), "workload", texts, func(i int) int { return out[i] }); err != nil {
		return nil, err
	}
	return out, nil
}

// runRecommendClasses is `softalloc recommend --workload FILE`.
func runRecommendClasses(o *recommendOptions) error {
	cmd, s, file := o.cmd, o.f.Streams, o.classes
	if err := checkOutput(o.output); err != nil {
		return err
	}
	for _, f := range []string{"topology", "deployment", "alloc", "runner", "campaign", "model", "format"} {
		if cmd.Flags().Changed(f) {
			return usagef("--%s does not apply with --workload (the workload file describes the server)", f)
		}
	}
	cls, err := o.f.NewClasses(runner.ClassesConfig{WorkloadPath: file, Seed: o.runner.seed})
	if err != nil {
		return configError(err)
	}
	rec, err := algorithms.RecommendClassPools(cmd.Context(), cls, cls.Workload, algorithms.ClassPoolOptions{})
	if err != nil {
		if cmd.Context().Err() == nil {
			return usageError{err}
		}
		return err
	}
	doc := report.NewClassRecommendJSON(rec)
	doc.Version = version.String()
	switch o.output {
	case "json":
		return report.WriteJSON(s.Out, doc)
	case "csv":
		return report.WriteClassRecommendCSV(s.Out, doc)
	}
	return report.WriteClassRecommendTable(s.Out, doc)
}
