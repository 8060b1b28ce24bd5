package cli

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/journal"
	"github.com/softalloc/softalloc/internal/report"
	"github.com/softalloc/softalloc/internal/topology"
	"github.com/softalloc/softalloc/internal/version"
)

// validateOptions are validate's.
type validateOptions struct {
	campaign    campaignOptions
	recommended string
	users       string
	seeds       string
	threads     string
	connections string
	plot        string
	parallel    int
	screening   int
	// A children (php-fpm) stack's grid and memory rule.
	children    string
	memoryLimit mebibytesValue // MiB
	childRSS    mebibytesValue // MiB
}

// maxScreening bounds --screening: the first precision is capped at 25%
// anyway, which 2% reaches in four halvings.
const maxScreening = 4

// newCmdValidate is `softalloc validate`: the recommendation against a grid.
func newCmdValidate(f *factory, runF func(*validateOptions) error) *cobra.Command {
	o := &validateOptions{}
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Compare the recommendation with a grid, the practitioners' pools and rules of thumb",
		Long: `validate runs recommend (or takes --recommended), then a grid of allocations
around it at a range of workloads on the same runner, and prints the best
allocation of the grid, its maximum goodput at the SLA, the recommendation's,
their ratio, and the experiments each approach needed. The grid also holds
the practitioners' 400-150-60, Tomcat's defaults (200 threads, 8 connections)
and the HikariCP rule of thumb (connections = 2 x DB cores + 1).

The grid keeps the recommendation's web pool and varies the app tier's thread
and connection pools (--grid-threads, --grid-connections; a connection beyond
the thread count is never opened, so pairs with more connections than threads
are left out). Workloads default to six steps of 500 users around the
saturation workload. --seeds averages the simulator over several seeds.
Trials run in parallel (--parallel) with results identical to a serial run,
where the runner allows it: the sim and replay runners do; exec and live drive
one real deployment and run their trials one at a time.

Adaptive grid trials are held to the precision on throughput and goodput
alone (nothing else is compared) and screened: the whole grid is measured
first at 4x the precision (--screening 2), and only the trials that could
still be the grid's best, or a named allocation's maximum, again at half
the precision, until they reach --precision. The rest keep their wider
interval, which already holds them below the best at 95% confidence.

A deployment whose tier has children (pools: {children: N}, php-fpm's) is
compared with the rules its operators use instead: Debian's defaults
(MaxRequestWorkers 150, pm.max_children 5, max_connections 151), Apache's
and MariaDB's defaults beside the recommended children, the memory rule
(--memory-limit / --child-rss children), 4 x the tier's cores and 200
children; the grid varies the children (--grid-children) at the
recommendation's web pool, and each allocation's database gets the
connections its children need (children x connections per child, as
recommend measured them or the default, + the reserve) where it lists a
connections pool.`,
		Example: `  softalloc validate --topology 1/2/1/2
  softalloc validate --topology 1/4/1/4 --seeds 1,2 --plot goodput.svg
  softalloc validate --topology 1/4/1/4 --recommended 400-8-8 --users 6000:8000:500 --output json
  softalloc validate --runner live -f deployment-wordpress.yaml --memory-limit 1G --child-rss 42M`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(o)
			}
			return runValidate(o)
		},
	}
	o.campaign.register(f, cmd, scopeRecommend)
	fs := cmd.Flags()
	fs.StringVar(&o.recommended, "recommended", "", "the allocation to validate: "+allocationHelp+" (default: run recommend first)")
	fs.StringVar(&o.users, "users", "", "workloads: N1,N2,... or START:END:STEP (default: around the saturation workload)")
	fs.StringVar(&o.seeds, "seeds", "", "simulator seeds to average, e.g. 1,2 (default: --seed)")
	fs.StringVar(&o.threads, "grid-threads", "", "app thread pools of the grid (default: around the recommendation, plus 6,10,20,50,100,150,200)")
	fs.StringVar(&o.connections, "grid-connections", "", "app connection pools of the grid (default: around the recommendation, plus 6,10,20,60,100,200)")
	fs.StringVar(&o.children, "grid-children", "", "children pools of the grid, for a deployment whose tier has children (default: around the recommendation, plus 5,10,20,50,100,200)")
	fs.Var(&o.memoryLimit, "memory-limit", "with --child-rss: the memory for a children tier's children per server (1GiB, 1024MiB; a bare number is MiB): the memory rule compares limit / RSS children")
	fs.Var(&o.childRSS, "child-rss", "with --memory-limit: a child's mean resident memory (42MiB, 43008KiB; a bare number is MiB; ps -o rss= -C php-fpm8.2 prints KiB)")
	fs.IntVar(&o.screening, "screening", algorithms.DefaultScreening, "adaptive grid trials start at the precision x 2^N (at most 25%) and only contenders for the best are measured again (0: every trial at --precision)")
	fs.StringVar(&o.plot, "plot", "", "draw goodput against workload for the compared allocations (.svg, .png or .pdf)")
	registerParallel(fs, &o.parallel, "trials run at once")
	return cmd
}

