package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/journal"
	"github.com/softalloc/softalloc/internal/report"
	"github.com/softalloc/softalloc/internal/safefile"
	"github.com/softalloc/softalloc/internal/topology"
	"github.com/softalloc/softalloc/internal/version"
)

// checkOptions are check's.
type checkOptions struct {
	campaign      campaignOptions
	fromJournal   string
	minGoodput    float64
	maxRegression string
	baseline      string
	critical      string
	junit         string
}

// newCmdCheck is `softalloc check`: a CI capacity gate.
func newCmdCheck(f *factory, runF func(*checkOptions) error) *cobra.Command {
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
("app/cpu"), or a pool ("app/threads") when the allocation limits capacity.
--output json prints it; saved to a file, that is a --baseline for later runs.

Exit codes: 0 when capacity holds, 1 with one line per violated check on
stderr, 2 on usage and configuration errors (found before any experiment),
130 or 143 when SIGINT or SIGTERM interrupts it.
--metrics-file and --pushgateway export the same metrics either way, so a CI
job can push them whatever the verdict.`,
		Example: `  softalloc check --topology 1/2/1/2 --min-goodput 700 --sla 2s
  softalloc check --topology 1/2/1/2 --output json > capacity.json
  softalloc check --topology 1/2/1/2 --baseline capacity.json --max-regression 5% --critical app/cpu
  softalloc check --from-journal .softalloc/journal.jsonl -t 1/4/1/4 --min-goodput 800 \
    --metrics-file capacity.prom`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(o)
			}
			return runCheck(o)
		},
	}
	o.campaign.register(f, cmd, scopeSweep)
	fs := cmd.Flags()
	fs.StringVar(&o.fromJournal, "from-journal", "", "measure capacity from this recorded journal instead of running a campaign")
	fs.Float64Var(&o.minGoodput, "min-goodput", 0, "fail when the highest goodput at --sla is below this many pages/s")
	fs.StringVar(&o.maxRegression, "max-regression", "", "fail when goodput or throughput falls more than this (e.g. 5%) below --baseline")
	fs.StringVar(&o.baseline, "baseline", "", "capacity JSON of an earlier run (check --output json) on the same deployment and runner, at the same --sla")
	fs.StringVar(&o.critical, "critical", "", "fail when the critical resource is not TIER/RESOURCE (e.g. app/cpu)")
	fs.StringVar(&o.junit, "junit", "", "also write the checks as a JUnit XML report to FILE (one test case per check)")
	return cmd
}

// parsePercent reads --max-regression, which must carry its % sign: a bare
// 0.05 read as 0.05% set a gate 100 times stricter than the 5% that
// --precision's 0.02 = 2% suggests it meant.
func parsePercent(s string) (float64, error) {
	num, ok := strings.CutSuffix(strings.TrimSpace(s), "%")
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if !ok || err != nil || !(v >= 0 && v < 100) { // NaN too
		return 0, usagef("--max-regression %q: want a percentage in [0,100) with its %% sign, e.g. 5%%", s)
	}
	return v / 100, nil
}

func loadBaseline(path string) (report.Capacity, error) {
	var c report.Capacity
	data, err := safefile.Read(path, safefile.MaxInput)
	if err != nil {
		return c, usageError{fmt.Errorf("--baseline: %w", err)}
	}
	return parseBaseline(data, path)
}

// parseBaseline reads a baseline: check's JSON output or its capacity object.
func parseBaseline(data []byte, path string) (report.Capacity, error) {
	var c report.Capacity
	var doc map[string]json.RawMessage
	// Either check's whole JSON output or its capacity object; an error in
	// the capacity of a whole output is that error, not zeros read from
	// the outer object.
	capacity := data
	if json.Unmarshal(data, &doc) == nil && doc["capacity"] != nil {
		capacity = doc["capacity"]
	}
	if err := json.Unmarshal(capacity, &c); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return c, usagef("--baseline %q: %s: want a %s, got a JSON %s (check --output json writes it)", path, te.Field, jsonKind(te.Type), te.Value)
		}
		return c, usageError{fmt.Errorf("--baseline %q: want check's JSON output: %w", path, err)}
	}
	// A negative or zero figure would make every regression check pass.
	if !(c.MaxGoodput > 0) || !(c.MaxThroughput > 0) || !(c.SLA >= 0) {
		return c, usagef("--baseline %q: want maxGoodput and maxThroughput above 0 and slaSeconds >= 0, got %g, %g and %g (check --output json writes them)",
			path, c.MaxGoodput, c.MaxThroughput, c.SLA)
	}
	// What the figures were measured on and at: a capacity compared with
	// one of another SLA, runner or deployment passes or fails for no reason.
	for _, f := range []struct {
		missing    bool
		field, was string
	}{
		{c.SLA == 0, "slaSeconds", "the SLA its maxGoodput was measured at"},
		{c.Runner == "", "runner", "the runner it was measured on"},
		{c.Topology == "", "topology", "the deployment it was measured on"},
	} {
		if f.missing {
			return c, usagef("--baseline %q: no %s, %s; want check --output json's capacity, which has it", path, f.field, f.was)
		}
	}
	return c, nil
}

// jsonKind names a Go type as JSON calls it.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Float32, reflect.Float64, reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint, reflect.Uint64:
		return "number"
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Slice, reflect.Array:
		return "list"
	}
	return "object"
}

// parseCritical reads --critical's TIER/RESOURCE.
func parseCritical(s string) (tier, resource string, err error) {
	tier, resource, _ = strings.Cut(s, "/")
	if tier == "" || resource == "" || strings.Contains(resource, "/") {
		return "", "", usagef("--critical %q: want TIER/RESOURCE, e.g. app/cpu", s)
	}
	return tier, resource, nil
}

func runCheck(o *checkOptions) error {
	cmd, s := o.campaign.cmd, o.campaign.f.Streams
	ctx := cmd.Context()
	var regression float64
	var base report.Capacity
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
		if _, _, err := parseCritical(o.critical); err != nil {
			return err
		}
	}
	if err := checkOutputFile("--junit", o.junit, ".xml"); err != nil {
		return err
	}
	if o.maxRegression != "" {
		if regression, err = parsePercent(o.maxRegression); err != nil {
			return err
		}
		if base, err = loadBaseline(o.baseline); err != nil {
			return err
		}
	}
	var capacity report.Capacity
	var cp campaign
	if o.fromJournal != "" {
		if capacity, cp, err = o.capacityFromJournal(); err != nil {
			return err
		}
		if err := o.against(cp.deployment, capacity.Runner, capacity.Allocation, capacity.SLA, base); err != nil {
			return err
		}
	} else {
		// The flags that need the deployment are checked before the journal opens.
		o.campaign.preflight = func(c campaign) error {
			return o.against(c.deployment, c.runner.Name, c.start.String(), c.opts.SLA, base)
		}
		if cp, err = o.campaign.setup(); err != nil {
			return err
		}
		trials, err := algorithms.Sweep(ctx, cp.x, cp.deployment, cp.start, cp.opts)
		if err = o.campaign.finish(cp, err); err != nil {
			return err
		}
		capacity = capacityOf(cp.deployment, cp.runner.Name, cp.start.String(), cp.opts, trials)
	}
	// Checks is [] in JSON when there are none, never null.
	doc := report.CheckJSON{Capacity: capacity, Checks: []report.CheckResult{}, OK: true, Version: version.String()}
	add := func(name string, ok bool, format string, a ...any) {
		doc.Checks = append(doc.Checks, report.CheckResult{Name: name, OK: ok, Message: fmt.Sprintf(format, a...)})
		doc.OK = doc.OK && ok
	}
	if o.minGoodput > 0 {
		add("min-goodput", capacity.MaxGoodput >= o.minGoodput, "max goodput at %g s is %.1f pages/s; the minimum is %.1f",
			capacity.SLA, capacity.MaxGoodput, o.minGoodput)
	}
	if o.maxRegression != "" {
		allocations := ""
		if base.Allocation != capacity.Allocation {
			allocations = fmt.Sprintf(" (baseline allocation %s, this check's %s)", orNone(base.Allocation), capacity.Allocation)
		}
		for _, f := range []struct {
			name     string
			now, was float64
		}{{"goodput", capacity.MaxGoodput, base.MaxGoodput}, {"throughput", capacity.MaxThroughput, base.MaxThroughput}} {
			floor := f.was * (1 - regression)
			add("max-regression-"+f.name, f.now >= floor, "max %s is %.1f pages/s, %s against the baseline's %.1f%s; the floor is %.1f (-%s)",
				f.name, f.now, report.Percent(100*(f.now/f.was-1), 1, true), f.was, allocations, floor, o.maxRegression)
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
	tier, res, _ := strings.Cut(capacity.Critical, "/")
	set.Capacity(capacity.MaxThroughput, tier, res, capacity.SaturationWorkload)
	for _, c := range doc.Checks {
		set.CheckPassed(c.Name, c.OK)
	}
	switch o.campaign.output {
	case "json":
		err = report.WriteJSON(s.Out, doc)
	case "csv":
		err = report.WriteCheckCSV(s.Out, doc)
	default:
		err = report.WriteCheckTable(s.Out, doc)
	}
	if err != nil {
		return err
	}
	if o.junit != "" {
		err := safefile.Write(o.junit, 0o644, func(w io.Writer) error {
			return report.WriteCheckJUnit(w, doc, time.Since(o.campaign.started).Seconds())
		})
		if err != nil {
			return fmt.Errorf("--junit %q: %w", o.junit, err)
		}
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

// against checks --critical's tier and the baseline's SLA, runner and
// deployment against what this check measures: a capacity compared with one
// of another deployment, runner or SLA would pass or fail for no reason. A
// baseline of another allocation is what a gate on a changed allocation
// compares with: that is said, not refused.
func (o *checkOptions) against(d algorithms.Deployment, runnerName, alloc string, sla float64, base report.Capacity) error {
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
	if base.Runner != "" && base.Runner != runnerName {
		return usagef("--baseline %q was measured on the %s runner, this check runs on %s", o.baseline, base.Runner, runnerName)
	}
	if o.maxRegression != "" && base.Allocation != alloc {
		fmt.Fprintf(o.campaign.f.Streams.Err, "softalloc: warning: --baseline %q was measured on allocation %s, this check on %s: the regression checks compare the two allocations\n",
			o.baseline, orNone(base.Allocation), alloc)
	}
	return nil
}

// orNone is s, or "none recorded" when it is empty.
func orNone(s string) string {
	if s == "" {
		return "none recorded"
	}
	return s
}

// capacityFromJournal measures capacity from recorded experiments of one
// topology and allocation.
func (o *checkOptions) capacityFromJournal() (report.Capacity, campaign, error) {
	s := o.campaign.f.Streams
	cp := campaign{}
	var c report.Capacity
	o.campaign.started = time.Now()
	if err := checkOutput(o.campaign.output); err != nil {
		return c, cp, err
	}
	if err := o.campaign.metrics.check(); err != nil {
		return c, cp, err
	}
	// The flags are checked before the journal is read: a mistake in them
	// read as a journal that holds nothing to check.
	opts, err := o.campaign.algorithm.options(algorithms.PaperTiming)
	if err != nil {
		return c, cp, err
	}
	wantAlloc := ""
	if len(o.campaign.deployment.allocs) > 1 {
		return c, cp, usagef("--alloc given %d times: check takes one allocation", len(o.campaign.deployment.allocs))
	}
	keyedAlloc := "" // tier.pool=N,...: read against each record's deployment
	if len(o.campaign.deployment.allocs) == 1 {
		if raw := o.campaign.deployment.allocs[0]; strings.Contains(raw, "=") {
			keyedAlloc = raw
		} else {
			a, err := topology.ParseAllocation(raw)
			if err != nil {
				return c, cp, usagef("--alloc: %w", err)
			}
			wantAlloc = a.String() // as the journal's records write it
		}
	}
	entries, warnings, err := journal.ReadFile(o.fromJournal)
	for _, w := range warnings {
		fmt.Fprintf(s.Err, "softalloc: warning: %s\n", w)
	}
	if err != nil {
		return c, cp, configError(fmt.Errorf("--from-journal: %w", err))
	}
	// A journal may hold several runners' and seeds' records: capacity is
	// measured on one of them, never on a mixture.
	fl := o.campaign.cmd.Flags()
	groups := map[string][]journal.Entry{}
	for _, e := range entries {
		if fl.Changed("runner") && e.Runner != o.campaign.runner.name ||
			fl.Changed("seed") && e.Settings["seed"] != strconv.FormatUint(o.campaign.runner.seed, 10) {
			continue
		}
		id := journal.Identity{Runner: e.Runner, Settings: e.Settings}
		k := e.Experiment.Deployment.Topology + " " + e.Experiment.Allocation.String() + " " + id.String()
		groups[k] = append(groups[k], e)
	}
	want := o.campaign.deployment.topology
	var keys []string
	var keyedErr error
	for k := range groups {
		t, rest, _ := strings.Cut(k, " ")
		a, _, _ := strings.Cut(rest, " ")
		if (want == "" || t == want) && (wantAlloc == "" || a == wantAlloc) {
			if keyedAlloc != "" {
				e := groups[k][0].Experiment
				ka, err := topology.ParseAllocationIn(e.Deployment, keyedAlloc)
				if err != nil {
					keyedErr = err
					continue
				}
				if ka.Key() != e.Allocation.Key() {
					continue
				}
			}
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 && keyedErr != nil {
		return c, cp, usagef("--alloc: %w", keyedErr)
	}
	if keyedAlloc != "" {
		wantAlloc = keyedAlloc // an allocation was chosen
	}
	sort.Strings(keys)
	// A journal that recommend --range or validate also wrote holds other
	// allocations beside the one the campaign started from: without --alloc,
	// that one is meant, as for a check that runs its own experiments.
	if len(keys) > 1 && wantAlloc == "" && (want != "" || o.campaign.deployment.file != "") {
		if _, start, err := o.campaign.deployment.resolve(); err == nil {
			var started []string
			for _, k := range keys {
				if _, rest, _ := strings.Cut(k, " "); strings.HasPrefix(rest, start.String()+" ") {
					started = append(started, k)
				}
			}
			if len(started) > 0 {
				keys = started
			}
		}
	}
	if len(keys) != 1 {
		listed := keys // what matched, else what the journal holds
		if len(listed) == 0 {
			listed = slices.Sorted(maps.Keys(groups))
		}
		return c, cp, usagef("--from-journal %q: want exactly one topology, allocation and runner to check, found %d matching (%s); choose with --topology, --alloc, --runner and --seed",
			o.fromJournal, len(keys), strings.Join(listed, ", "))
	}
	recs := groups[keys[0]]
	sort.Slice(recs, func(i, j int) bool { return recs[i].Experiment.Workload.Users < recs[j].Experiment.Workload.Users })
	trials := make([]algorithms.Trial, len(recs))
	for i, r := range recs {
		trials[i] = algorithms.Trial{Experiment: r.Experiment, Observation: r.Observation}
	}
	d := recs[0].Experiment.Deployment
	c = capacityOf(d, recs[0].Runner, recs[0].Experiment.Allocation.String(), opts, trials)
	cp.deployment = d
	cp.runner.Name = c.Runner
	return c, cp, nil
}

// capacityOf summarises trials of one allocation as check reports it.
func capacityOf(d algorithms.Deployment, runner, allocation string, opts algorithms.Options, trials []algorithms.Trial) report.Capacity {
	m := algorithms.MeasureCapacity(d, trials, opts.SLA, opts)
	c := report.Capacity{Topology: d.Topology, Runner: runner, Allocation: allocation, SLA: opts.SLA,
		MaxGoodput: m.MaxGoodput, MaxThroughput: m.MaxThroughput, SaturationWorkload: m.SaturationWorkload, Experiments: m.Experiments,
		Failures: report.TrialFailures(trials)}
	if m.FirstSaturated != nil {
		c.Critical = m.FirstSaturated.Tier + "/" + m.FirstSaturated.Resource
	}
	return c
}
