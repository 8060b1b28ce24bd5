// Package report writes softalloc's results: readable tables and the stable
// JSON documents scripts rely on (documented in the README).
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/topology"
)

// WriteJSON writes v as indented JSON and a newline.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write json: %w", err)
	}
	return nil
}

// SizeJSON is `softalloc size --output json`.
type SizeJSON struct {
	Topology string                          `json:"topology"`
	Critical string                          `json:"critical"`
	MinJobs  float64                         `json:"minJobs"`
	Tiers    []algorithms.TierRecommendation `json:"tiers"`
	// Version is the softalloc that wrote the document.
	Version string `json:"version"`
}

// CriticalJSON is the critical resource as find-critical and recommend print it.
type CriticalJSON struct {
	Tier               string  `json:"tier"`
	Server             string  `json:"server"`
	Resource           string  `json:"resource"`
	Utilization        float64 `json:"utilization"`
	SaturationWorkload int     `json:"saturationWorkload"`
	MaxThroughput      float64 `json:"maxThroughput"`
}

// FindCriticalJSON is `softalloc find-critical --output json`.
type FindCriticalJSON struct {
	Topology    string       `json:"topology"`
	Critical    CriticalJSON `json:"critical"`
	Reserve     string       `json:"reserve"`
	Experiments int          `json:"experiments"`
	// Failures are the failed pages of the experiments.
	Failures
	Warnings []string `json:"warnings"`
	// Version is the softalloc that wrote the document.
	Version string `json:"version"`
}

// EvidenceJSON is what the recommendation was computed from.
type EvidenceJSON struct {
	WLmin         int     `json:"wlMin"`
	Reading       string  `json:"reading"`
	Knee          bool    `json:"knee"`
	KneeThreshold float64 `json:"kneeThreshold"`
	// CriticalThroughput (requests/s) and CriticalResponseTime (s) of the
	// critical tier at WLmin: minJobs = their product.
	CriticalThroughput   float64            `json:"criticalThroughput"`
	CriticalResponseTime float64            `json:"criticalResponseTime"`
	Tiers                []TierEvidenceJSON `json:"tiers"`
	Scan                 []ScanPointJSON    `json:"scan"`
}

// TierEvidenceJSON is one tier's measurement at WLmin with Formula 3's ratios.
type TierEvidenceJSON struct {
	Name         string  `json:"name"`
	Throughput   float64 `json:"throughput"`
	ResponseTime float64 `json:"responseTime"`
	Jobs         float64 `json:"jobs"`
	ReqRatio     float64 `json:"reqRatio,omitempty"`
	RTTRatio     float64 `json:"rttRatio,omitempty"`
	Position     string  `json:"position"`
}

// RecommendJSON is `softalloc recommend --output json`.
type RecommendJSON struct {
	Topology    string       `json:"topology"`
	Critical    CriticalJSON `json:"critical"`
	MinJobs     float64      `json:"minJobs"`
	Experiments int          `json:"experiments"`
	// Failures are the failed pages of the experiments; absent where none
	// ran (advise reads Prometheus windows, which count no failed pages).
	*Failures
	Allocation string                          `json:"allocation"`
	Tiers      []algorithms.TierRecommendation `json:"tiers"`
	Evidence   EvidenceJSON                    `json:"evidence"`
	// Range is present with recommend --range, and from advise.
	Range *algorithms.PoolRange `json:"range,omitempty"`
	// Replicas is the answer at every count of a replica range, with the
	// database's limit and a pooler, when the deployment gives them.
	Replicas *algorithms.ReplicaPlan `json:"replicas,omitempty"`
	Warnings []string                `json:"warnings"`
	// Snippets are present with --format.
	Snippets []Snippet `json:"snippets,omitempty"`
	// Version is the softalloc that wrote the document.
	Version string `json:"version"`
}

// NewCriticalJSON converts the algorithm's result.
func NewCriticalJSON(c algorithms.Critical) CriticalJSON {
	return CriticalJSON{Tier: c.Tier, Server: c.Server, Resource: c.Resource, Utilization: c.Utilization,
		SaturationWorkload: c.SaturationWorkload, MaxThroughput: c.MaxThroughput}
}

