package cli

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/metrics"
	"github.com/softalloc/softalloc/internal/oneline"
	"github.com/softalloc/softalloc/internal/report"
	"github.com/softalloc/softalloc/internal/runner"
	"github.com/softalloc/softalloc/internal/runner/live"
	"github.com/softalloc/softalloc/internal/safefile"
	"github.com/softalloc/softalloc/internal/version"
	"github.com/softalloc/softalloc/internal/wire"
)

// adviseOptions are advise's.
type adviseOptions struct {
	f            *factory
	cmd          *cobra.Command
	deployment   deploymentFlags
	observations string
	since        string
	start, end   string
	step         time.Duration
	current      string // --alloc: the deployment's current allocation
	thinkTime    time.Duration
	minUtil      float64
	minWindows   int
	hwThreshold  float64
	softThresh   float64
	demandDrift  float64
	format       string
	output       string
	metrics      metricsFlags
	report       reportFlag
}

// newCmdAdvise is `softalloc advise`: pool sizes from recorded traffic.
func newCmdAdvise(f *factory, runF func(*adviseOptions) error) *cobra.Command {
	o := &adviseOptions{f: f}
	d := algorithms.DefaultAdviseOptions()
	cmd := &cobra.Command{
		Use:   "advise (-f deployment.yaml --since 7d | --observations FILE)",
		Short: "Recommend pool sizes from a deployment's recorded traffic, without a load test",
		Long: `advise applies the operational laws of Algorithm 1 to windows of traffic a
deployment already served, and recommends every pool as recommend does (the
same table, JSON, snippets and metrics). No experiment is run and nothing on
the deployment is changed.

Per server it fits the utilisation law with an intercept for idle cost
(utilisation = idle + demand x pages/s) over the windows; the critical
resource is the one whose fit reaches --hw-threshold at the lowest page
throughput. A queueing model of the chain with the fitted demands (exact MVA
when the users' think time is known, from --think-time or from windows that
count their users; an open model otherwise) predicts the critical tier's jobs
there, and Formula 3 sizes the other tiers. Pools found full in some windows
and servers whose CPU per page falls with load are named.

It says what data it needs instead of guessing, and exits 1, when fewer than
--min-windows windows are usable, the load hardly varies, no window loads
the critical resource to --min-utilization, a resource is at or above
--hw-threshold in every window (saturated throughout), a server's CPU
reads the same in every window (a missing or stuck metric), or a tier the
sizing needs has its throughput and response time in fewer than half the
windows (or --min-windows): the message says how many had them.

The windows come from Prometheus or from a file. With -f and --since (or
--start and --end), advise reads the deployment file's runner section (its
Prometheus, the tiers' queries and presets as the live runner reads them, and
the pages block: testbed/README.md) over the time range, cut into --step
windows; a window with a gap, a counter reset or NaN is left out and named,
and one lacking a tier's throughput or response time (a busy gauge sampled
at 0) is left out of that tier's time per page alone, and named.
--observations reads JSON Lines instead, each line one of: a journal record
(the users are its workload), a bare observation (simulate --output
observation, an exec program's answer) or a window (advise --output windows,
which saves what Prometheus gave for an offline run), at most 100,000 lines,
as many windows as advise reads from Prometheus; its servers must be the
deployment's. - reads standard input.`,
		Example: `  softalloc advise -f deployment.yaml --since 7d
  softalloc advise -f deployment.yaml --start 2026-11-23T08:00:00Z --end 2026-11-23T20:00:00Z --step 1m
  softalloc advise -f deployment.yaml --since 24h --output windows > windows.jsonl
  softalloc simulate -t 1/2/1/2 --users 500:3000:500 --output observation > obs.jsonl
  softalloc advise --topology 1/2/1/2 --observations obs.jsonl
  softalloc advise -t 1/2/1/2 --observations obs.jsonl --think-time 7s --output json
  softalloc advise -f deployment.yaml --since 7d --report advice.html
  softalloc advise -t 1/4/1/4 --observations .softalloc/journal.jsonl --format tomcat,hikari`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(o)
			}
			return escaped(runAdvise(o))
		},
	}
	o.cmd = cmd
	fs := cmd.Flags()
	o.deployment.registerChain(fs)
	o.deployment.command, o.deployment.ranges = "advise", true
	fs.StringVar(&o.observations, "observations", "", "recorded observations, JSON Lines (journal records, observations or windows; - for stdin)")
	fs.StringVar(&o.since, "since", "", "read Prometheus from this long ago until --end: 7d, 36h, 90m")
	fs.StringVar(&o.start, "start", "", "read Prometheus from this time (RFC 3339, e.g. 2026-11-23T08:00:00Z, or Unix seconds)")
	fs.StringVar(&o.end, "end", "", "read Prometheus until this time (default: now)")
	fs.DurationVar(&o.step, "step", 5*time.Minute, "length of each window read from Prometheus")
	fs.StringVar(&o.current, "alloc", "", "the deployment's current allocation: front pools keep at least it (default: the largest pool sizes the windows report, else the deployment's); "+allocationHelp)
	fs.Var((*seconds)(&o.thinkTime), "think-time", "users' think time (7, 7s or 7000ms) for a closed model (default: from windows that count their users, else an open model)")
	fs.Float64Var(&o.minUtil, "min-utilization", d.MinUtilization, "a window must load the critical resource at least this much, or advise will not extrapolate")
	fs.IntVar(&o.minWindows, "min-windows", d.MinWindows, "usable windows needed")
	fs.Float64Var(&o.hwThreshold, "hw-threshold", d.HardwareThreshold, "the utilisation at which a hardware resource counts as saturated")
	fs.Float64Var(&o.softThresh, "soft-threshold", d.SoftThreshold, "a pool full for at least this share of a window counts as saturated there")
	fs.Float64Var(&o.demandDrift, "demand-drift", d.DemandDrift, "name a server whose CPU per page falls by more than this share from the quieter half of the windows to the busier (0: no check)")
	fs.StringVar(&o.format, "format", "", "config snippets for the recommended sizes: "+strings.Join(report.SnippetFormats, ", ")+" (comma-separated) or all; each for the tiers that run it")
	fs.StringVarP(&o.output, "output", "o", "table", "output format: table, json, csv or windows (the windows as read, JSON lines, without advising)")
	o.metrics.register(fs, f.Getenv)
	o.report.register(cmd)
	return cmd
}

