package cli

import (
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/metrics"
	"github.com/softalloc/softalloc/internal/report"
	"github.com/softalloc/softalloc/internal/topology"
	"github.com/softalloc/softalloc/internal/wire"
)

// simulateOptions are simulate's.
type simulateOptions struct {
	f           *factory
	cmd         *cobra.Command
	deployment  deploymentFlags
	runner      runnerFlags
	journal     journalFlags
	metrics     metricsFlags
	users       string
	slas        string
	goodputOnly bool
	output      string
	parallel    int
	progress    progressFlags
}

// newCmdSimulate is `softalloc simulate`: goodput and badput curves.
func newCmdSimulate(f *factory, runF func(*simulateOptions) error) *cobra.Command {
	o := &simulateOptions{f: f}
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Run trials over a range of workloads and print throughput, goodput and badput",
		Long: `simulate runs one trial per (allocation, workload) and prints one row each:
throughput, goodput and badput at every SLA threshold, mean CPU per tier and
mean busy units per pool. Several --alloc flags compare allocations side by
side. Independent trials run in parallel (--parallel, default GOMAXPROCS) and
give the same numbers as a serial run.

--users takes a single workload (6000), a list (5000,6000,7000) or a range
START:END:STEP (5000:8000:200). --sla takes thresholds in seconds (0.5,1,2 or
500ms,1s,2s); JSON keys goodput and badput by the threshold in seconds ("0.5").`,
		Example: `  softalloc simulate --topology 1/4/1/4 --alloc 400-6-6 --users 5000:8000:200
  softalloc simulate -t 1/2/1/2 --alloc 400-150-60 --alloc 400-6-6 --users 6000 --sla 0.5,1,2
  softalloc simulate -t 1/4/1/4 --alloc 400-6-6 --users 7000 -o json --seed 7`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(o)
			}
			return runSimulate(o)
		},
	}
	o.cmd = cmd
	fs := cmd.Flags()
	o.deployment.register(fs)
	o.deployment.command = "simulate"
	o.runner.register(fs)
	o.journal.register(fs)
	o.metrics.register(fs, f.Getenv)
	// --alloc may repeat here; it replaces the single-valued flag of deploymentFlags.
	fs.Lookup("alloc").Usage = "allocation: " + allocationHelp + "; repeat to compare (default 400-150-60, or the deployment file's pools)"
	fs.StringVar(&o.users, "users", "", "workloads: N, N1,N2,... or START:END:STEP (required)")
	fs.StringVar(&o.slas, "sla", "0.5,1,2", "SLA thresholds in seconds, comma-separated")
	fs.BoolVar(&o.goodputOnly, "goodput-only", false, "adaptive trials end when throughput and goodput are precise; the servers' CPU and pools keep their intervals but hold no trial (as validate's grid runs them)")
	fs.StringVarP(&o.output, "output", "o", "table", "output format: table, json, csv or observation (the runner's observations, JSON lines)")
	registerParallel(fs, &o.parallel, "trials run at once")
	o.progress.register(fs)
	return cmd
}

func runSimulate(o *simulateOptions) error {
	cmd, s := o.cmd, o.f.Streams
	switch o.output {
	case "table", "json", "csv", "observation":
	default:
		return usagef("--output %q: want table, json, csv or observation", o.output)
	}
	if err := checkParallel(o.parallel); err != nil {
		return err
	}
	if err := o.metrics.check(); err != nil {
		return err
	}
	if err := o.journal.check(); err != nil {
		return err
	}
	mode, err := o.progress.resolve(s)
	if err != nil {
		return err
	}
	started := time.Now()
	users, err := parseUsers(o.users)
	if err != nil {
		return err
	}
	slas, err := parseSLAs(o.slas)
	if err != nil {
		return err
	}
	given := o.deployment.allocs
	o.deployment.allocs = nil
	d, base, err := o.deployment.resolve()
	if err != nil {
		return err
	}
	allocs := []algorithms.Allocation{base}
	if len(given) > 0 {
		allocs = allocs[:0]
		for _, as := range given {
			a, err := o.deployment.parseAllocation(d, as)
			if err != nil {
				return err
			}
			allocs = append(allocs, a)
		}
		if err := refuseRepeats("--alloc", "allocation", given, func(i int) string { return allocs[i].Key() }); err != nil {
			return err
		}
	}
	r, timing, err := o.runner.build(cmd, o.f, &o.deployment)
	if err != nil {
		return err
	}
	if timing.Adaptive() {
		timing.SLAs, timing.GoodputOnly = slaSeconds(slas), o.goodputOnly
	} else if o.goodputOnly {
		return usagef("--goodput-only: want adaptive trials (--precision), not --fixed")
	}
	for i, a := range allocs {
		alloc := ""
		if len(given) > 0 {
			alloc = given[i]
		}
		if err := o.deployment.checkRunnable(r, d, a, timing, alloc, ""); err != nil {
			return err
		}
	}
	var exps []algorithms.Experiment
	for _, a := range allocs {
		for _, u := range users {
			exps = append(exps, algorithms.Experiment{Deployment: d, Allocation: a, Workload: algorithms.Workload{Users: u}, Timing: timing})
		}
	}
	pr := newProgress(cmd.Context(), s, mode)
	run := r
	run.Experimenter = pr.wrap(run.Experimenter)
	x, j, err := o.journal.open(s, run)
	if err != nil {
		pr.close()
		return err
	}
	obs, err := algorithms.RunAll(cmd.Context(), x, exps, r.Workers(o.parallel))
	pr.close()
	if err = finishJournal(cmd.Context(), s, j, mode == "none", err); err != nil {
		return err
	}
	rows := make([]report.SimulateRow, len(exps))
	for i, e := range exps {
		rows[i] = report.NewSimulateRow(topology.FormatAllocationIn(d, e.Allocation), e, obs[i], slas)
	}
	set := metrics.New(o.cmd.Name(), d.Topology, r.Name)
	set.Duration(time.Since(started))
	set.Experiments(len(exps))
	for _, row := range rows {
		cpu := map[string]float64{}
		for _, sv := range row.Servers {
			cpu[sv.Name] = sv.CPU
		}
		set.Trial(row.Allocation, row.Users, row.Throughput, row.Goodput, cpu)
	}
	if err := writeSimulateOutput(s, o.output, d, rows, obs, slas); err != nil {
		return err
	}
	return o.metrics.emit(cmd.Context(), set)
}

