package cli

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/metrics"
	"github.com/softalloc/softalloc/internal/report"
)

// SimulateOptions are simulate's.
type SimulateOptions struct {
	f          *Factory
	cmd        *cobra.Command
	deployment deploymentFlags
	runner     runnerFlags
	journal    journalFlags
	metrics    metricsFlags
	users      string
	slas       string
	output     string
	parallel   int
}

// NewCmdSimulate is `softalloc simulate`: goodput and badput curves.
func NewCmdSimulate(f *Factory, runF func(*SimulateOptions) error) *cobra.Command {
	o := &SimulateOptions{f: f}
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Run trials over a range of workloads and print throughput, goodput and badput",
		Long: `simulate runs one trial per (allocation, workload) and prints one row each:
throughput, goodput and badput at every SLA threshold, mean CPU per tier and
mean busy units per pool. Several --alloc flags compare allocations side by
side. Independent trials run in parallel (--parallel, default GOMAXPROCS) and
give the same numbers as a serial run.

--users takes a single workload (6000), a list (5000,6000,7000) or a range
START:END:STEP (5000:8000:200). --sla takes thresholds in seconds (0.5,1,2);
JSON keys goodput and badput by the threshold as written.`,
		Example: `  softalloc simulate --topology 1/4/1/4 --alloc 400-6-6 --users 5000:8000:200
  softalloc simulate --topology 1/2/1/2 --alloc 400-150-60 --alloc 400-6-6 --users 6000 --sla 0.5,1,2
  softalloc simulate --topology 1/4/1/4 --alloc 400-6-6 --users 7000 --output json --seed 7 --journal .softalloc/seed7.jsonl`,
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
	o.runner.register(fs)
	o.journal.register(fs)
	o.metrics.register(fs)
	// --alloc may repeat here; it replaces the single-valued flag of deploymentFlags.
	fs.Lookup("alloc").Usage = "allocation #W_T-#A_T-#A_C; repeat to compare (default 400-150-60)"
	fs.StringVar(&o.users, "users", "", "workloads: N, N1,N2,... or START:END:STEP (required)")
	fs.StringVar(&o.slas, "sla", "0.5,1,2", "SLA thresholds in seconds, comma-separated")
	fs.StringVarP(&o.output, "output", "o", "table", "output format: table, json, csv, or observation (the runner's raw observations, one JSON object a line)")
	registerParallel(fs, &o.parallel, "trials run at once")
	return cmd
}

// SimulateRow is one (allocation, workload) of `simulate --output json`.
type SimulateRow struct {
	Allocation string             `json:"allocation"`
	Users      int                `json:"users"`
	Throughput float64            `json:"throughput"`
	Goodput    map[string]float64 `json:"goodput"`
	Badput     map[string]float64 `json:"badput"`
	// ResponseTime is the mean page response time, seconds.
	ResponseTime float64          `json:"responseTime"`
	Drops        int64            `json:"drops"`
	Retries      int64            `json:"retries"`
	Servers      []SimulateServer `json:"servers"`
	observation  algorithms.Observation
}

// SimulateServer is one server of a row.
type SimulateServer struct {
	Name         string         `json:"name"`
	Tier         string         `json:"tier"`
	CPU          float64        `json:"cpu"`
	GCShare      float64        `json:"gcShare,omitempty"`
	Throughput   float64        `json:"throughput"`
	ResponseTime float64        `json:"responseTime"`
	Pools        []SimulatePool `json:"pools"`
}

// SimulatePool is one pool of a server.
type SimulatePool struct {
	Name string  `json:"name"`
	Size int     `json:"size"`
	Busy float64 `json:"busy"`
}

func runSimulate(o *SimulateOptions) error {
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
	}
	r, timing, err := o.runner.build(cmd, o.f, &o.deployment)
	if err != nil {
		return err
	}
	for i, a := range allocs {
		alloc := ""
		if len(given) > 0 {
			alloc = given[i]
		}
		if err := o.deployment.checkRunnable(r, d, a, timing, alloc); err != nil {
			return err
		}
	}
	var exps []algorithms.Experiment
	for _, a := range allocs {
		for _, u := range users {
			exps = append(exps, algorithms.Experiment{Deployment: d, Allocation: a, Workload: algorithms.Workload{Users: u}, Timing: timing})
		}
	}
	x, j, err := o.journal.open(s, r)
	if err != nil {
		return err
	}
	obs, err := algorithms.RunAll(cmd.Context(), x, exps, r.Workers(o.parallel))
	if err = finishJournal(cmd.Context(), s, j, false, err); err != nil {
		return err
	}
	rows := make([]SimulateRow, len(exps))
	for i, e := range exps {
		rows[i] = newSimulateRow(e, obs[i], slas)
	}
	set := metrics.New(d.Topology, r.Name)
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

func writeSimulateOutput(s Streams, output string, d algorithms.Deployment, rows []SimulateRow, obs []algorithms.Observation, slas []sla) error {
	switch output {
	case "json":
		return report.WriteJSON(s.Out, rows)
	case "observation":
		// The runner's observations as they are, one JSON object a line:
		// what an exec-runner program built on the simulator answers with.
		enc := json.NewEncoder(s.Out)
		for _, ob := range obs {
			if err := enc.Encode(ob); err != nil {
				return fmt.Errorf("write observation: %w", err)
			}
		}
		return nil
	case "csv":
		return writeSimulateCSV(s.Out, d, rows, slas)
	}
	return writeSimulateTable(s.Out, d, rows, slas)
}

func defaultParallel() int { return max(1, runtime.GOMAXPROCS(0)) }