func runValidate(o *validateOptions) error {
	ctx, s := o.campaign.cmd.Context(), o.campaign.f.Streams
	// Everything the flags can get wrong is refused before recommend runs.
	if err := checkOutputFile("--plot", o.plot, plotExtensions...); err != nil {
		return err
	}
	if err := checkParallel(o.parallel); err != nil {
		return err
	}
	if o.screening < 0 || o.screening > maxScreening {
		return usagef("--screening %d: want 0 to %d halvings of the precision", o.screening, maxScreening)
	}
	seeds, err := parseSeeds(o.seeds, o.campaign.runner)
	if err != nil {
		return err
	}
	threads, err := parseSizes("--grid-threads", o.threads)
	if err != nil {
		return err
	}
	conns, err := parseSizes("--grid-connections", o.connections)
	if err != nil {
		return err
	}
	childSizes, err := parseSizes("--grid-children", o.children)
	if err != nil {
		return err
	}
	memoryRule, err := memoryRuleChildren(float64(o.memoryLimit), float64(o.childRSS))
	if err != nil {
		return err
	}
	if o.users != "" || o.recommended != "" {
		if _, err := validateWorkloads(o.users, 0); err != nil {
			return err
		}
	}
	if o.recommended == "" {
		o.campaign.sizing = "validate" // its recommend
	} else if d, _, err := o.campaign.deployment.resolve(); err == nil {
		// A mistake in --recommended is refused before the journal opens
		// (setup reports the deployment's own errors).
		if _, err := o.campaign.deployment.parseAllocation(d, o.recommended); err != nil {
			return err
		}
	}
	cp, err := o.campaign.setup()
	if err != nil {
		return err
	}
	d := cp.deployment
	childrenStack := slices.ContainsFunc(d.Tiers, func(t algorithms.Tier) bool { return t.Children })
	if err := childrenFlags(childrenStack, d, o); err != nil {
		return o.campaign.finish(cp, err)
	}
	if !childrenStack && (d.TierIndex("web") < 0 || d.TierIndex("app") < 0) {
		return o.campaign.finish(cp, usagef("validate: the grid varies the web and app tiers' pools; deployment %q has no tiers named web and app", d.Topology))
	}
	doc := report.ValidateJSON{Topology: d.Topology, SLA: cp.opts.SLA, Version: version.String()}
	var rec algorithms.Allocation
	var measured []algorithms.TierMeasurement
	saturation := 0
	if o.recommended != "" {
		if rec, err = o.campaign.deployment.parseAllocation(d, o.recommended); err != nil {
			return o.campaign.finish(cp, err)
		}
	} else {
		r, err := algorithms.Recommend(ctx, cp.x, d, cp.start, cp.opts)
		if err != nil {
			return o.campaign.finish(cp, err)
		}
		rec, saturation, doc.RecommendExperiments = r.Allocation, r.Critical.SaturationWorkload, r.Experiments
		measured = r.MinJobs.Measurements
	}
	if doc.Workloads, err = validateWorkloads(o.users, saturation); err != nil {
		return o.campaign.finish(cp, err)
	}
	doc.Seeds = seeds
	// One experimenter per seed, each journaled beside the main journal.
	xs := make([]algorithms.Experimenter, len(seeds))
	var journals []*journal.Journal
	closeJournals := func(err error) error {
		for _, j := range journals {
			err = finishJournal(ctx, s, j, true, err)
		}
		return o.campaign.finish(cp, err)
	}
	for si, seed := range seeds {
		if si == 0 && seed == o.campaign.runner.seed {
			xs[si] = cp.x
			continue
		}
		r, err := cp.runner.WithSeed(seed)
		if err != nil {
			return closeJournals(err)
		}
		r.Experimenter = cp.progress.wrap(r.Experimenter)
		jf := o.campaign.journal
		if !jf.off {
			jf.path = fmt.Sprintf("%s.seed-%d", jf.path, seed)
		}
		x, j, err := jf.open(s, r)
		if err != nil {
			return closeJournals(err)
		}
		xs[si] = x
		if j != nil {
			journals = append(journals, j)
		}
	}
	grid, err := validateGrid(d, rec, threads, conns, algorithms.ChildrenGridOptions{Children: childSizes, MemoryRule: memoryRule}, measured)
	if err != nil {
		return closeJournals(err)
	}
	// Each row's allocation as --recommended reads it back.
	name := func(a algorithms.Allocation) string { return topology.FormatAllocationIn(d, a) }
	xs, failures := recordFailures(xs)
	// A runner that drives one real deployment runs its trials one by one.
	cmp, err := algorithms.Compare(ctx, xs, d, grid, algorithms.CompareOptions{Workloads: doc.Workloads,
		SLAs: []float64{cp.opts.SLA}, Timing: cp.opts.Timing, Parallel: cp.runner.Workers(o.parallel), Screening: o.screening})
	if err := closeJournals(err); err != nil {
		return err
	}
	doc.GridExperiments = cmp.Experiments
	results := make([]report.ValidateAllocation, len(cmp.Entries))
	for i, e := range cmp.Entries {
		results[i] = report.ValidateAllocation{Allocation: name(e.Allocation), Role: e.Role,
			Roles: append([]string{e.Role}, e.Also...), Goodput: e.Goodput[0],
			MaxGoodput: e.MaxGoodput[0], AtUsers: e.AtUsers[0], Ratio: e.Ratio[0], MaxHalfWidth: e.MaxHalfWidth[0],
			Indistinguishable: e.Indistinguishable[0], Failures: failures.of(e.Allocation, doc.Workloads, len(xs))}
	}
	doc.Best = results[cmp.Best[0]]
	doc.Grid = results
	for _, v := range results {
		for _, role := range v.Roles {
			switch role {
			case algorithms.RoleRecommended:
				doc.Recommended = v
			case algorithms.RoleGrid:
			default:
				c := v
				c.Role = role
				doc.Compared = append(doc.Compared, c)
			}
		}
	}
	if o.plot != "" {
		if err := report.PlotValidation(o.plot, doc); err != nil {
			return err
		}
	}
	set := o.campaign.metricSet(cp)
	set.Experiments(doc.RecommendExperiments + doc.GridExperiments*len(seeds))
	for _, v := range results {
		set.Goodput(v.Allocation, doc.SLA, v.MaxGoodput)
		for _, role := range v.Roles {
			if role != algorithms.RoleGrid {
				set.GoodputRatio(v.Allocation, role, v.Ratio)
			}
		}
	}
	set.GoodputRatio(doc.Best.Allocation, "best", doc.Best.Ratio)
	switch o.campaign.output {
	case "json":
		err = report.WriteJSON(s.Out, doc)
	case "csv":
		err = report.WriteValidateCSV(s.Out, doc)
	default:
		err = report.WriteValidateTable(s.Out, doc)
	}
	if err != nil {
		return err
	}
	return o.campaign.metrics.emit(ctx, set)
}

