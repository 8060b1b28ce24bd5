package report

import (
	"fmt"
	"io"
	"text/tabwriter"
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
	// Failures are the failed pages of the campaign's trials.
	Failures
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
	// Version is the softalloc that wrote the document.
	Version string `json:"version"`
}

// WriteCheckTable writes check's verdict as a table.
func WriteCheckTable(w io.Writer, doc CheckJSON) error {
	c := doc.Capacity
	critical := c.Critical
	if critical == "" {
		critical = "none saturated"
	}
	fmt.Fprintf(w, "capacity of %s %s on %s: max goodput %.1f pages/s at %g s, max throughput %.1f pages/s, critical %s at %d users (%d experiments",
		c.Topology, c.Allocation, c.Runner, c.MaxGoodput, c.SLA, c.MaxThroughput, critical, c.SaturationWorkload, c.Experiments)
	if c.Errors > 0 {
		fmt.Fprintf(w, ", %d failed pages, %s of those attempted", c.Errors, Percent(100*c.ErrorShare, 2, false))
	}
	fmt.Fprint(w, ")\n\n")
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
