package cli

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/evaluate"
	"github.com/softalloc/softalloc/internal/report"
	"github.com/softalloc/softalloc/internal/topology"
	"github.com/softalloc/softalloc/internal/version"
)

const perCountHelp = "with a replica range (replicas: 2..8), run the campaign at every count of the range and answer each count from its own trials (the simulator, exec and replay runners; the journal keeps each count's experiments apart)"

// perCountJSON is recommend --per-count --output json.
type perCountJSON struct {
	// Topology is the deployment's, at the range's lowest count.
	Topology string `json:"topology"`
	Tier     string `json:"tier"`
	Min      int    `json:"min"`
	Max      int    `json:"max"`
	Surge    string `json:"surge"`
	// Counts is each count's own campaign.
	Counts []countJSON `json:"counts"`
	// SafeMaxReplicas: the largest count up to which every count from Min
	// fits with its own campaign's pools; past Max, the arithmetic on Max's
	// campaign (null: no limit bounds it).
	SafeMaxReplicas *int `json:"safeMaxReplicas"`
	// Extrapolated is recommend's answer without --per-count: the
	// arithmetic on the lowest count's campaign over the whole range.
	Extrapolated *algorithms.ReplicaPlan `json:"extrapolated"`
	Experiments  int                     `json:"experiments"`
	Version      string                  `json:"version"`
}

// countJSON is one count's campaign.
type countJSON struct {
	Replicas    int                 `json:"replicas"`
	Topology    string              `json:"topology"`
	Critical    report.CriticalJSON `json:"critical"`
	MinJobs     float64             `json:"minJobs"`
	Allocation  string              `json:"allocation"`
	Experiments int                 `json:"experiments"`
	// Plan is the count's pools per replica, totals, peak and what the
	// database sees, from its own sizing.
	Plan algorithms.ReplicaCount `json:"plan"`
	// ExtrapolatedAllocation is the arithmetic's answer at this count
	// (from the lowest count's campaign); Agrees says it is this one.
	ExtrapolatedAllocation string   `json:"extrapolatedAllocation"`
	Agrees                 bool     `json:"agrees"`
	Warnings               []string `json:"warnings"`
}

// checkPerCount refuses --per-count with the flags whose output covers
// one campaign.
func (o *recommendOptions) checkPerCount(formats []string) error {
	if o.perCount && (o.ramp || o.withRange || o.report.path != "" || len(formats) > 0) {
		return usagef("--per-count with --ramp, --range, --report or --format: those cover one campaign; run recommend at the count you want them for")
	}
	return nil
}

// perCountPreflight refuses, before the journal opens, a deployment
// without a range and the live runner, which measures the servers that
// run whatever count the file says.
func perCountPreflight(c campaign) error {
	if evaluate.RangedTier(c.deployment) < 0 {
		return usagef("--per-count: deployment %q has no replica range; give a tier replicas: min..max (e.g. 2..8)", c.deployment.Topology)
	}
	if c.runner.Name == "live" {
		return usagef("--per-count on the live runner: it measures the servers that run, whatever count the file says; scale the deployment and run recommend at each count, or advise")
	}
	return nil
}

// runRecommendPerCount is recommend --per-count: a campaign at every count
// of the deployment's replica range, each answered from its own trials.
func runRecommendPerCount(ctx context.Context, o *recommendOptions, cp campaign) error {
	s, d := o.f.Streams, cp.deployment
	vi := evaluate.RangedTier(d)
	sc := *d.Tiers[vi].Scaling
	counts, err := evaluate.PerCount(ctx, cp.x, d, cp.start, cp.opts, func(c evaluate.CountCampaign) {
		r := c.Recommendation
		cp.progress.note(fmt.Sprintf("%s at %d of %d..%d replicas: %s/%s critical, minJobs %.1f, %s in %d experiments",
			d.Tiers[vi].Name, c.Replicas, sc.Min, sc.Max, r.Critical.Tier, r.Critical.Resource, r.MinJobs.MinJobs,
			topology.FormatAllocationIn(c.Deployment, r.Allocation), r.Experiments))
	})
	err = stepsHint(err)
	if err = o.finish(cp, err); err != nil {
		return err
	}
	doc := newPerCountJSON(d, vi, counts)
	set := o.metricSet(cp)
	set.Recommendation(counts[0].Recommendation)
	set.Experiments(doc.Experiments)
	switch o.output {
	case "json":
		err = report.WriteJSON(s.Out, doc)
	case "csv":
		err = writePerCountCSV(s.Out, doc)
	default:
		err = writePerCountTable(s.Out, doc)
	}
	if err != nil {
		return err
	}
	return o.metrics.emit(ctx, set)
}

