package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/report"
	"github.com/softalloc/softalloc/internal/runner/replay"
)

// Capacity is what `softalloc check` measures and compares; its JSON is
// also the baseline file format.
type Capacity struct {
	Topology   string  `json:"topology"`
	Runner     string  `json:"runner"`
	Allocation string  `json:"allocation"`
	SLA        float64 `json:"slaSeconds"`
	// MaxGoodput and MaxThroughput are the highest over the campaign's
	// trials, pages per second.
	MaxGoodput    float64 `json:"maxGoodput"`
	MaxThroughput float64 `json:"maxThroughput"`
	// Critical is "tier/resource", empty when no hardware resource saturated.
	Critical           string `json:"critical"`
	SaturationWorkload int    `json:"saturationWorkload"`
	Experiments        int    `json:"experiments"`
}

// CheckResult is one check.
type CheckResult struct {
	Name    string `json:"name"`
	OK      bool   `json:"ok"`
	Message string `json:"message"`
}

// CheckJSON is `softalloc check --output json`.
type CheckJSON struct {
	Capacity Capacity      `json:"capacity"`
	Checks   []CheckResult `json:"checks"`
	OK       bool          `json:"ok"`
}

type checkOptions struct {
	campaign      campaignOptions
	fromJournal   string
	minGoodput    float64
	maxRegression string
	baseline      string
	critical      string
}

// NewCheckCmd is `softalloc check`: a CI capacity gate.
func NewCheckCmd(s Streams) *cobra.Command {
	o := &checkOptions{}
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Fail when capacity regresses: goodput, the critical resource, or a baseline",
		Long: `check measures capacity, from a fresh find-critical campaign on the runner or
from a recorded journal (--from-journal), and compares it with thresholds:

  --min-goodput N       the highest goodput at --sla must be at least N pages/s
  --max-regression P%   goodput and throughput may fall at most P% below --baseline
  --critical T/R        the critical resource must still be tier T's resource R

A fresh check raises the workload in --step steps on the allocation as given
(no pool is doubled) until throughput stops growing. Capacity is the highest
goodput at the SLA and the highest throughput over those trials, and the first
resource to saturate with the workload where it did: a hardware resource
("app/cpu"), or a pool ("app/threads") when the allocation limits capacity. --output json prints it; saved to a file, that is a
--baseline for later runs.

Exit codes: 0 when capacity holds, 1 with one line per violated check on
stderr, 2 on usage and configuration errors (found before any experiment),
130 or 143 when SIGINT or SIGTERM interrupts it.
--metrics-file and --pushgateway export the same metrics either way, so a CI
job can push them whatever the verdict.`,
		Example: `  softalloc check --topology 1/2/1/2 --min-goodput 700 --sla 2s
  softalloc check --topology 1/2/1/2 --output json > capacity.json
  softalloc check --topology 1/2/1/2 --baseline capacity.json --max-regression 5% --critical app/cpu
  softalloc check --from-journal .softalloc/journal.jsonl --topology 1/4/1/4 --min-goodput 800 --metrics-file capacity.prom`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runCheck(cmd, s, o) },
	}
	o.campaign.register(cmd)
	fs := cmd.Flags()
	fs.StringVar(&o.fromJournal, "from-journal", "", "measure capacity from this recorded journal instead of running a campaign")
	fs.Float64Var(&o.minGoodput, "min-goodput", 0, "fail when the highest goodput at --sla is below this many pages/s")
	fs.StringVar(&o.maxRegression, "max-regression", "", "fail when goodput or throughput falls more than this (e.g. 5%) below --baseline")
	fs.StringVar(&o.baseline, "baseline", "", "capacity JSON of an earlier run (check --output json)")
	fs.StringVar(&o.critical, "critical", "", "fail when the critical resource is not TIER/RESOURCE (e.g. app/cpu)")
	return cmd
}

func parsePercent(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "%"), 64)
	if err != nil || v < 0 || v >= 100 {
		return 0, usagef("--max-regression %q: want a percentage in [0,100), e.g. 5%%", s)
	}
	return v / 100, nil
}