func parseSeeds(s string, rf runnerFlags) ([]uint64, error) {
	if s == "" {
		return []uint64{rf.seed}, nil
	}
	if rf.name != "sim" {
		return nil, usagef("--seeds: only the sim runner has seeds (runner %q)", rf.name)
	}
	var out []uint64
	texts := strings.Split(s, ",")
	for i, f := range texts {
		texts[i] = strings.TrimSpace(f)
		v, err := strconv.ParseUint(texts[i], 10, 64)
		if err != nil {
			return nil, usagef("--seeds %q: %q is not a seed (a non-negative integer)", s, f)
		}
		out = append(out, v)
	}
	if err := refuseRepeats(fmt.Sprintf("--seeds %q", s), "seed", texts, func(i int) uint64 { return out[i] }); err != nil {
		return nil, err
	}
	return out, nil
}

// validateWorkloads: the user's, or six steps of 500 users from 1,000 below
// the saturation workload.
func validateWorkloads(users string, saturation int) ([]int, error) {
	if users != "" {
		return parseUsers(users)
	}
	if saturation <= 0 {
		return nil, usagef("validate: want --users when --recommended is given (e.g. --users 5000:7500:500)")
	}
	return algorithms.GridWorkloads(saturation), nil
}

func parseSizes(flag, s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var out []int
	texts := strings.Split(s, ",")
	for i, f := range texts {
		texts[i] = strings.TrimSpace(f)
		v, err := strconv.Atoi(texts[i])
		if err != nil || v < 1 || v > topology.MaxPoolSize {
			return nil, usagef("%s %q: %q is not a pool size in 1..%d", flag, s, f, topology.MaxPoolSize)
		}
		out = append(out, v)
	}
	if err := refuseRepeats(fmt.Sprintf("%s %q", flag, s), "pool size", texts, func(i int) int { return out[i] }); err != nil {
		return nil, err
	}
	return out, nil
}