func newPerCountJSON(d algorithms.Deployment, vi int, counts []evaluate.CountCampaign) perCountJSON {
	sc := *d.Tiers[vi].Scaling
	doc := perCountJSON{Topology: d.Topology, Tier: d.Tiers[vi].Name, Min: sc.Min, Max: sc.Max, Surge: sc.Surge.String(),
		SafeMaxReplicas: evaluate.MeasuredSafeMax(counts), Extrapolated: evaluate.Extrapolated(d, counts[0].Recommendation),
		Counts: []countJSON{}, Version: version.String()}
	arith := map[int]algorithms.Allocation{}
	if p := doc.Extrapolated; p != nil {
		for _, rc := range p.Counts {
			arith[rc.Replicas] = rc.Allocation
		}
	}
	for _, c := range counts {
		r := c.Recommendation
		cj := countJSON{Replicas: c.Replicas, Topology: c.Deployment.Topology, Critical: report.NewCriticalJSON(r.Critical),
			MinJobs: r.MinJobs.MinJobs, Allocation: topology.FormatAllocationIn(c.Deployment, r.Allocation),
			Experiments: r.Experiments, Plan: c.Row, Warnings: nonNilStrings(c.Warnings)}
		if a, ok := arith[c.Replicas]; ok {
			cj.ExtrapolatedAllocation = topology.FormatAllocationIn(c.Deployment, a)
			cj.Agrees = a.Key() == r.Allocation.Key()
		}
		doc.Counts = append(doc.Counts, cj)
		doc.Experiments += r.Experiments
	}
	return doc
}

func intText(p *int) string {
	if p == nil {
		return "-"
	}
	return strconv.Itoa(*p)
}

func fitsText(p *bool) string {
	switch {
	case p == nil:
		return "-"
	case *p:
		return "yes"
	}
	return "NO"
}

func writePerCountTable(w io.Writer, doc perCountJSON) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: a campaign at each count of %s %d..%d (surge %s), %d experiments in all\n\n",
		doc.Topology, doc.Tier, doc.Min, doc.Max, doc.Surge, doc.Experiments)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "replicas\tcritical\tminJobs\tallocation\tthreads/replica\tconnections/replica\ttotal connections\tpeak with surge\tdatabase sees\tmax_connections\tfits\tfrom %d (arithmetic)\texperiments\n", doc.Min)
	for _, c := range doc.Counts {
		arith := c.ExtrapolatedAllocation
		if c.Agrees {
			arith = "same"
		}
		fmt.Fprintf(tw, "%d\t%s/%s\t%.1f\t%s\t%d\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%d\n", c.Replicas, c.Critical.Tier, c.Critical.Resource,
			c.MinJobs, c.Allocation, c.Plan.ThreadsPerReplica, intText(c.Plan.ConnectionsPerReplica), intText(c.Plan.TotalConnections),
			intText(c.Plan.PeakConnections), c.Plan.DatabaseConnections, c.Plan.MaxConnections, fitsText(c.Plan.Fits), arith, c.Experiments)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	switch {
	case doc.SafeMaxReplicas == nil:
		b.WriteString("\nsafe maxReplicas: no limit bounds it\n")
	default:
		fmt.Fprintf(&b, "\nsafe maxReplicas: %d (each count of the range with its own campaign's pools; past %d, the arithmetic on %d's)\n",
			*doc.SafeMaxReplicas, doc.Max, doc.Max)
	}
	for _, c := range doc.Counts {
		for _, wn := range c.Warnings {
			fmt.Fprintf(&b, "warning: at %d replicas: %s\n", c.Replicas, wn)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writePerCountCSV(w io.Writer, doc perCountJSON) error {
	cw := csv.NewWriter(w)
	rows := [][]string{{"replicas", "topology", "critical_tier", "critical_resource", "min_jobs", "allocation", "threads_per_replica",
		"connections_per_replica", "total_connections", "peak_connections", "database_connections", "max_connections", "fits",
		"extrapolated_allocation", "experiments"}}
	for _, c := range doc.Counts {
		fits := ""
		if c.Plan.Fits != nil {
			fits = strconv.FormatBool(*c.Plan.Fits)
		}
		opt := func(p *int) string {
			if p == nil {
				return ""
			}
			return strconv.Itoa(*p)
		}
		rows = append(rows, []string{strconv.Itoa(c.Replicas), c.Topology, c.Critical.Tier, c.Critical.Resource,
			strconv.FormatFloat(c.MinJobs, 'g', -1, 64), c.Allocation, strconv.Itoa(c.Plan.ThreadsPerReplica),
			opt(c.Plan.ConnectionsPerReplica), opt(c.Plan.TotalConnections), opt(c.Plan.PeakConnections),
			strconv.Itoa(c.Plan.DatabaseConnections), strconv.Itoa(c.Plan.MaxConnections), fits, c.ExtrapolatedAllocation,
			strconv.Itoa(c.Experiments)})
	}
	if err := cw.WriteAll(rows); err != nil {
		return fmt.Errorf("write csv: %w", err)
	}
	return nil
}
