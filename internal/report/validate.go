package report

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// ValidateAllocation is one allocation's showing in the grid.
type ValidateAllocation struct {
	Allocation string `json:"allocation"`
	// Role: "recommended", "practitioners", "tomcat-defaults", "hikari", or "grid".
	Role string `json:"role"`
	// Roles are every role the allocation fills, Role first: the
	// recommendation may be the practitioners' 400-150-60 as well.
	Roles []string `json:"roles"`
	// MaxGoodput is the highest goodput at the SLA over the workloads (pages/s),
	// the mean over seeds; Goodput is the curve, one value per workload.
	MaxGoodput float64   `json:"maxGoodput"`
	AtUsers    int       `json:"atUsers"`
	Goodput    []float64 `json:"goodput"`
	// Ratio is MaxGoodput over the grid's best.
	Ratio float64 `json:"ratio"`
	// MaxHalfWidth is MaxGoodput's 95% half-width where the trials measured
	// one; Indistinguishable says it cannot be told from the grid's best.
	MaxHalfWidth      float64 `json:"maxGoodputHalfWidth,omitempty"`
	Indistinguishable bool    `json:"indistinguishable"`
	// Failures are the failed pages of its trials, over the workloads and
	// seeds: a pool the database cannot serve fails pages beside its goodput.
	Failures
}

// ValidateJSON is `softalloc validate --output json`.
type ValidateJSON struct {
	Topology    string               `json:"topology"`
	SLA         float64              `json:"slaSeconds"`
	Seeds       []uint64             `json:"seeds"`
	Workloads   []int                `json:"workloads"`
	Recommended ValidateAllocation   `json:"recommended"`
	Best        ValidateAllocation   `json:"best"`
	Compared    []ValidateAllocation `json:"compared"`
	Grid        []ValidateAllocation `json:"grid"`
	// RecommendExperiments is what the recommendation cost (0 when given);
	// GridExperiments what the grid cost, per seed.
	RecommendExperiments int `json:"recommendExperiments"`
	GridExperiments      int `json:"gridExperiments"`
	// Version is the softalloc that wrote the document.
	Version string `json:"version"`
}

// WriteValidateTable writes validate's comparison as a table.
func WriteValidateTable(w io.Writer, doc ValidateJSON) error {
	fmt.Fprintf(w, "topology %s, goodput at %.3g s, %d allocations x %d workloads (%s users)%s\n\n",
		doc.Topology, doc.SLA, len(doc.Grid), len(doc.Workloads), workloadRange(doc.Workloads), seedsText(doc.Seeds))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\tALLOCATION\tMAX GOODPUT (PAGES/S)\tAT USERS\tVS BEST\tFAILED PAGES\tEXPERIMENTS")
	row := func(label string, v ValidateAllocation, exps string) {
		good := fmt.Sprintf("%.1f", v.MaxGoodput)
		if v.MaxHalfWidth > 0 {
			good += fmt.Sprintf(" ± %.1f", v.MaxHalfWidth)
		}
		ratio := fmt.Sprintf("%.3f", v.Ratio)
		if v.Indistinguishable && v.Ratio < 1 {
			ratio += " (within the noise)"
		}
		failed := "0"
		if v.Errors > 0 {
			failed = fmt.Sprintf("%d (%s)", v.Errors, Percent(100*v.ErrorShare, 1, false))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", label, v.Allocation, good, v.AtUsers, ratio, failed, exps)
	}
	recExps := "given"
	if doc.RecommendExperiments > 0 {
		recExps = strconv.Itoa(doc.RecommendExperiments)
	}
	row("grid best", doc.Best, fmt.Sprintf("%d per seed", doc.GridExperiments))
	row("recommended", doc.Recommended, recExps)
	for _, v := range doc.Compared {
		row(v.Role, v, "")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	top := append([]ValidateAllocation(nil), doc.Grid...)
	sort.SliceStable(top, func(i, j int) bool { return top[i].MaxGoodput > top[j].MaxGoodput })
	fmt.Fprintf(w, "\ntop of the grid:")
	for i := 0; i < min(8, len(top)); i++ {
		fmt.Fprintf(w, " %s (%.3f)", top[i].Allocation, top[i].Ratio)
	}
	fmt.Fprintln(w)
	same := 0
	for _, v := range doc.Grid {
		if v.Indistinguishable {
			same++
		}
	}
	if same > 1 {
		fmt.Fprintf(w, "%d allocations cannot be told from the grid's best at 95%% confidence\n", same)
	}
	return nil
}

func workloadRange(ws []int) string {
	if len(ws) == 0 {
		return "none"
	}
	return fmt.Sprintf("%d..%d", ws[0], ws[len(ws)-1])
}

// PlotValidation draws goodput against workload for the compared allocations.
func PlotValidation(path string, doc ValidateJSON) error {
	x := make([]float64, len(doc.Workloads))
	for i, u := range doc.Workloads {
		x[i] = float64(u)
	}
	var curves []Curve
	seen := map[string]bool{}
	add := func(label string, v ValidateAllocation) {
		if seen[v.Allocation] {
			return
		}
		seen[v.Allocation] = true
		curves = append(curves, Curve{Label: label + " " + v.Allocation, X: x, Y: v.Goodput})
	}
	add("recommended", doc.Recommended)
	add("grid best", doc.Best)
	for _, v := range doc.Compared {
		add(v.Role, v)
	}
	title := fmt.Sprintf("%s: goodput at %.3g s%s", doc.Topology, doc.SLA, seedsText(doc.Seeds))
	return SavePlot(path, title, "workload [users]", "goodput [pages/s]", curves)
}

// seedsText names the simulator's seeds after a title: ", seed 1" or
// ", mean of seeds 1, 2"; nothing for a real deployment's trials.
func seedsText(seeds []uint64) string {
	names := make([]string, len(seeds))
	for i, sd := range seeds {
		names[i] = strconv.FormatUint(sd, 10)
	}
	switch len(names) {
	case 0:
		return ""
	case 1:
		return ", seed " + names[0]
	}
	return ", mean of seeds " + strings.Join(names, ", ")
}