func runAdvise(o *adviseOptions) error {
	ctx, s := o.cmd.Context(), o.f.Streams
	started := time.Now()
	switch o.output {
	case "table", "json", "csv", "windows":
	default:
		return usagef("--output %q: want table, json, csv or windows", o.output)
	}
	formats, err := report.ParseFormats(o.format)
	if err != nil {
		return usageError{err}
	}
	// 0 would mean the default to the algorithm: on the command line it is a value, and too few.
	if o.minWindows < 3 {
		return usagef("--min-windows %d: want at least 3 (a line and its error)", o.minWindows)
	}
	if err := o.checkThresholds(); err != nil {
		return err
	}
	fromPrometheus := o.since != "" || o.start != "" || o.end != ""
	switch {
	case o.observations != "" && fromPrometheus:
		return usagef("advise: give --observations FILE or a time range (--since, --start, --end), not both")
	case o.observations == "" && !fromPrometheus:
		return usagef("advise: want -f deployment.yaml with --since 7d (or --start and --end), or --observations FILE (see softalloc advise --help)")
	}
	var start, end time.Time
	if fromPrometheus {
		if start, end, err = o.timeRange(); err != nil {
			return err
		}
	}
	if o.step <= 0 {
		return usagef("--step %v: want a window length such as 5m", o.step)
	}
	if fromPrometheus {
		if err := o.checkGrid(start, end); err != nil {
			return err
		}
	}
	if o.thinkTime < 0 {
		return usagef("--think-time %v: want a duration >= 0", o.thinkTime)
	}
	if err := o.metrics.check(); err != nil {
		return err
	}
	if err := o.report.check(); err != nil {
		return err
	}
	d, configured, err := o.deployment.resolve()
	if err != nil {
		return err
	}
	opts := algorithms.AdviseOptions{ThinkTime: o.thinkTime.Seconds(), MinUtilization: o.minUtil, MinWindows: o.minWindows,
		HardwareThreshold: o.hwThreshold, SoftThreshold: o.softThresh, DemandDrift: o.demandDrift, Configured: configured}
	if o.demandDrift == 0 {
		opts.DemandDrift = -1 // 0 means no check, as recommend's --demand-drift 0; the algorithm's 0 is its default
	}
	if o.current != "" {
		if opts.Reserve, err = o.deployment.parseAllocation(d, o.current); err != nil {
			return err
		}
	}
	var windows []algorithms.Window
	if fromPrometheus {
		if o.deployment.file == "" {
			return usagef("advise: a time range reads the Prometheus of a deployment file: want -f deployment.yaml")
		}
		src, err := o.f.NewWindows(runner.Config{DeploymentFile: o.deployment.loaded, DeploymentPath: o.deployment.file, Log: s.Err})
		if err != nil {
			return configError(err)
		}
		if err := checkRunnerTiers(d, o.deployment.loaded.Runner); err != nil {
			return configError(fmt.Errorf("advise: deployment %q: %w", o.deployment.file, err))
		}
		// The users' think time from the live runner's workload file, for a
		// closed model when the windows count no users: an open one holds
		// at the critical resource a queue no closed population builds.
		if sec := o.deployment.loaded.Runner; sec["name"] == "live" && o.thinkTime == 0 {
			// A workload file advise cannot read costs the model, not the run:
			// advise never needed it before.
			think, file, err := live.WorkloadThinkTime(sec, o.deployment.file)
			if err != nil {
				fmt.Fprintf(s.Err, "advise: warning: deployment %q: %v: no think time from it (--think-time gives one)\n", o.deployment.file, err)
			}
			if err == nil && think > 0 {
				opts.WorkloadThinkTime = think.Seconds()
				opts.WorkloadThinkTimeSource = fmt.Sprintf("the runner's workload file %s (--think-time overrides it)", file)
			}
		}
		if windows, err = src.Windows(ctx, d, start, end, o.step); err != nil {
			return fmt.Errorf("advise: %w", err)
		}
	} else {
		recorded, err := readWindows(s, o.observations)
		if err != nil {
			return configError(err)
		}
		if windows, err = oneDeployment(d, recorded, opts.Reserve); err != nil {
			return err
		}
	}
	if o.output == "windows" {
		enc := json.NewEncoder(s.Out)
		for _, w := range windows {
			if err := enc.Encode(wire.FromWindow(w)); err != nil {
				return fmt.Errorf("write window: %w", err)
			}
		}
		return nil
	}
	adv, err := algorithms.Advise(d, windows, opts)
	if err != nil {
		if errors.Is(err, algorithms.ErrNotEnoughData) {
			return fmt.Errorf("advise: %w", err)
		}
		return configError(fmt.Errorf("advise: %w", err))
	}
	doc := report.NewAdviseJSON(d, adv, adv.Allocation.String())
	doc.Version = version.String()
	doc.Snippets = report.Snippets(d, adv.Tiers, formats)
	doc.Snippets = append(doc.Snippets, report.ReplicaSnippets(d, adv.Replicas, formats)...) // a replica range's: hikari per count, pgbouncer, postgresql
	set := metrics.New(o.cmd.Name(), d.Topology, "advise")
	set.Duration(time.Since(started))
	set.Experiments(0)
	set.Advice(adv)
	switch o.output {
	case "json":
		err = report.WriteJSON(s.Out, doc)
	case "csv":
		err = report.WriteRecommendCSV(s.Out, doc.RecommendJSON)
	default:
		err = report.WriteAdviseTable(s.Out, doc)
	}
	if err != nil {
		return err
	}
	if o.report.path != "" {
		// The windows are advise's evidence: no experiment ran.
		page := report.HTMLReport{Command: "advise", Deployment: d, DeploymentFile: o.deployment.file, Runner: "none (windows of recorded traffic)",
			Version: doc.Version, HardwareThreshold: o.hwThreshold, SLA: algorithms.DefaultOptions().SLA, Advice: &adv, Windows: windows,
			Snippets: doc.Snippets, Generated: time.Now(), Elapsed: time.Since(started).Round(time.Millisecond)}
		if len(formats) == 0 {
			page.Snippets = report.Snippets(d, adv.Tiers, report.SnippetFormats)
		}
		if err := report.SaveHTML(o.report.path, page); err != nil {
			return err
		}
	}
	return o.metrics.emit(ctx, set)
}

