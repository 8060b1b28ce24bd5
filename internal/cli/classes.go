package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/softalloc/softalloc/internal/report"
	"github.com/softalloc/softalloc/internal/sim/classes"
)

// This file holds the multi-class commands: `softalloc degradation` and
// `softalloc recommend --classes` (dispatched from recommend.go).

type degradationOptions struct {
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

// NewDegradationCmd is `softalloc degradation`: seed 000's experiment.
func NewDegradationCmd(s Streams) *cobra.Command {
	o := &degradationOptions{}
	cmd := &cobra.Command{
		Use:   "degradation",
		Short: "Per-class throughput as one class's load grows: the degradation scheme of each CPU policy",
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
  softalloc degradation --classes light,heavy --heavy 0:40:5 --policy ps,rr --quantum 10ms,100ms --plot scheme.svg
  softalloc degradation --classes light,heavy --heavy 0:40:5 --policy priority --pools per-class
  softalloc degradation --classes light,heavy --heavy 0:40:5 --policy weighted --weight light=0.8,heavy=0.2
  softalloc degradation --classes light,middle,heavy --users light=20,middle=20 --heavy 0:40:10 --output json
  softalloc degradation --trial --workload internal/sim/classes/testdata/seed002-bursty.yaml
  softalloc degradation --trial --no-selector --workload internal/sim/classes/testdata/seed002-bursty.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDegradation(cmd, s, o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.workload, "workload", "", "workload file (default: the embedded seed 000 set-up)")
	fs.StringVar(&o.classes, "classes", "", "classes taking part, comma-separated (default: every class with users, and the swept one)")
	fs.StringVar(&o.sweep, "sweep", "heavy", "the class whose users are raised")
	fs.StringVar(&o.levels, "heavy", "0:40:5", "users of the swept class: N, N1,N2,... or START:END:STEP")
	fs.StringVar(&o.users, "users", "", "users of held classes, e.g. light=30,middle=20 (default: the workload's)")
	fs.StringVar(&o.policies, "policy", "", "CPU policies to compare: ps, rr, priority, weighted (comma-separated; default: the workload's)")
	fs.StringVar(&o.quanta, "quantum", "", "rr time slices, comma-separated, e.g. 10ms,100ms (default: the workload's)")
	fs.StringVar(&o.weights, "weight", "", "weighted shares, e.g. light=0.8,heavy=0.2 (default: the workload's)")
	fs.StringVar(&o.priority, "priority", "", "strict priority order, highest first, e.g. light,heavy (default: the workload's)")
	fs.StringVar(&o.pools, "pools", "shared", "shared (one pool) or per-class (each class its own pool of --pool threads)")
	fs.IntVar(&o.poolSize, "pool", 0, "pool size (default: the workload's)")
	fs.DurationVar(&o.duration, "duration", 0, "measured time per trial (default: the workload's)")
	fs.Uint64Var(&o.seed, "seed", 1, "simulator seed: the same seed gives the same numbers")
	registerParallel(fs, &o.parallel, "trials run at once")
	fs.StringVar(&o.plot, "plot", "", "also draw each held class's throughput as a share of its solo value, a curve per policy (.svg, .png or .pdf)")
	fs.StringVarP(&o.output, "output", "o", "table", "output format: table or json")
	fs.BoolVar(&o.trial, "trial", false, "run the workload once as it is and print the per-class report")
	fs.BoolVar(&o.noSelect, "no-selector", false, "with --trial: serve every request with the full approach")
	return cmd
}

// DegradationJSON is `softalloc degradation --output json`.
type DegradationJSON struct {
	Workload string           `json:"workload"`
	Swept    string           `json:"swept"`
	Schemes  []classes.Scheme `json:"schemes"`
}

func runDegradation(cmd *cobra.Command, s Streams, o *degradationOptions) error {
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
	if cmd.Flags().Changed("duration") && o.duration <= 0 {
		return usagef("--duration: want a time > 0 (leave --duration out for the workload's), got %v", o.duration)
	}
	w, err := loadClassesWorkload(o.workload)
	if err != nil {
		return err
	}
	if o.duration > 0 {
		w.Run.Duration = classes.Duration(o.duration.Seconds())
	}
	if o.trial {
		return runTrial(cmd, s, o, w)
	}
	if o.noSelect {
		return usagef("--no-selector goes with --trial")
	}
	levels, err := parseLevels("--heavy", o.levels)
	if err != nil {
		return err
	}
	held, err := parseAssignments("--users", o.users, func(v string) (int, error) {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 1_000_000 {
			return 0, fmt.Errorf("want a number of users in 0..1000000")
		}
		return n, nil
	})
	if err != nil {
		return err
	}
	names := splitList(o.classes)
	if len(names) == 0 {
		for _, k := range w.Classes {
			_, given := held[k.Name]
			if k.Name == o.sweep || given || (k.Load.Users > 0 && k.Load.Arrivals == nil && k.Load.Ramp == nil) {
				names = append(names, k.Name)
			}
		}
	}
	setups, err := o.setups(w)
	if err != nil {
		return err
	}
	schemes, err := classes.Degradation(cmd.Context(), w, classes.DegradationOptions{
		Classes: names, Swept: o.sweep, Levels: levels, Held: held, Setups: setups, Seed: o.seed, Parallel: o.parallel,
	})
	if err != nil {
		if cmd.Context().Err() != nil {
			return err
		}
		return usageError{err}
	}
	if o.plot != "" {
		if err := plotSchemes(o.plot, o.sweep, names, schemes); err != nil {
			return err
		}
	}
	if o.output == "json" {
		return report.WriteJSON(s.Out, DegradationJSON{Workload: w.Name, Swept: o.sweep, Schemes: schemes})
	}
	return writeSchemes(s.Out, o.sweep, names, schemes)
}

// setups turns --policy, --quantum, --weight, --priority and --pools into
// the setups to compare.
func (o *degradationOptions) setups(w *classes.Workload) ([]classes.Setup, error) {
	base := classes.Setup{PoolSize: o.poolSize}
	switch o.pools {
	case "shared":
	case "per-class":
		base.PerClassPools = true
		if o.poolSize > 0 {
			base.PoolSize = 0
			base.PoolSizes = map[string]int{}
			for _, k := range w.Classes {
				base.PoolSizes[k.Name] = o.poolSize
			}
		}
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
	if order := splitList(o.priority); len(order) > 0 {
		base.Priorities = map[string]int{}
		for i, n := range order {
			base.Priorities[n] = len(order) - i
		}
	}
	var quanta []float64
	for _, q := range splitList(o.quanta) {
		d, err := time.ParseDuration(q)
		if err != nil || d <= 0 {
			return nil, usagef("--quantum %q: %q is not a time slice such as 10ms", o.quanta, q)
		}
		quanta = append(quanta, d.Seconds())
	}
	policies := splitList(o.policies)
	if len(policies) == 0 {
		policies = []string{w.Server.Policy}
	}
	var out []classes.Setup
	for _, p := range policies {
		switch p {
		case classes.PolicyPS, classes.PolicyPriority, classes.PolicyWeighted:
			st := base
			st.Policy = p
			out = append(out, st)
		case classes.PolicyRR:
			qs := quanta
			if len(qs) == 0 {
				qs = []float64{float64(w.Server.Quantum)}
				if qs[0] <= 0 {
					return nil, usagef("--policy rr: want --quantum (the workload has none)")
				}
			}
			for _, q := range qs {
				st := base
				st.Policy, st.Quantum = p, q
				out = append(out, st)
			}
		default:
			return nil, usagef("--policy %q: want ps, rr, priority or weighted", p)
		}
	}
	for i := range out {
		if _, err := out[i].Apply(w); err != nil {
			return nil, usageError{err}
		}
	}
	return out, nil
}

func writeSchemes(w io.Writer, swept string, names []string, schemes []classes.Scheme) error {
	for i, sc := range schemes {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s\n", sc.Setup)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		h := []string{strings.ToUpper(swept)}
		for _, n := range names {
			u := strings.ToUpper(n)
			h = append(h, u+"/S", u+" SOLO/S", u+" DROP", u+" RT")
		}
		h = append(h, "CPU")
		fmt.Fprintln(tw, strings.Join(h, "\t")+"\t")
		for _, p := range sc.Points {
			rec := []string{strconv.Itoa(p.Level)}
			for _, n := range names {
				c := p.Class(n)
				drop, rt := "-", "-"
				if c.Solo > 0 {
					drop = report.Percent(-100*c.Drop, 1, false)
				}
				if c.Throughput > 0 {
					rt = fmt.Sprintf("%.3f", c.ResponseTime)
				}
				rec = append(rec, fmt.Sprintf("%.1f", c.Throughput), fmt.Sprintf("%.1f", c.Solo), drop, rt)
			}
			rec = append(rec, fmt.Sprintf("%.2f", p.CPU))
			fmt.Fprintln(tw, strings.Join(rec, "\t")+"\t")
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintln(w, "\nthroughput in requests/s; solo is the class alone with the same users; drop is the change from solo; rt is the mean response time in s.")
	return err
}

// plotSchemes draws each held class's throughput as a percentage of its
// solo value against the swept class's users, one curve per setup and held
// class (seed 000's Figure 2). The swept class is left out: beside four
// policies its curves would double the lines and repeat the palette.
func plotSchemes(path, swept string, names []string, schemes []classes.Scheme) error {
	var curves []report.Curve
	for _, sc := range schemes {
		for _, n := range names {
			if n == swept {
				continue
			}
			c := report.Curve{Label: sc.Setup + ": " + n}
			for _, p := range sc.Points {
				k := p.Class(n)
				if k.Solo > 0 {
					c.X = append(c.X, float64(p.Level))
					c.Y = append(c.Y, 100*k.Throughput/k.Solo)
				}
			}
			if len(c.X) > 0 {
				curves = append(curves, c)
			}
		}
	}
	return report.SavePlot(path, "Degradation scheme", swept+" users", "throughput, % of solo", curves)
}

// runTrial is `degradation --trial`: one trial of the workload as it is.
func runTrial(cmd *cobra.Command, s Streams, o *degradationOptions, w *classes.Workload) error {
	for _, f := range []string{"classes", "sweep", "heavy", "users", "policy", "quantum", "weight", "priority", "pools", "pool", "plot"} {
		if cmd.Flags().Changed(f) {
			return usagef("--%s does not apply with --trial (edit the workload file)", f)
		}
	}
	if o.noSelect {
		for i := range w.Classes {
			w.Classes[i].Selector = nil
		}
	}
	r, err := classes.Simulate(cmd.Context(), w, o.seed)
	if err != nil {
		return err
	}
	if o.output == "json" {
		return report.WriteJSON(s.Out, r)
	}
	return writeTrial(s.Out, r)
}

func writeTrial(w io.Writer, r classes.Result) error {
	fmt.Fprintf(w, "workload %s: %s measured, %.2f hits/s, %.2f errors/s, CPU %.0f%%\n\n",
		r.Name, time.Duration(r.Seconds*float64(time.Second)), r.HitsPerSecond, r.ErrorsPerSecond, 100*r.CPU)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "CLASS\tTHROUGHPUT/S\tGOODPUT/S\tERRORS/S\tADEQUACY\tLIMIT\tMEAN RT\tP50\tP90\tP99\tSERVER\t")
	for _, c := range r.Classes {
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\t%.1f%%\t%gs\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t\n", c.Name, c.Throughput, c.Goodput,
			c.ErrorsPerSecond, 100*c.Adequacy, c.Limit, c.ResponseTime, c.P50, c.P90, c.P99, c.ServerTime)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nthroughput and goodput (within the SLA) in responses/s; adequacy is the share of requests answered within the limit; times in s; server is the time holding a thread.")
	for _, c := range r.Classes {
		if len(c.Approaches) < 2 {
			continue
		}
		fmt.Fprintf(w, "\n%s by approach (%d selector switches):", c.Name, c.Switches)
		for _, a := range c.Approaches {
			fmt.Fprintf(w, " %s %.0f%% (%d of %d adequate);", a.Name, 100*a.Share, a.Adequate, a.Served)
		}
		fmt.Fprintln(w)
	}
	if len(r.Series) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "START\tUSERS\tHITS/S\tERRORS/S\tDURATION\tMAX\t")
	for _, b := range r.Series {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%.2f\t%.1f\t\n", time.Duration(b.Start*float64(time.Second)), b.Users,
			b.HitsPerSecond, b.ErrorsPerSecond, b.Duration, b.MaxDuration)
	}
	return tw.Flush()
}

func loadClassesWorkload(path string) (*classes.Workload, error) {
	if path == "" {
		return classes.Seed000(), nil
	}
	w, err := classes.LoadWorkload(path)
	if err != nil {
		return nil, configError(err)
	}
	return w, nil
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
	for _, f := range splitList(s) {
		v, err := num(f)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, usagef("%s: want N, N1,N2,... or START:END:STEP", flag)
	}
	return out, nil
}

// runRecommendClasses is `softalloc recommend --classes FILE`.
func runRecommendClasses(cmd *cobra.Command, s Streams, file string, o *campaignOptions) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	for _, f := range []string{"topology", "deployment", "alloc", "runner", "campaign", "model", "format"} {
		if cmd.Flags().Changed(f) {
			return usagef("--%s does not apply with --classes (the workload file describes the server)", f)
		}
	}
	w, err := classes.LoadWorkload(file)
	if err != nil {
		return configError(err)
	}
	rec, err := classes.Recommend(cmd.Context(), w, classes.RecommendOptions{Seed: o.runner.seed})
	if err != nil {
		if cmd.Context().Err() == nil {
			return usageError{err}
		}
		return err
	}
	if o.output == "json" {
		return report.WriteJSON(s.Out, rec)
	}
	return writeClassesRecommendation(s.Out, rec)
}

func writeClassesRecommendation(w io.Writer, rec classes.Recommendation) error {
	fmt.Fprintf(w, "workload %s: critical resource %s (%d cores, %.0f%% busy at the load)\n\n",
		rec.Workload, rec.Critical.Resource, rec.Critical.Cores, 100*rec.Critical.Utilization)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CLASS\tOBJECTIVE\tUSERS\tMINJOBS\tPOOL\tSHARED POOL\tRECOMMENDED\t")
	for _, c := range rec.Classes {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\t\n", c.Name, c.Objective, c.Users, c.MinJobs, c.Pool,
			formatOutcome(c.Shared), formatOutcome(c.Recommended))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nshared pool: one pool of %d for every class. outcomes: throughput/s, adequacy, mean response time; * marks a missed objective.\n", rec.SharedPool)
	if len(rec.Schemes) > 0 {
		var names []string
		for _, c := range rec.Schemes[0].Points[0].Classes {
			names = append(names, c.Name)
		}
		fmt.Fprintf(w, "\ndegradation scheme as %s grows:\n\n", rec.Swept)
		if err := writeSchemes(w, rec.Swept, names, rec.Schemes); err != nil {
			return err
		}
	}
	for _, m := range rec.Warnings {
		fmt.Fprintf(w, "warning: %s\n", m)
	}
	return nil
}

func formatOutcome(o classes.Outcome) string {
	mark := ""
	if !o.Met {
		mark = " *"
	}
	return fmt.Sprintf("%.1f/s %.0f%% %.3fs%s", o.Throughput, 100*o.Adequacy, o.ResponseTime, mark)
}