func newSimulateRow(e algorithms.Experiment, o algorithms.Observation, slas []sla) SimulateRow {
	row := SimulateRow{
		Allocation: formatAllocation(e.Allocation), Users: e.Workload.Users, Throughput: o.Throughput,
		Goodput: map[string]float64{}, Badput: map[string]float64{}, ResponseTime: o.ResponseTimes.Mean(),
		Drops: o.Drops, Retries: o.Retries, observation: o,
	}
	for _, t := range slas {
		row.Goodput[t.text] = o.Goodput(t.seconds)
		row.Badput[t.text] = o.Badput(t.seconds)
	}
	for _, sv := range o.Servers {
		ss := SimulateServer{Name: sv.Name, Tier: sv.Tier, CPU: sv.CPU, GCShare: sv.GCShare, Throughput: sv.Throughput,
			ResponseTime: sv.ResponseTime, Pools: []SimulatePool{}}
		for _, p := range sv.Pools {
			ss.Pools = append(ss.Pools, SimulatePool{Name: p.Name, Size: p.Size, Busy: p.Busy})
		}
		row.Servers = append(row.Servers, ss)
	}
	return row
}

type sla struct {
	text    string
	seconds float64
}

func parseSLAs(s string) ([]sla, error) {
	var out []sla
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || !(v > 0) || v > 1e6 {
			return nil, usagef("--sla %q: threshold %q is not a positive number of seconds", s, f)
		}
		out = append(out, sla{f, v})
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
		if err != nil || v < 1 || v > 10_000_000 {
			return 0, usagef("--users %q: %q is not a number of users in 1..10000000", s, f)
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
	for _, f := range strings.Split(s, ",") {
		v, err := num(f)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// tierColumns lists, in chain order, the tiers and each tier's pools.
func tierColumns(d algorithms.Deployment, rows []SimulateRow) (tiers []string, pools []string) {
	seen := map[string]bool{}
	for _, t := range d.Tiers {
		tiers = append(tiers, t.Name)
	}
	for _, r := range rows {
		for _, sv := range r.Servers {
			for _, p := range sv.Pools {
				k := sv.Tier + "." + p.Name
				if !seen[k] {
					seen[k] = true
					pools = append(pools, k)
				}
			}
		}
	}
	order := map[string]int{}
	for i, t := range tiers {
		order[t] = i
	}
	sort.SliceStable(pools, func(i, j int) bool {
		return order[strings.Split(pools[i], ".")[0]] < order[strings.Split(pools[j], ".")[0]]
	})
	return tiers, pools
}

// tierMeans averages CPU per tier and busy units per pool over a tier's servers.
func tierMeans(r SimulateRow) (cpu map[string]float64, busy map[string]float64) {
	cpu, busy = map[string]float64{}, map[string]float64{}
	n, np := map[string]int{}, map[string]int{}
	for _, sv := range r.Servers {
		cpu[sv.Tier] += sv.CPU
		n[sv.Tier]++
		for _, p := range sv.Pools {
			k := sv.Tier + "." + p.Name
			busy[k] += p.Busy
			np[k]++
		}
	}
	for k := range cpu {
		cpu[k] /= float64(n[k])
	}
	for k := range busy {
		busy[k] /= float64(np[k])
	}
	return cpu, busy
}

func simulateHeader(d algorithms.Deployment, rows []SimulateRow, slas []sla) ([]string, []string, []string) {
	tiers, pools := tierColumns(d, rows)
	h := []string{"allocation", "users", "throughput"}
	for _, t := range slas {
		h = append(h, "goodput@"+t.text)
	}
	for _, t := range slas {
		h = append(h, "badput@"+t.text)
	}
	h = append(h, "response_time")
	for _, t := range tiers {
		h = append(h, "cpu."+t)
	}
	for _, p := range pools {
		h = append(h, "busy."+p)
	}
	return h, tiers, pools
}

func simulateRecord(r SimulateRow, slas []sla, tiers, pools []string, prec int) []string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', prec, 64) }
	rec := []string{r.Allocation, strconv.Itoa(r.Users), f(r.Throughput)}
	for _, t := range slas {
		rec = append(rec, f(r.Goodput[t.text]))
	}
	for _, t := range slas {
		rec = append(rec, f(r.Badput[t.text]))
	}
	rec = append(rec, strconv.FormatFloat(r.ResponseTime, 'f', 3, 64))
	cpu, busy := tierMeans(r)
	for _, t := range tiers {
		rec = append(rec, strconv.FormatFloat(cpu[t], 'f', 3, 64))
	}
	for _, p := range pools {
		rec = append(rec, f(busy[p]))
	}
	return rec
}

func writeSimulateCSV(w io.Writer, d algorithms.Deployment, rows []SimulateRow, slas []sla) error {
	cw := csv.NewWriter(w)
	h, tiers, pools := simulateHeader(d, rows, slas)
	if err := cw.Write(h); err != nil {
		return err
	}
	for _, r := range rows {
		if err := cw.Write(simulateRecord(r, slas, tiers, pools, 4)); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func writeSimulateTable(w io.Writer, d algorithms.Deployment, rows []SimulateRow, slas []sla) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	h, tiers, pools := simulateHeader(d, rows, slas)
	fmt.Fprintln(tw, strings.ToUpper(strings.Join(h, "\t"))+"\t")
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(simulateRecord(r, slas, tiers, pools, 1), "\t")+"\t")
	}
	fmt.Fprintf(tw, "\n")
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "throughput, goodput and badput in pages/s; response time in s; cpu is the mean utilisation of a tier's servers; busy is mean busy units per server.")
	return nil
}