// NewRecommendJSON assembles recommend's document; alloc is the allocation's notation.
func NewRecommendJSON(d algorithms.Deployment, r algorithms.Recommendation, alloc string) RecommendJSON {
	ev := EvidenceJSON{WLmin: r.MinJobs.WLmin, Reading: r.MinJobs.Reading, Knee: r.MinJobs.Knee,
		KneeThreshold: r.MinJobs.KneeThreshold, Scan: scanPoints(r), Tiers: []TierEvidenceJSON{}}
	meas := map[string]algorithms.TierMeasurement{}
	for _, m := range r.MinJobs.Measurements {
		meas[m.Tier] = m
	}
	if m, ok := meas[r.Critical.Tier]; ok {
		ev.CriticalThroughput, ev.CriticalResponseTime = m.Throughput, m.ResponseTime
	}
	for _, ts := range r.Sizing.Tiers {
		m := meas[ts.Name]
		ev.Tiers = append(ev.Tiers, TierEvidenceJSON{Name: ts.Name, Throughput: m.Throughput, ResponseTime: m.ResponseTime,
			Jobs: ts.Jobs, ReqRatio: ts.ReqRatio, RTTRatio: ts.RTTRatio, Position: ts.Position})
	}
	// As a user gives it back to --alloc: the notation on its chains, else
	// the keyed form with the pools named as the deployment names them (the
	// key would call a children tier's children threads).
	if r.Allocation != nil {
		alloc = topology.FormatAllocationIn(d, r.Allocation)
	}
	warnings := append(append([]string{}, r.Critical.Warnings...), r.MinJobs.Warnings...)
	doc := RecommendJSON{Topology: d.Topology, Critical: NewCriticalJSON(r.Critical), MinJobs: r.MinJobs.MinJobs,
		Experiments: r.Experiments, Allocation: alloc, Tiers: r.Tiers, Evidence: ev, Range: r.Range, Replicas: r.Replicas, Warnings: nonNil(warnings)}
	if r.Experiments > 0 {
		f := TrialFailures(distinctTrials(r.Critical.Trials, r.MinJobs.Trials))
		doc.Failures = &f
	}
	return doc
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func intOrDash(p *int) string {
	if p == nil {
		return "-"
	}
	return strconv.Itoa(*p)
}

// WriteTiersTable writes the per-tier pool sizes, with the formula's minimum
// beside any pool recommend kept larger.
func WriteTiersTable(w io.Writer, tiers []algorithms.TierRecommendation) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIER\tREPLICAS\tTHREADS/SERVER\tCONNECTIONS/SERVER\tTOTAL THREADS\tTOTAL CONNECTIONS\tFORMULA MINIMUM (PER SERVER)")
	for _, t := range tiers {
		minimum := ""
		if t.Minimum != nil {
			var parts []string
			if t.Minimum.ThreadsPerServer != t.ThreadsPerServer {
				parts = append(parts, fmt.Sprintf("threads %d", t.Minimum.ThreadsPerServer))
			}
			if m := t.Minimum.ConnectionsPerServer; m != nil && t.ConnectionsPerServer != nil && *m != *t.ConnectionsPerServer {
				parts = append(parts, fmt.Sprintf("connections %d", *m))
			}
			minimum = strings.Join(parts, ", ")
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%d\t%s\t%s\n", t.Name, t.Replicas, t.ThreadsPerServer,
			intOrDash(t.ConnectionsPerServer), t.TotalThreads, intOrDash(t.TotalConnections), minimum)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	writeTierNotes(w, tiers)
	return nil
}

// writeTierNotes says which threads are children, and how a database's
// connection limit follows from them.
func writeTierNotes(w io.Writer, tiers []algorithms.TierRecommendation) {
	for _, t := range tiers {
		if t.Workers != "" {
			fmt.Fprintf(w, "%s: its threads are %s, each opening its own connections to the next tier\n", t.Name, t.Workers)
		}
		if t.Permits {
			fmt.Fprintf(w, "%s: its threads are the permits of a concurrency limit over virtual threads: set the limit "+
				"(--format tomcat), not maxThreads, which bounds nothing there\n", t.Name)
		}
		if t.MaxConnections != nil {
			fmt.Fprintf(w, "%s: max_connections %s\n", t.Name, t.MaxConnections)
		}
	}
}

// WriteSizeTable is `softalloc size`'s readable output.
func WriteSizeTable(w io.Writer, d algorithms.Deployment, sz algorithms.Sizing, tiers []algorithms.TierRecommendation) error {
	fmt.Fprintf(w, "topology %s, critical tier %s, minJobs %.1f\n\n", d.Topology, sz.Critical, sz.MinJobs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIER\tPOSITION\tJOBS (L)\tREQRATIO\tRTTRATIO\tTOTAL THREADS\tTHREADS/SERVER\tCONNECTIONS/SERVER")
	for i, ts := range sz.Tiers {
		ratio := func(v float64) string {
			if v == 0 {
				return "-"
			}
			return strconv.FormatFloat(v, 'f', 3, 64)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.1f\t%s\t%s\t%d\t%d\t%s\n", ts.Name, ts.Position, ts.Jobs, ratio(ts.ReqRatio),
			ratio(ts.RTTRatio), tiers[i].TotalThreads, tiers[i].ThreadsPerServer, intOrDash(tiers[i].ConnectionsPerServer))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	writeTierNotes(w, tiers)
	return nil
}

// WriteCriticalTable is find-critical's readable output.
func WriteCriticalTable(w io.Writer, topology string, c algorithms.Critical, reserve string) error {
	fmt.Fprintf(w, "topology:            %s\n", topology)
	fmt.Fprintf(w, "critical resource:   %s %s (%s at %.1f%%)\n", c.Tier, c.Resource, c.Server, 100*c.Utilization)
	fmt.Fprintf(w, "saturation workload: %d users\n", c.SaturationWorkload)
	fmt.Fprintf(w, "max throughput:      %.1f pages/s\n", c.MaxThroughput)
	fmt.Fprintf(w, "reserved allocation: %s\n", reserve)
	fmt.Fprintf(w, "experiments:         %d\n", c.Experiments)
	writeWarnings(w, c.Warnings)
	return nil
}

// WriteRecommendTable is recommend's readable output.
func WriteRecommendTable(w io.Writer, r RecommendJSON) error {
	c := r.Critical
	fmt.Fprintf(w, "topology %s: critical resource %s %s (%s at %.1f%%), saturated at %d users, max %.1f pages/s\n",
		r.Topology, c.Tier, c.Resource, c.Server, 100*c.Utilization, c.SaturationWorkload, c.MaxThroughput)
	ev := r.Evidence
	how := fmt.Sprintf("knee of SLO satisfaction at %.3g s", ev.KneeThreshold)
	switch ev.Reading {
	case string(algorithms.ReadAtSaturation):
		how = "the smallest workload found with the critical resource saturated"
	case "throughput-peak":
		how = "where throughput stopped growing; the notes say why"
	}
	fmt.Fprintf(w, "minJobs %.1f = %.1f req/s x %.4f s in the %s tier at %d users (%s)\n",
		r.MinJobs, ev.CriticalThroughput, ev.CriticalResponseTime, c.Tier, ev.WLmin, how)
	fmt.Fprintf(w, "experiments: %d\n\n", r.Experiments)
	if err := WriteTiersTable(w, r.Tiers); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nrecommended allocation: %s\n", r.Allocation)
	writeRange(w, r.Range)
	writeReplicaPlan(w, r.Replicas)
	writeWarnings(w, r.Warnings)
	return WriteSnippets(w, r.Snippets)
}

// writeRange says how flat the optimum is: the bounding pool's sizes within
// 1% of the best goodput, and what sizes below them cost.
func writeRange(w io.Writer, r *algorithms.PoolRange) {
	if r == nil {
		return
	}
	how := fmt.Sprintf("%d trials at %d users", len(r.Points), r.Users)
	if r.Source == "model" {
		how = "predicted by the model: exponential service times make its low end err high, and it sees no cost in idle threads"
	}
	var span string
	switch {
	case r.Low == 0:
		span = "no size tried comes within 1% of the hardware's best"
	case r.High == 0:
		span = fmt.Sprintf("%d or more per server keeps goodput within 1%% of the best", r.Low)
	default:
		span = fmt.Sprintf("%d to %d per server keeps goodput within 1%% of the best", r.Low, r.High)
	}
	fmt.Fprintf(w, "range of %s %s (%s): %s", r.Tier, r.Pool, how, span)
	var below []string
	for _, p := range r.Points {
		if r.Low > 0 && p.Size < r.Low {
			below = append(below, fmt.Sprintf("%d %s", p.Size, Percent(100*(p.Share-1), 1, true)))
		}
	}
	if len(below) > 0 {
		fmt.Fprintf(w, "; below it: %s", strings.Join(below, ", "))
	}
	if r.High > 0 {
		var above []string
		for _, p := range r.Points {
			if p.Size > r.High {
				above = append(above, fmt.Sprintf("%d %s", p.Size, Percent(100*(p.Share-1), 1, true)))
			}
		}
		fmt.Fprintf(w, "; above it: %s", strings.Join(above, ", "))
	}
	fmt.Fprintln(w)
}

func writeWarnings(w io.Writer, warnings []string) {
	if len(warnings) == 0 {
		return
	}
	fmt.Fprintln(w, "\nnotes:")
	for _, s := range warnings {
		fmt.Fprintf(w, "  - %s\n", strings.TrimSpace(s))
	}
}

// Percent formats v (already in percent) to the given decimals with no
// negative zero: a change too small to show is no change, "0%" or "0.0%".
// signed puts "+" before the others.
func Percent(v float64, decimals int, signed bool) string {
	f := "%." + strconv.Itoa(decimals) + "f"
	if signed {
		f = "%+." + strconv.Itoa(decimals) + "f"
	}
	out := fmt.Sprintf(f, v)
	if strings.Trim(out, "+-0.") == "" {
		out = strings.TrimLeft(out, "+-")
	}
	return out + "%"
}
