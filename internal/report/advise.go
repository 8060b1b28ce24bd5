package report

import (
	"fmt"
	"io"
	"math"
	"text/tabwriter"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/oneline"
)

// AdviseJSON is `softalloc advise --output json`: recommend's document (no
// experiment run) and the evidence of the windows.
type AdviseJSON struct {
	RecommendJSON
	Advice AdviceEvidenceJSON `json:"advice"`
}

// AdviceEvidenceJSON is what advise read from the windows and the model it used.
type AdviceEvidenceJSON struct {
	Model                string                     `json:"model"`
	ThinkTime            float64                    `json:"thinkTime"`
	ThinkTimeSource      string                     `json:"thinkTimeSource"`
	Windows              int                        `json:"windows"`
	Used                 int                        `json:"used"`
	Dropped              []algorithms.DroppedWindow `json:"dropped"`
	TierGaps             []algorithms.TierGap       `json:"tierGaps"`
	LoadRange            [2]float64                 `json:"loadRange"`
	SaturationThroughput float64                    `json:"saturationThroughput"`
	Fits                 []DemandFitJSON            `json:"fits"`
	SaturatedPools       []algorithms.SaturatedPool `json:"saturatedPools"`
}

// DemandFitJSON is a fit with an infinite saturation throughput (a resource
// that does not grow with load) written as null: JSON has no Inf.
type DemandFitJSON struct {
	algorithms.DemandFit
	SaturationThroughput *float64 `json:"saturationThroughput"`
}

// NewAdviseJSON assembles advise's document; alloc is the allocation's notation.
func NewAdviseJSON(d algorithms.Deployment, a algorithms.Advice, alloc string) AdviseJSON {
	doc := AdviseJSON{RecommendJSON: NewRecommendJSON(d, a.Recommendation, alloc)}
	doc.Evidence.Scan = []ScanPointJSON{}
	ev := AdviceEvidenceJSON{Model: a.Model, ThinkTime: a.ThinkTime, ThinkTimeSource: a.ThinkTimeSource, Windows: a.Windows,
		Used: a.Used, Dropped: a.Dropped, TierGaps: a.TierGaps, LoadRange: a.LoadRange, SaturationThroughput: a.SaturationThroughput,
		Fits: []DemandFitJSON{}, SaturatedPools: a.SaturatedPools}
	if ev.TierGaps == nil {
		ev.TierGaps = []algorithms.TierGap{} // JSON's [] when none: a list to read, not null
	}
	for _, f := range a.Fits {
		fj := DemandFitJSON{DemandFit: f}
		if !math.IsInf(f.SaturationThroughput, 0) {
			v := f.SaturationThroughput
			fj.SaturationThroughput = &v
		}
		ev.Fits = append(ev.Fits, fj)
	}
	doc.Advice = ev
	return doc
}

// WriteAdviseTable is advise's readable output. What came from the windows
// (labels, problems, server and resource names, and the notes quoting them)
// is escaped: a crafted windows file cleared the screen and forged lines.
func WriteAdviseTable(w io.Writer, a AdviseJSON) error {
	c, ev := a.Critical, a.Advice
	esc := oneline.Escape
	a.Topology, c.Tier, c.Resource, c.Server = esc(a.Topology), esc(c.Tier), esc(c.Resource), esc(c.Server)
	users := ""
	if c.SaturationWorkload > 0 {
		users = fmt.Sprintf(" (%d users)", c.SaturationWorkload)
	}
	fmt.Fprintf(w, "topology %s: critical resource %s %s (%s), predicted to reach %.0f%% at %.1f pages/s%s, fully busy at %.1f pages/s\n",
		a.Topology, c.Tier, c.Resource, c.Server, 100*c.Utilization, ev.SaturationThroughput, users, c.MaxThroughput)
	fmt.Fprintf(w, "minJobs %.1f = %.1f req/s x %.4f s in the %s tier (%s model)\n",
		a.MinJobs, a.Evidence.CriticalThroughput, a.Evidence.CriticalResponseTime, c.Tier, ev.Model)
	fmt.Fprintf(w, "windows: %d of %d used, %.1f-%.1f pages/s; no experiment run\n", ev.Used, ev.Windows, ev.LoadRange[0], ev.LoadRange[1])
	if ev.Model == "closed" {
		fmt.Fprintf(w, "think time: %.3g s (%s)\n", ev.ThinkTime, ev.ThinkTimeSource)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tRESOURCE\tDEMAND (MS/PAGE)\tIDLE\tR²\tMAX SEEN\tREACHES THRESHOLD AT (PAGES/S)")
	for _, f := range ev.Fits {
		at := "-"
		if f.SaturationThroughput != nil {
			at = fmt.Sprintf("%.1f", *f.SaturationThroughput)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.3f\t%s\t%.3f\t%s\t%s\n", esc(f.Server), esc(f.Resource), 1000*f.Demand, Percent(100*f.Idle, 1, false),
			f.RSquared, Percent(100*f.MaxUtilization, 1, false), at)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if err := WriteTiersTable(w, a.Tiers); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nrecommended allocation: %s\n", a.Allocation)
	writeRange(w, a.Range)
	writeReplicaPlan(w, a.Replicas)
	var warnings []string
	for _, n := range a.Warnings {
		warnings = append(warnings, esc(n))
	}
	// A week of windows can drop hundreds: the first few say what is wrong,
	// the JSON lists them all.
	const shown = 5
	for i, d := range ev.Dropped {
		if i == shown {
			warnings = append(warnings, fmt.Sprintf("%d more windows left out (--output json lists them)", len(ev.Dropped)-shown))
			break
		}
		warnings = append(warnings, fmt.Sprintf("window %s left out: %s", esc(d.Label), esc(d.Problem)))
	}
	for i, g := range ev.TierGaps {
		if i == shown {
			warnings = append(warnings, fmt.Sprintf("%d more windows left out of a tier's time per page (--output json lists them)", len(ev.TierGaps)-shown))
			break
		}
		warnings = append(warnings, fmt.Sprintf("window %s left out of tier %s's time per page: %s", esc(g.Label), esc(g.Tier), esc(g.Problem)))
	}
	writeWarnings(w, warnings)
	return WriteSnippets(w, a.Snippets)
}