// checkThresholds holds advise's flags to recommend's rules (flags.go) where
// recommend has the flag. The algorithm reads 0 as its default: on the
// command line 0 is a value, and advise turned --hw-threshold 0 into 0.95
// and --min-utilization 0 into 0.3 without a word.
func (o *adviseOptions) checkThresholds() error {
	switch {
	case !(o.hwThreshold > 0 && o.hwThreshold <= 1):
		return usagef("--hw-threshold %g: want a utilisation in (0,1]", o.hwThreshold)
	case !(o.softThresh > 0 && o.softThresh <= 1):
		return usagef("--soft-threshold %g: want a share in (0,1]", o.softThresh)
	case !(o.demandDrift >= 0 && o.demandDrift < 1):
		return usagef("--demand-drift %g: want a share in [0,1)", o.demandDrift)
	case !(o.minUtil > 0 && o.minUtil < o.hwThreshold):
		return usagef("--min-utilization %g: want a utilisation above 0 and below --hw-threshold %g", o.minUtil, o.hwThreshold)
	}
	return nil
}

// checkGrid holds the time range and --step to the live runner's limits
// before any query: found by Windows they exited 1, as short data does.
func (o *adviseOptions) checkGrid(start, end time.Time) error {
	// Prometheus keeps milliseconds, and so does the runner's grid.
	start, end = time.UnixMilli(start.UnixMilli()), time.UnixMilli(end.UnixMilli())
	now := o.f.Now()
	switch {
	case o.step < live.MinStep:
		return usagef("--step %v: want at least %v (rate() needs two samples in a window)", o.step, live.MinStep)
	case o.step%time.Millisecond != 0:
		return usagef("--step %v: want whole milliseconds, as Prometheus keeps time", o.step)
	case end.After(now.Add(live.MaxFutureSkew)):
		return usagef("--end %s is in the future (%v ahead of this machine's clock): want a range that has been recorded",
			end.UTC().Format(time.RFC3339), end.Sub(now).Round(time.Second))
	}
	n := end.Sub(start) / o.step
	switch {
	case n < 1:
		return usagef("advise: the range %s..%s (%v) is shorter than one --step %v", start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339),
			end.Sub(start), o.step)
	case n > live.MaxWindows:
		return usagef("advise: the range %s..%s is %d windows of %v; want at most %d: take a longer --step or a shorter range",
			start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339), n, o.step, live.MaxWindows)
	}
	return nil
}

