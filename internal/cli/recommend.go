package cli

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/journal"
	"github.com/softalloc/softalloc/internal/metrics"
	"github.com/softalloc/softalloc/internal/report"
	"github.com/softalloc/softalloc/internal/runner"
	"github.com/softalloc/softalloc/internal/runner/live"
	"github.com/softalloc/softalloc/internal/topology"
	"github.com/softalloc/softalloc/internal/version"
)

// campaignOptions are the flags of every command that runs a campaign of
// experiments (find-critical, recommend, validate, check).
type campaignOptions struct {
	f          *factory
	cmd        *cobra.Command
	deployment deploymentFlags
	runner     runnerFlags
	journal    journalFlags
	algorithm  algorithmFlags
	metrics    metricsFlags
	output     string
	progress   progressFlags
	started    time.Time
	// preflight, when set, checks a command's own flags against the resolved
	// campaign before the journal opens (and with --fresh sets it aside).
	preflight func(campaign) error
	// sizing names the command when it sizes pools from every tier's
	// throughput and response time, checked before the first trial.
	sizing string
}

func (o *campaignOptions) register(f *factory, cmd *cobra.Command, scope algorithmScope) {
	o.f, o.cmd = f, cmd
	fs := cmd.Flags()
	o.deployment.register(fs)
	o.deployment.command = cmd.Name()
	o.runner.register(fs)
	o.journal.register(fs)
	o.algorithm.register(fs, scope)
	o.metrics.register(fs, f.Getenv)
	fs.StringVarP(&o.output, "output", "o", "table", "output format: table, json or csv")
	o.progress.register(fs)
}

// campaign is everything a campaign command runs on.
type campaign struct {
	deployment algorithms.Deployment
	start      algorithms.Allocation
	runner     runner.Runner
	x          algorithms.Experimenter
	journal    *journal.Journal
	opts       algorithms.Options
	progress   *progress
	// progressMode is --progress resolved: live, plain or none.
	progressMode string
}

// setup resolves everything a campaign needs from the flags.
func (o *campaignOptions) setup() (campaign, error) {
	cmd, s := o.cmd, o.f.Streams
	var c campaign
	o.started = time.Now()
	if err := checkOutput(o.output); err != nil {
		return c, err
	}
	if err := o.metrics.check(); err != nil {
		return c, err
	}
	if err := o.journal.check(); err != nil {
		return c, err
	}
	var err error
	if c.progressMode, err = o.progress.resolve(s); err != nil {
		return c, err
	}
	if c.deployment, c.start, err = o.deployment.resolve(); err != nil {
		return c, err
	}
	var t algorithms.Timing
	if c.runner, t, err = o.runner.build(cmd, o.f, &o.deployment); err != nil {
		return c, err
	}
	alloc := ""
	if len(o.deployment.allocs) == 1 {
		alloc = o.deployment.allocs[0]
	}
	if err := o.deployment.checkRunnable(c.runner, c.deployment, c.start, t, alloc, o.sizing); err != nil {
		return c, err
	}
	for _, w := range c.runner.Warnings {
		fmt.Fprintf(s.Err, "softalloc: warning: %s\n", w)
	}
	if derivesSteps(c.runner.Name) {
		fl := cmd.Flags()
		o.algorithm.derive = algorithms.StepsToDerive{Step: !fl.Changed("step"), SmallStep: !fl.Changed("small-step"), ScanSpan: !fl.Changed("scan-span")}
	}
	if m := o.runnerMaxUsers(c.runner.Name); m > 0 {
		// The runner refuses more users than its maxUsers (the live
		// runner, the Locust adapter): no scan or ramp asks for them.
		if cmd.Flags().Changed("max-workload") && o.algorithm.maxWorkload > m {
			return c, usagef("--max-workload %d: want at most the runner section's maxUsers (%d users)", o.algorithm.maxWorkload, m)
		}
		o.algorithm.maxWorkload = min(o.algorithm.maxWorkload, m)
	}
	if c.opts, err = o.algorithm.options(t); err != nil {
		return c, err
	}
	if o.preflight != nil {
		if err := o.preflight(c); err != nil {
			return c, err
		}
	}
	c.progress = newProgress(cmd.Context(), s, c.progressMode)
	c.progress.campaign(c.deployment, &c.opts)
	if c.progress != nil {
		c.opts.OnSteps = func(st algorithms.Steps) {
			c.progress.note(fmt.Sprintf("workload steps: step %d users, small step %d, scan span %d: %s", st.Step, st.SmallStep, st.ScanSpan, st.From))
		}
	}
	// Inside the journal: the display shows the experiments that run.
	run := c.runner
	run.Experimenter = c.progress.wrap(run.Experimenter)
	if c.x, c.journal, err = o.journal.open(s, run); err != nil {
		c.progress.close()
		return c, err
	}
	return c, nil
}