func loadBaseline(path string) (Capacity, error) {
	var c Capacity
	data, err := os.ReadFile(path)
	if err != nil {
		return c, usageError{fmt.Errorf("--baseline: %w", err)}
	}
	var doc struct {
		Capacity *Capacity `json:"capacity"`
	}
	// Either a capacity object, or check's whole JSON output.
	if err := json.Unmarshal(data, &doc); err == nil && doc.Capacity != nil {
		c = *doc.Capacity
	} else if err := json.Unmarshal(data, &c); err != nil {
		return c, usageError{fmt.Errorf("--baseline %q: want check's JSON output: %w", path, err)}
	}
	if c.MaxGoodput <= 0 && c.MaxThroughput <= 0 {
		return c, usagef("--baseline %q: want maxGoodput and maxThroughput above 0 (check --output json writes them)", path)
	}
	return c, nil
}

func runCheck(cmd *cobra.Command, s Streams, o *checkOptions) error {
	ctx := cmd.Context()
	var regression float64
	var base Capacity
	var err error
	switch {
	case o.minGoodput == 0 && o.maxRegression == "" && o.critical == "" && !cmd.Flags().Changed("output"):
		return usagef("check: nothing to check: give --min-goodput, --max-regression with --baseline, or --critical (or --output json to record a baseline)")
	case (o.maxRegression == "") != (o.baseline == ""):
		return usagef("--max-regression and --baseline go together")
	case o.minGoodput < 0:
		return usagef("--min-goodput %g: want pages/s >= 0", o.minGoodput)
	}
	if o.critical != "" {
		tier, res, _ := strings.Cut(o.critical, "/")
		if tier == "" || res == "" || strings.Contains(res, "/") {
			return usagef("--critical %q: want TIER/RESOURCE, e.g. app/cpu", o.critical)
		}
	}
	if o.maxRegression != "" {
		if regression, err = parsePercent(o.maxRegression); err != nil {
			return err
		}
		if base, err = loadBaseline(o.baseline); err != nil {
			return err
		}
	}
	var capacity Capacity
	var cp campaign
	if o.fromJournal != "" {
		if capacity, cp, err = o.capacityFromJournal(cmd, s); err != nil {
			return err
		}
		if err := o.against(cp.deployment, capacity.SLA, base); err != nil {
			return err
		}
	} else {
		// The flags that need the deployment are checked before the journal opens.
		o.campaign.preflight = func(c campaign) error { return o.against(c.deployment, c.opts.SLA, base) }
		if cp, err = o.campaign.setup(cmd, s); err != nil {
			return err
		}
		trials, err := sweep(ctx, cp)
		if err = cp.finish(ctx, s, o.campaign.quiet, err); err != nil {
			return err
		}
		capacity = capacityOf(cp.deployment.Topology, cp.runner.Name, formatAllocation(cp.start), cp.opts.SLA, trials)
		capacity.Critical, capacity.SaturationWorkload = firstSaturated(cp.deployment, trials, cp.opts)
	}
	// Checks is [] in JSON when there are none, never null.
	doc := CheckJSON{Capacity: capacity, Checks: []CheckResult{}, OK: true}
	add := func(name string, ok bool, format string, a ...any) {
		doc.Checks = append(doc.Checks, CheckResult{Name: name, OK: ok, Message: fmt.Sprintf(format, a...)})
		doc.OK = doc.OK && ok
	}
	if o.minGoodput > 0 {
		add("min-goodput", capacity.MaxGoodput >= o.minGoodput, "max goodput at %g s is %.1f pages/s; the minimum is %.1f",
			capacity.SLA, capacity.MaxGoodput, o.minGoodput)
	}
	if o.maxRegression != "" {
		for _, f := range []struct {
			name     string
			now, was float64
		}{{"goodput", capacity.MaxGoodput, base.MaxGoodput}, {"throughput", capacity.MaxThroughput, base.MaxThroughput}} {
			floor := f.was * (1 - regression)
			add("max-regression-"+f.name, f.now >= floor, "max %s is %.1f pages/s, %s against the baseline's %.1f; the floor is %.1f (-%s)",
				f.name, f.now, report.Percent(100*(f.now/f.was-1), 1, true), f.was, floor, o.maxRegression)
		}
	}
	if o.critical != "" {
		now := capacity.Critical
		if now == "" {
			now = "none (no hardware resource saturated)"
		}
		add("critical", capacity.Critical == o.critical, "critical resource is %s; expected %s", now, o.critical)
	}
	set := o.campaign.metricSet(cp)
	set.Experiments(capacity.Experiments)
	set.Goodput(capacity.Allocation, capacity.SLA, capacity.MaxGoodput)
	set.Set("softalloc_max_throughput_requests_per_second", "Highest throughput seen, pages per second.", capacity.MaxThroughput)
	if capacity.Critical != "" {
		tier, res, _ := strings.Cut(capacity.Critical, "/")
		set.Set("softalloc_critical_resource_info", "The hardware resource that saturates first (value 1).", 1, "tier", tier, "resource", res)
		set.Set("softalloc_saturation_workload_users", "Workload at which the critical resource first saturated.", float64(capacity.SaturationWorkload))
	}
	for _, c := range doc.Checks {
		set.Set("softalloc_check_passed", "1 when a capacity check held, 0 when it failed.", boolFloat(c.OK), "check", c.Name)
	}
	if o.campaign.output == "json" {
		err = report.WriteJSON(s.Out, doc)
	} else {
		err = writeCheckTable(s.Out, doc)
	}
	if err != nil {
		return err
	}
	if err := o.campaign.metrics.emit(ctx, set); err != nil {
		return err
	}
	if !doc.OK {
		for _, c := range doc.Checks {
			if !c.OK {
				fmt.Fprintf(s.Err, "softalloc: check %s failed: %s\n", c.Name, c.Message)
			}
		}
		return exitError{ExitFailure, errors.New("")}
	}
	return nil
}