// checkRunnerTiers finds, before any query, what the live runner finds only
// when it reaches the tier, after querying the tiers in front of it: a tier
// without an entry in the runner section, without a cpu query, or with a
// servers list of another length than its replicas. The section has been
// checked by NewWindows; only its tiers are read here.
func checkRunnerTiers(d algorithms.Deployment, section map[string]any) error {
	b, err := yaml.Marshal(map[string]any{"tiers": section["tiers"]})
	if err != nil {
		return fmt.Errorf("runner section: tiers: %w", err)
	}
	var c struct {
		Tiers map[string]live.TierConfig `yaml:"tiers"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		return fmt.Errorf("runner section: tiers: %w", err)
	}
	for _, t := range d.Tiers {
		tc, ok := c.Tiers[t.Name]
		if !ok {
			return fmt.Errorf("runner section: tiers.%s: missing; every tier needs at least a cpu query (or a preset that has one)", t.Name)
		}
		if len(tc.Servers) > 0 && len(tc.Servers) != t.Replicas {
			return fmt.Errorf("runner section: tiers.%s.servers: %d entries for %d replicas", t.Name, len(tc.Servers), t.Replicas)
		}
		cpu := tc.Queries.CPU
		for _, p := range tc.Presets {
			cpu = cmp.Or(cpu, live.Presets[p].CPU)
		}
		if cpu == "" {
			return fmt.Errorf("runner section: tiers.%s: no cpu query; set queries.cpu or a preset such as node or cgroup", t.Name)
		}
	}
	return nil
}

// escapedError is an error whose message quotes input (a window's label or
// problem, a server's name): its control characters are escaped, or a
// crafted windows file clears the screen and forges lines on stderr.
type escapedError struct{ err error }

func (e escapedError) Error() string { return oneline.Escape(e.err.Error()) }
func (e escapedError) Unwrap() error { return e.err }

func escaped(err error) error {
	if err == nil {
		return nil
	}
	return escapedError{err}
}

// timeRange resolves --since, --start and --end.
func (o *adviseOptions) timeRange() (start, end time.Time, err error) {
	now := o.f.Now()
	end = now
	if o.end != "" {
		if end, err = parseTime(o.end); err != nil {
			return start, end, usagef("--end %q: %w", o.end, err)
		}
	}
	switch {
	case o.since != "" && o.start != "":
		return start, end, usagef("advise: give --since or --start, not both")
	case o.since != "":
		ago, err := parseSince(o.since)
		if err != nil {
			return start, end, usagef("--since %q: %w", o.since, err)
		}
		start = end.Add(-ago)
	case o.start != "":
		if start, err = parseTime(o.start); err != nil {
			return start, end, usagef("--start %q: %w", o.start, err)
		}
	default:
		return start, end, usagef("advise: --end needs --since or --start")
	}
	if !start.Before(end) {
		return start, end, usagef("advise: the range starts at %s, not before its end %s", start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339))
	}
	return start, end, nil
}

// parseSince reads a duration that may count days: 7d, 36h, 90m.
func parseSince(v string) (time.Duration, error) {
	bad := fmt.Errorf("want a duration such as 7d, 36h or 90m, at most %dd (ten years)", maxSinceDays)
	var d time.Duration
	if days, ok := strings.CutSuffix(v, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 || n > maxSinceDays {
			return 0, bad
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(v); err != nil || d <= 0 || d > maxSinceDays*24*time.Hour {
			return 0, bad
		}
	}
	return d, nil
}

// maxSinceDays bounds --since: further back than any Prometheus keeps.
const maxSinceDays = 3660

// parseTime reads RFC 3339 or Unix seconds.
func parseTime(v string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	if sec, err := strconv.ParseFloat(v, 64); err == nil && sec > 0 && sec < 1e11 {
		return time.UnixMilli(int64(sec * 1000)), nil
	}
	return time.Time{}, fmt.Errorf("want a time such as 2026-11-23T08:00:00Z or Unix seconds")
}

// oneDeployment keeps advise to one deployment's traffic. A journal's
// records say what they measured: those of another topology are dropped
// windows, and so, with --alloc, are those of another allocation; records
// of several allocations without --alloc are refused. A journal that
// validate shared held a grid of them, and advise took the largest pools
// any window reported as the current ones (400-300-8) and read their
// different CPU per page as the demand drifting. Windows holding servers
// the deployment lacks are refused, naming them.
func oneDeployment(d algorithms.Deployment, recorded []wire.RecordedWindow, current algorithms.Allocation) ([]algorithms.Window, error) {
	windows := make([]algorithms.Window, len(recorded))
	counts := map[string]int{}
	for i, r := range recorded {
		windows[i] = r.Window
		e := r.Experiment
		switch {
		case e == nil || r.Problem != "":
		case e.Deployment.Topology != d.Topology:
			windows[i].Problem = fmt.Sprintf("recorded on %s, not %s", oneline.Quote(e.Deployment.Topology), oneline.Quote(d.Topology))
		case current != nil && e.Allocation.Key() != current.Key():
			windows[i].Problem = fmt.Sprintf("allocation %s, not --alloc %s", e.Allocation.String(), current.String())
		default:
			counts[e.Allocation.String()]++
		}
	}
	// Servers the deployment lacks mean the file is another deployment's:
	// advising it anyway read one server as doing two servers' work.
	for _, w := range windows {
		if w.Problem != "" {
			continue
		}
		if p := algorithms.ForeignServers(d, w.Observation); p != "" {
			return nil, usagef("advise: %s: %s: the observations were recorded on another deployment; give -t or -f of the one they measured",
				w.Label, p)
		}
	}
	if len(counts) > 1 {
		// The most recorded first: a campaign's start among a grid's.
		allocs := slices.SortedFunc(maps.Keys(counts), func(a, b string) int {
			return cmp.Or(counts[b]-counts[a], strings.Compare(a, b))
		})
		var held []string
		for _, a := range allocs[:min(len(allocs), 5)] {
			held = append(held, fmt.Sprintf("%s (%d windows)", a, counts[a]))
		}
		if len(allocs) > 5 {
			held = append(held, fmt.Sprintf("%d more", len(allocs)-5))
		}
		return nil, usagef("advise: the observations hold trials of %d allocations (%s); advise reads one deployment's traffic: choose one with --alloc",
			len(counts), strings.Join(held, ", "))
	}
	return windows, nil
}

// readWindows reads --observations, - for standard input, at most
// live.MaxWindows lines of it: a million windows (5.8 GB) were read whole
// into memory, where Prometheus's are capped at that bound.
func readWindows(s Streams, path string) ([]wire.RecordedWindow, error) {
	if path == "-" {
		return wire.ReadWindows(&lineBound{r: s.In, max: live.MaxWindows}, "stdin")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("observations: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("observations %q: not a regular file (%s); want a JSON Lines file", path, safefile.Describe(fi.Mode()))
	}
	return wire.ReadWindows(&lineBound{r: f, max: live.MaxWindows}, filepath.Base(path))
}

// lineBound fails the read at the first byte past max lines, before the
// reader above it has buffered the rest of the input.
type lineBound struct {
	r          io.Reader
	lines, max int
}

func (b *lineBound) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	for i := range n {
		if b.lines == b.max {
			return i, fmt.Errorf("more than %d lines: want at most %d windows, as advise reads from Prometheus: split the file or take longer windows", b.max, b.max)
		}
		if p[i] == '\n' {
			b.lines++
		}
	}
	return n, err
}