// runnerMaxUsers is the most users the runner takes in one trial or ramp
// level: the deployment file's runner section's maxUsers (which the live
// runner and the Locust adapter read), or the live runner's default; 0
// when the runner declares none (the simulator and a recording have none).
func (o *campaignOptions) runnerMaxUsers(runner string) int {
	if runner != "exec" && runner != "live" {
		return 0
	}
	if df := o.deployment.loaded; df != nil {
		if n, ok := df.Runner["maxUsers"].(int); ok && n > 0 {
			return n
		}
	}
	if runner == "live" {
		return live.DefaultMaxUsers
	}
	return 0
}

// derivesSteps says whether a campaign on the named runner derives the
// workload steps it is not given from the deployment. The defaults are the
// simulator's scale (it saturates near 5,500 users), so the sim runner keeps
// them, and its answers with them; the replay runner answers only the
// experiments of its recording, whose steps the user names. A real
// deployment (exec, live) may saturate at 30 users or at 30,000.
func derivesSteps(runner string) bool { return runner == "exec" || runner == "live" }

// stepsHint tells the user who meets a deployment whose steps cannot be
// derived which flags to give instead.
func stepsHint(err error) error {
	if errors.Is(err, algorithms.ErrStepsNotDerived) {
		return fmt.Errorf("%w; give --step (and for recommend --small-step and --scan-span)", err)
	}
	return err
}

// stepsUsed says which workload steps a campaign used: those derived, or
// the options' with where they came from.
func (o *campaignOptions) stepsUsed(c campaign, derived *algorithms.Steps) algorithms.Steps {
	if derived != nil {
		return *derived
	}
	st := algorithms.Steps{Step: c.opts.Step, SmallStep: c.opts.SmallStep, ScanSpan: c.opts.ScanSpan, From: "the defaults"}
	fl := o.cmd.Flags()
	var given []string
	for _, name := range []string{"step", "small-step", "scan-span"} {
		if fl.Changed(name) {
			given = append(given, "--"+name)
		}
	}
	switch {
	case len(given) == 0:
	case fl.Lookup("small-step") == nil || len(given) == 3:
		st.From = "given"
	default:
		st.From = strings.Join(given, " and ") + " given; the others the defaults"
	}
	return st
}

// finish stops the progress display and closes the journal.
func (o *campaignOptions) finish(c campaign, err error) error {
	c.progress.close()
	return finishJournal(o.cmd.Context(), o.f.Streams, c.journal, c.progressMode == "none", err)
}

// metricSet starts the command's metrics with its duration.
func (o *campaignOptions) metricSet(c campaign) *metrics.Set {
	set := metrics.New(o.cmd.Name(), c.deployment.Topology, c.runner.Name)
	set.Duration(time.Since(o.started))
	return set
}

// reportFlag is --report: the campaign's self-contained HTML page, drawn
// from its result, so a campaign resumed from its journal writes it whole.
type reportFlag struct{ path string }

func (r *reportFlag) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&r.path, "report", "", "write a self-contained HTML report (answer, figures, snippets) to this .html file, readable offline")
}

// check refuses a path the command could not write, before any trial.
func (r *reportFlag) check() error { return checkOutputFile("--report", r.path, ".html", ".htm") }