func defaultParallel() int { return max(1, runtime.GOMAXPROCS(0)) }

// slaSeconds are the distinct thresholds, ascending: the goodput figures of
// an adaptive trial.
func slaSeconds(slas []report.SLA) []float64 {
	var out []float64
	for _, s := range slas {
		out = append(out, s.Seconds)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func parseSLAs(s string) ([]report.SLA, error) {
	var out []report.SLA
	texts := strings.Split(s, ",")
	for i, f := range texts {
		f = strings.TrimSpace(f)
		texts[i] = f
		d, err := parseSeconds(f)
		if err != nil || d <= 0 {
			return nil, usagef("--sla %q: threshold %q is not a positive time (seconds such as 2, 0.5 or 500ms)", s, f)
		}
		// Keys in seconds, however written: "2s" and "2" are one threshold.
		out = append(out, report.SLA{Text: strconv.FormatFloat(d.Seconds(), 'g', -1, 64), Seconds: d.Seconds()})
	}
	if err := refuseRepeats(fmt.Sprintf("--sla %q", s), "SLA", texts, func(i int) string { return out[i].Text }); err != nil {
		return nil, err
	}
	return out, nil
}

// parseUsers reads N, N1,N2,... or START:END:STEP.
func parseUsers(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, usagef("want --users N, N1,N2,... or START:END:STEP (e.g. --users 5000:8000:200)")
	}
	num := func(f string) (int, error) {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 || v > maxUsers {
			return 0, usagef("--users %q: %q is not a number of users in 1..%d", s, f, maxUsers)
		}
		return v, nil
	}
	if strings.Contains(s, ":") {
		parts := strings.Split(s, ":")
		if len(parts) != 3 {
			return nil, usagef("--users %q: want START:END:STEP, e.g. 5000:8000:200", s)
		}
		var v [3]int
		for i, p := range parts {
			var err error
			if v[i], err = num(p); err != nil {
				return nil, err
			}
		}
		if v[1] < v[0] {
			return nil, usagef("--users %q: END %d is below START %d", s, v[1], v[0])
		}
		if (v[1]-v[0])/v[2] >= 10000 {
			return nil, usagef("--users %q: more than 10000 workloads", s)
		}
		var out []int
		for u := v[0]; u <= v[1]; u += v[2] {
			out = append(out, u)
		}
		return out, nil
	}
	var out []int
	texts := strings.Split(s, ",")
	for i, f := range texts {
		v, err := num(f)
		if err != nil {
			return nil, err
		}
		texts[i] = strings.TrimSpace(f)
		out = append(out, v)
	}
	if err := refuseRepeats(fmt.Sprintf("--users %q", s), "workload", texts, func(i int) int { return out[i] }); err != nil {
		return nil, err
	}
	return out, nil
}

func writeSimulateOutput(s Streams, output string, d algorithms.Deployment, rows []report.SimulateRow, obs []algorithms.Observation, slas []report.SLA) error {
	switch output {
	case "json":
		return report.WriteJSON(s.Out, rows)
	case "observation":
		// The runner's observations as they are, one JSON object a line:
		// what an exec-runner program built on the simulator answers with.
		enc := json.NewEncoder(s.Out)
		for _, ob := range obs {
			if err := enc.Encode(wire.FromObservation(ob)); err != nil {
				return fmt.Errorf("write observation: %w", err)
			}
		}
		return nil
	case "csv":
		return report.WriteSimulateCSV(s.Out, d, rows, slas)
	}
	return report.WriteSimulateTable(s.Out, d, rows, slas)
}