// validateGrid is the comparison's allocations: a children (php-fpm) stack's
// operators' rules and children grid, with the connections per child
// recommend measured, or the Java and Go stacks' grid.
func validateGrid(d algorithms.Deployment, rec algorithms.Allocation, threads, conns []int,
	co algorithms.ChildrenGridOptions, measured []algorithms.TierMeasurement) ([]algorithms.GridEntry, error) {
	if !slices.ContainsFunc(d.Tiers, func(t algorithms.Tier) bool { return t.Children }) {
		return algorithms.Grid(d, rec, threads, conns), nil
	}
	for _, m := range measured {
		if t, ok := d.Tier(m.Tier); ok && t.Children && m.ConnectionsPerChild > 0 {
			co.PerChild = m.ConnectionsPerChild
		}
	}
	return algorithms.ChildrenGrid(d, rec, co)
}

// childrenFlags refuses the flags of the other kind of stack.
func childrenFlags(childrenStack bool, d algorithms.Deployment, o *validateOptions) error {
	if childrenStack {
		for _, f := range []struct{ name, v string }{{"--grid-threads", o.threads}, {"--grid-connections", o.connections}} {
			if f.v != "" {
				return usagef("%s: deployment %q sizes a tier of children (each holds its own connections); give --grid-children", f.name, d.Topology)
			}
		}
		return nil
	}
	if o.children != "" || o.memoryLimit != 0 || o.childRSS != 0 {
		return usagef("--grid-children, --memory-limit and --child-rss: deployment %q has no tier with children (pools: {children: N})", d.Topology)
	}
	return nil
}

// memoryRuleChildren is the memory rule's children: limit / RSS, rounded
// down (0: not asked for).
func memoryRuleChildren(limit, rss float64) (int, error) {
	if limit == 0 && rss == 0 {
		return 0, nil
	}
	if !(limit > 0) || !(rss > 0) || math.IsInf(limit, 0) || math.IsInf(rss, 0) {
		return 0, usagef("--memory-limit %gMiB, --child-rss %gMiB: want both, each a memory size above 0", limit, rss)
	}
	n := math.Floor(limit / rss)
	if n < 1 || n > topology.MaxPoolSize {
		return 0, usagef("--memory-limit %gMiB / --child-rss %gMiB = %g children: want 1 to %d", limit, rss, n, topology.MaxPoolSize)
	}
	return int(n), nil
}