// write writes the page when --report was given; rep carries the command's
// result, and the campaign's settings are filled in here.
func (r *reportFlag) write(o *campaignOptions, cp campaign, rep report.HTMLReport) error {
	if r.path == "" {
		return nil
	}
	rep.Command, rep.Deployment, rep.Runner, rep.Version = o.cmd.Name(), cp.deployment, cp.runner.Name, version.String()
	rep.DeploymentFile, rep.Seed = o.deployment.file, o.runner.seed
	rep.SLA, rep.HardwareThreshold = cp.opts.SLA, cp.opts.HardwareThreshold
	if rep.SLA == 0 || rep.HardwareThreshold == 0 {
		d := algorithms.DefaultOptions()
		rep.SLA, rep.HardwareThreshold = cmp.Or(rep.SLA, d.SLA), cmp.Or(rep.HardwareThreshold, d.HardwareThreshold)
	}
	rep.Warnings = cp.runner.Warnings
	rep.Generated, rep.Elapsed = time.Now(), time.Since(o.started).Round(time.Millisecond)
	return report.SaveHTML(r.path, rep)
}

// findCriticalOptions are find-critical's.
type findCriticalOptions struct {
	campaignOptions
	report reportFlag
	ramp   bool
}

// newCmdFindCritical is `softalloc find-critical`.
func newCmdFindCritical(f *factory, runF func(*findCriticalOptions) error) *cobra.Command {
	o := &findCriticalOptions{}
	cmd := &cobra.Command{
		Use:   "find-critical",
		Short: "Find the hardware resource that saturates first, and at what workload",
		Long: `find-critical runs Algorithm 1's FindCriticalResource: it raises the workload
step by step from the initial allocation until throughput stops growing. A
saturated hardware resource is the answer; a saturated pool first means the
allocation is too small, so it is doubled and the search goes on.`,
		Example: `  softalloc find-critical --topology 1/2/1/2
  softalloc find-critical --topology 1/4/1/4 --step 250 --output json
  softalloc find-critical -f deployment.yaml --runner replay --campaign .softalloc/journal.jsonl
  softalloc find-critical --topology 1/2/1/2 --report find-critical.html
  softalloc find-critical --topology 1/2/1/2 --ramp --output json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(o)
			}
			return runFindCritical(o)
		},
	}
	o.register(f, cmd, scopeFindCritical)
	o.report.register(cmd)
	cmd.Flags().BoolVar(&o.ramp, "ramp", false, rampHelp)
	return cmd
}

func runFindCritical(o *findCriticalOptions) error {
	ctx, s := o.cmd.Context(), o.f.Streams
	if err := o.report.check(); err != nil {
		return err
	}
	if o.ramp && o.report.path != "" {
		return usagef("--report %q with --ramp: the HTML report draws a staircase's trials; leave out one", o.report.path)
	}
	if !o.ramp && o.cmd.Flags().Changed("small-step") {
		return usagef("--small-step %d without --ramp: the staircase rises by --step; give --ramp or leave out --small-step", o.algorithm.smallStep)
	}
	cp, err := o.setup()
	if err != nil {
		return err
	}
	if o.ramp {
		return runFindCriticalRamp(ctx, o, cp)
	}
	d := cp.deployment
	c, err := algorithms.FindCriticalResource(ctx, cp.x, d, cp.start, cp.opts)
	err = stepsHint(err)
	if err = o.finish(cp, err); err != nil {
		return err
	}
	set := o.metricSet(cp)
	set.Critical(c)
	set.Experiments(c.Experiments)
	set.TrialsGoodput(c.Trials, cp.opts.SLA, algorithms.Allocation.String)
	// The answer is printed first, so a failed push never hides it.
	switch o.output {
	case "json":
		err = report.WriteJSON(s.Out, struct {
			report.FindCriticalJSON
			Steps algorithms.Steps `json:"steps"`
		}{Steps: o.stepsUsed(cp, c.Steps), FindCriticalJSON: report.FindCriticalJSON{Topology: d.Topology, Critical: report.NewCriticalJSON(c),
			Reserve: topology.FormatAllocationIn(d, c.Reserve), Experiments: c.Experiments, Failures: report.TrialFailures(c.Trials),
			Warnings: nonNilStrings(c.Warnings), Version: version.String()}})
	case "csv":
		err = report.WriteCriticalCSV(s.Out, d.Topology, c, topology.FormatAllocationIn(d, c.Reserve))
	default:
		err = report.WriteCriticalTable(s.Out, d.Topology, c, topology.FormatAllocationIn(d, c.Reserve))
	}
	if err != nil {
		return err
	}
	if err := o.report.write(&o.campaignOptions, cp, report.HTMLReport{Critical: c, Steps: ptr(o.stepsUsed(cp, c.Steps))}); err != nil {
		return err
	}
	return o.metrics.emit(ctx, set)
}

// recommendOptions are recommend's.
type recommendOptions struct {
	campaignOptions
	format    string
	classes   string
	withRange bool
	report    reportFlag
	ramp      bool
	perCount  bool
	// childRSS is --child-rss, MiB (0: not given).
	childRSS mebibytesValue
}

// snippets are the config snippets of the recommended tiers, the php-fpm
// pool file with the memory its children need when --child-rss gives a
// child's resident memory.
func (o *recommendOptions) snippets(d algorithms.Deployment, tiers []algorithms.TierRecommendation, formats []string) []report.Snippet {
	return report.SnippetsWith(d, tiers, formats, report.SnippetOptions{ChildRSS: float64(o.childRSS) * (1 << 20)})
}

// checkChildRSS refuses --child-rss for a deployment without children.
func (o *recommendOptions) checkChildRSS(d algorithms.Deployment) error {
	if o.childRSS == 0 || slices.ContainsFunc(d.Tiers, func(t algorithms.Tier) bool { return t.Children }) {
		return nil
	}
	return usagef("--child-rss %s: deployment %q has no tier of children (pools: {children: N}) whose memory it sizes", o.childRSS.String(), d.Topology)
}

// newCmdRecommend is `softalloc recommend`.
func newCmdRecommend(f *factory, runF func(*recommendOptions) error) *cobra.Command {
	o := &recommendOptions{}
	cmd := &cobra.Command{
		Use:   "recommend",
		Short: "Recommend thread- and connection-pool sizes for every tier",
		Long: `recommend runs the whole of Algorithm 1: FindCriticalResource, then
InferMinConcurrentJobs (small workload steps; intervention analysis of SLO
satisfaction finds the minimum saturating workload; minJobs = TP x RTT of the
critical tier there), then CalculateMinAllocation (Little's law and the forced
flow law size the other tiers).

The critical tier and the tiers behind it get the formula's sizes. Formula 3 is
a lower bound and a front tier must also buffer (the paper's Sec. III-C), so
pools in front of the tier that bounds the critical server's jobs keep at
least their reserved size; the table shows the formula's minimum beside them.`,
		Example: `  softalloc recommend --topology 1/2/1/2
  softalloc recommend --topology 1/4/1/4 --output json
  softalloc recommend --topology 1/4/1/4 --mode paper --seed 7 --journal .softalloc/seed7.jsonl
  softalloc recommend --topology 1/4/1/4 --format apache,tomcat
  softalloc recommend --topology 1/2/1/2 --format all --output json
  softalloc recommend --topology 1/2/1/2 --range
  softalloc recommend -f deployment.yaml --runner replay --campaign recorded.jsonl
  softalloc recommend --topology 1/2/1/2 --range --report report.html
  softalloc recommend --topology 1/2/1/2 --ramp
  softalloc recommend -f autoscaled.yaml --per-count --seed 1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(o)
			}
			if o.classes != "" {
				if o.report.path != "" {
					return usagef("--report %q: the HTML report covers recommend's chain, not --workload's per-class pools", o.report.path)
				}
				return runRecommendClasses(o) // per-class pools of one server: classes.go
			}
			return runRecommend(o)
		},
	}
	o.register(f, cmd, scopeRecommend)
	o.deployment.ranges = true
	cmd.Flags().StringVar(&o.format, "format", "", "config snippets for the recommended sizes: "+strings.Join(report.SnippetFormats, ", ")+" (comma-separated) or all; each for the tiers that run it")
	cmd.Flags().BoolVar(&o.withRange, "range", false, "also measure the range of the bounding pool's sizes within 1% of the best goodput at the SLA (up to 8 more experiments, 6/5 of the saturation workload)")
	cmd.Flags().StringVar(&o.classes, "workload", "", "workload file of request classes with objectives: size per-class pools of one server instead (docs/classes.md)")
	deprecatedAlias(cmd.Flags(), "classes", "workload", &o.classes)
	cmd.Flags().Var(&o.childRSS, "child-rss", "a php-fpm child's mean resident memory (48MiB, 43008KiB; a bare number is MiB): the pool file then says the memory the recommended children need (ps -o rss= -C php-fpm8.2 prints KiB)")
	o.report.register(cmd)
	cmd.Flags().BoolVar(&o.ramp, "ramp", false, rampHelp)
	cmd.Flags().BoolVar(&o.perCount, "per-count", false, perCountHelp)
	return cmd
}

func runRecommend(o *recommendOptions) error {
	ctx, s := o.cmd.Context(), o.f.Streams
	formats, err := report.ParseFormats(o.format)
	if err != nil {
		return usageError{err}
	}
	if err := o.report.check(); err != nil {
		return err
	}
	if o.ramp && (o.report.path != "" || o.withRange) {
		return usagef("--ramp with --report or --range: those draw and extend a staircase's trials; leave out one")
	}
	if err := o.checkPerCount(formats); err != nil {
		return err
	}
	if o.childRSS != 0 {
		// Refused before the journal opens (setup reports the deployment's own errors).
		if d, _, err := o.deployment.resolve(); err == nil {
			if err := o.checkChildRSS(d); err != nil {
				return err
			}
		}
	}
	o.sizing = "recommend"
	if o.perCount {
		o.preflight = perCountPreflight
	}
	cp, err := o.setup()
	if err != nil {
		return err
	}
	if o.ramp {
		return runRecommendRamp(ctx, o, cp, formats)
	}
	if o.perCount {
		return runRecommendPerCount(ctx, o, cp)
	}
	d := cp.deployment
	rec, err := algorithms.Recommend(ctx, cp.x, d, cp.start, cp.opts)
	err = stepsHint(err)
	if err == nil && o.withRange {
		var r algorithms.PoolRange
		r, err = algorithms.MeasureRange(ctx, cp.x, d, rec, cp.opts)
		rec.Range = &r
		rec.Experiments += len(r.Points) // at their own workload and precision: none repeats the campaign's
	}
	if err = o.finish(cp, err); err != nil {
		return err
	}
	doc := report.NewRecommendJSON(d, rec, rec.Allocation.String())
	doc.Version = version.String()
	doc.Snippets = o.snippets(d, rec.Tiers, formats)
	doc.Snippets = append(doc.Snippets, report.ReplicaSnippets(d, rec.Replicas, formats)...) // a replica range's: hikari per count, pgbouncer, postgresql
	set := o.metricSet(cp)
	set.Recommendation(rec)
	set.Experiments(rec.Experiments)
	set.TrialsGoodput(append(rec.Critical.Trials, rec.MinJobs.Trials...), cp.opts.SLA, algorithms.Allocation.String)
	switch o.output {
	case "json":
		err = report.WriteJSON(s.Out, struct {
			report.RecommendJSON
			Steps algorithms.Steps `json:"steps"`
		}{doc, o.stepsUsed(cp, rec.Critical.Steps)})
	case "csv":
		err = report.WriteRecommendCSV(s.Out, doc)
	default:
		err = report.WriteRecommendTable(s.Out, doc)
	}
	if err != nil {
		return err
	}
	// The page shows the snippets --format asks for, and without it every
	// format that has a tier of its role here.
	page := report.HTMLReport{Critical: rec.Critical, Recommendation: &rec, Snippets: doc.Snippets, Steps: ptr(o.stepsUsed(cp, rec.Critical.Steps))}
	if len(formats) == 0 {
		page.Snippets = o.snippets(d, rec.Tiers, report.SnippetFormats)
	}
	if err := o.report.write(&o.campaignOptions, cp, page); err != nil {
		return err
	}
	return o.metrics.emit(ctx, set)
}

func ptr[T any](v T) *T { return &v }

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