// against checks --critical's tier and the baseline's SLA and deployment
// against what this check measures: a capacity compared with one of another
// deployment or SLA would pass or fail for no reason.
func (o *checkOptions) against(d algorithms.Deployment, sla float64, base Capacity) error {
	if tier, _, _ := strings.Cut(o.critical, "/"); o.critical != "" && d.TierIndex(tier) < 0 {
		names := make([]string, len(d.Tiers))
		for i, t := range d.Tiers {
			names[i] = t.Name
		}
		return usagef("--critical %q: deployment %q has no tier %q; its tiers are %s", o.critical, d.Topology, tier, strings.Join(names, ", "))
	}
	if base.SLA != 0 && base.SLA != sla {
		return usagef("--baseline %q was measured at an SLA of %g s, this check at %g s", o.baseline, base.SLA, sla)
	}
	if base.Topology != "" && base.Topology != d.Topology {
		return usagef("--baseline %q was measured on deployment %s, this check runs on %s", o.baseline, base.Topology, d.Topology)
	}
	return nil
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// capacityFromJournal measures capacity from recorded experiments of one
// topology and allocation.
func (o *checkOptions) capacityFromJournal(cmd *cobra.Command, s Streams) (Capacity, campaign, error) {
	cp := campaign{}
	var c Capacity
	o.campaign.started = time.Now()
	if err := checkOutput(o.campaign.output); err != nil {
		return c, cp, err
	}
	if err := o.campaign.metrics.check(); err != nil {
		return c, cp, err
	}
	data, err := os.ReadFile(o.fromJournal)
	if err != nil {
		return c, cp, configError(fmt.Errorf("--from-journal: %w", err))
	}
	lines, torn := replay.SplitLines(data)
	if torn != "" {
		fmt.Fprintf(s.Err, "softalloc: warning: journal %q: ignoring a torn last line\n", o.fromJournal)
	}
	type rec struct {
		Runner      string                 `json:"runner"`
		Experiment  algorithms.Experiment  `json:"experiment"`
		Observation algorithms.Observation `json:"observation"`
	}
	groups := map[string][]rec{}
	for i, l := range lines {
		if strings.TrimSpace(string(l)) == "" {
			continue
		}
		var r rec
		if err := json.Unmarshal(l, &r); err != nil {
			return c, cp, configError(fmt.Errorf("--from-journal %q: line %d: %w", o.fromJournal, i+1, err))
		}
		k := r.Experiment.Deployment.Topology + " " + formatAllocation(r.Experiment.Allocation)
		groups[k] = append(groups[k], r)
	}
	want := ""
	if o.campaign.deployment.topology != "" {
		want = o.campaign.deployment.topology
	}
	wantAlloc := ""
	if len(o.campaign.deployment.allocs) == 1 {
		wantAlloc = o.campaign.deployment.allocs[0]
	}
	var keys []string
	for k := range groups {
		t, a, _ := strings.Cut(k, " ")
		if (want == "" || t == want) && (wantAlloc == "" || a == wantAlloc) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	if len(keys) != 1 {
		all := make([]string, 0, len(groups))
		for k := range groups {
			all = append(all, k)
		}
		sort.Strings(all)
		return c, cp, usagef("--from-journal %q: want exactly one topology and allocation to check, found %d matching (recorded: %s); choose with --topology and --alloc",
			o.fromJournal, len(keys), strings.Join(all, ", "))
	}
	recs := groups[keys[0]]
	sort.Slice(recs, func(i, j int) bool { return recs[i].Experiment.Workload.Users < recs[j].Experiment.Workload.Users })
	opts, err := o.campaign.algorithm.options(algorithms.PaperTiming)
	if err != nil {
		return c, cp, err
	}
	trials := make([]algorithms.Trial, len(recs))
	for i, r := range recs {
		trials[i] = algorithms.Trial{Experiment: r.Experiment, Observation: r.Observation}
	}
	d := recs[0].Experiment.Deployment
	c = capacityOf(d.Topology, recs[0].Runner, formatAllocation(recs[0].Experiment.Allocation), opts.SLA, trials)
	c.Critical, c.SaturationWorkload = firstSaturated(d, trials, opts)
	cp.deployment = d
	cp.runner.Name = c.Runner
	return c, cp, nil
}

// sweep raises the workload step by step on the allocation as given, until
// throughput stops growing. Unlike find-critical it never doubles a pool: a
// check measures the deployment as configured.
func sweep(ctx context.Context, c campaign) ([]algorithms.Trial, error) {
	var trials []algorithms.Trial
	tpCurr, tpMax := 0.0, -1.0
	for w := c.opts.Step; tpCurr > tpMax && w <= c.opts.MaxWorkload; w += c.opts.Step {
		tpMax = tpCurr
		e := algorithms.Experiment{Deployment: c.deployment, Allocation: c.start, Workload: algorithms.Workload{Users: w}, Timing: c.opts.Timing}
		if c.opts.OnStart != nil {
			c.opts.OnStart("check", e)
		}
		ob, err := c.x.RunExperiment(ctx, e)
		if err != nil {
			return trials, fmt.Errorf("check: experiment at %d users: %w", w, err)
		}
		t := algorithms.Trial{Procedure: "check", Experiment: e, Observation: ob}
		hw, soft := algorithms.Saturations(c.deployment, ob, c.opts)
		for _, x := range append(hw, soft...) {
			t.Saturated = append(t.Saturated, x.String())
		}
		if c.opts.OnTrial != nil {
			c.opts.OnTrial(t)
		}
		trials = append(trials, t)
		tpCurr = ob.Throughput
	}
	return trials, nil
}

// firstSaturated names the first resource to saturate as the workload grew:
// a hardware resource, or else a pool ("app/threads": the allocation, not
// the hardware, limits capacity), with the workload where it did.
func firstSaturated(d algorithms.Deployment, trials []algorithms.Trial, opts algorithms.Options) (string, int) {
	for _, t := range trials {
		hw, soft := algorithms.Saturations(d, t.Observation, opts)
		if len(hw) > 0 {
			return hw[0].Tier + "/" + hw[0].Resource, t.Experiment.Workload.Users
		}
		if len(soft) > 0 {
			return soft[0].Tier + "/" + soft[0].Resource, t.Experiment.Workload.Users
		}
	}
	return "", 0
}

// capacityOf summarises trials of one allocation.
func capacityOf(topology, runner, allocation string, sla float64, trials []algorithms.Trial) Capacity {
	c := Capacity{Topology: topology, Runner: runner, Allocation: allocation, SLA: sla, Experiments: len(trials)}
	for _, t := range trials {
		c.MaxGoodput = max(c.MaxGoodput, t.Observation.Goodput(sla))
		c.MaxThroughput = max(c.MaxThroughput, t.Observation.Throughput)
	}
	return c
}

func writeCheckTable(w io.Writer, doc CheckJSON) error {
	c := doc.Capacity
	critical := c.Critical
	if critical == "" {
		critical = "none saturated"
	}
	fmt.Fprintf(w, "capacity of %s %s on %s: max goodput %.1f pages/s at %g s, max throughput %.1f pages/s, critical %s at %d users (%d experiments)\n\n",
		c.Topology, c.Allocation, c.Runner, c.MaxGoodput, c.SLA, c.MaxThroughput, critical, c.SaturationWorkload, c.Experiments)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tRESULT\tDETAIL")
	for _, ch := range doc.Checks {
		res := "pass"
		if !ch.OK {
			res = "FAIL"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", ch.Name, res, ch.Message)
	}
	return tw.Flush()
}
