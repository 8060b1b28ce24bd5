package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/softalloc/softalloc/algorithms"
)

// This file holds the outputs of the service-class commands: `softalloc
// degradation` (schemes, or one trial's report with --trial) and `softalloc
// recommend --workload`. The JSON documents are their own types, converted
// from the algorithms' results, so the algorithms can change without
// changing what scripts read.

// DegradationJSON is `softalloc degradation --output json`.
type DegradationJSON struct {
	Workload string       `json:"workload"`
	Swept    string       `json:"swept"`
	Schemes  []SchemeJSON `json:"schemes"`
	// Version is the softalloc that wrote the document.
	Version string `json:"version"`
}

// SchemeJSON is one setup's degradation scheme.
type SchemeJSON struct {
	Setup  string            `json:"setup"`
	Points []SchemePointJSON `json:"points"`
}

// SchemePointJSON is one level of the swept class.
type SchemePointJSON struct {
	Level   int               `json:"level"`
	CPU     float64           `json:"cpu"`
	Classes []SchemeClassJSON `json:"classes"`
}

// SchemeClassJSON is one class at one level: throughput beside its solo
// value and the drop from it (1 - throughput/solo).
type SchemeClassJSON struct {
	Name         string  `json:"name"`
	Users        int     `json:"users"`
	Throughput   float64 `json:"throughput"`
	Solo         float64 `json:"solo"`
	Drop         float64 `json:"drop"`
	Goodput      float64 `json:"goodput"`
	Adequacy     float64 `json:"adequacy"`
	ResponseTime float64 `json:"responseTime"`
}

// NewDegradationJSON assembles degradation's document.
func NewDegradationJSON(workload, swept string, schemes []algorithms.DegradationScheme) DegradationJSON {
	return DegradationJSON{Workload: workload, Swept: swept, Schemes: newSchemesJSON(schemes)}
}

func newSchemesJSON(schemes []algorithms.DegradationScheme) []SchemeJSON {
	return convert(schemes, func(s algorithms.DegradationScheme) SchemeJSON {
		return SchemeJSON{Setup: s.Setup, Points: convert(s.Points, func(p algorithms.DegradationPoint) SchemePointJSON {
			return SchemePointJSON{Level: p.Level, CPU: p.CPU, Classes: convert(p.Classes, func(c algorithms.DegradationClass) SchemeClassJSON {
				return SchemeClassJSON{Name: c.Name, Users: c.Users, Throughput: c.Throughput, Solo: c.Solo, Drop: c.Drop,
					Goodput: c.Goodput, Adequacy: c.Adequacy, ResponseTime: c.ResponseTime}
			})}
		})}
	})
}

// convert maps a slice, keeping nil apart from empty (null and [] in JSON).
func convert[T, U any](in []T, f func(T) U) []U {
	if in == nil {
		return nil
	}
	out := make([]U, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}

// WriteDegradationTable is degradation's readable output: a table per
// setup, a row per level of the swept class.
func WriteDegradationTable(w io.Writer, d DegradationJSON) error {
	return writeSchemes(w, d.Swept, d.Schemes)
}

func writeSchemes(w io.Writer, swept string, schemes []SchemeJSON) error {
	for i, sc := range schemes {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s\n", sc.Setup)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		h := []string{strings.ToUpper(swept)}
		for _, n := range schemeClasses(schemes) {
			u := strings.ToUpper(n)
			h = append(h, u+"/S", u+" SOLO/S", u+" DROP", u+" RT")
		}
		h = append(h, "CPU")
		fmt.Fprintln(tw, strings.Join(h, "\t")+"\t")
		for _, p := range sc.Points {
			rec := []string{strconv.Itoa(p.Level)}
			for _, c := range p.Classes {
				drop, rt := "-", "-"
				if c.Solo > 0 {
					drop = Percent(-100*c.Drop, 1, false)
				}
				if c.Throughput > 0 {
					rt = fmt.Sprintf("%.3f", c.ResponseTime)
				}
				rec = append(rec, fmt.Sprintf("%.1f", c.Throughput), fmt.Sprintf("%.1f", c.Solo), drop, rt)
			}
			rec = append(rec, fmt.Sprintf("%.2f", p.CPU))
			fmt.Fprintln(tw, strings.Join(rec, "\t")+"\t")
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintln(w, "\nthroughput in requests/s; solo is the class alone with the same users; drop is the change from solo; rt is the mean response time in s.")
	return err
}

// schemeClasses are the classes taking part, in the schemes' order (every
// point lists the same ones).
func schemeClasses(schemes []SchemeJSON) []string {
	var names []string
	if len(schemes) > 0 && len(schemes[0].Points) > 0 {
		for _, c := range schemes[0].Points[0].Classes {
			names = append(names, c.Name)
		}
	}
	return names
}

// PlotDegradation draws each held class's throughput as a percentage of its
// solo value against the swept class's users, one curve per setup and held
// class (seed 000's Figure 2). The swept class is left out: beside four
// policies its curves would double the lines and repeat the palette.
func PlotDegradation(path string, d DegradationJSON) error {
	var curves []Curve
	for _, sc := range d.Schemes {
		for _, n := range schemeClasses(d.Schemes) {
			if n == d.Swept {
				continue
			}
			c := Curve{Label: sc.Setup + ": " + n}
			for _, p := range sc.Points {
				for _, k := range p.Classes {
					if k.Name == n && k.Solo > 0 {
						c.X = append(c.X, float64(p.Level))
						c.Y = append(c.Y, 100*k.Throughput/k.Solo)
					}
				}
			}
			if len(c.X) > 0 {
				curves = append(curves, c)
			}
		}
	}
	return SavePlot(path, "Degradation scheme", d.Swept+" users", "throughput, % of solo", curves)
}

// ClassRecommendJSON is `softalloc recommend --workload FILE --output json`.
type ClassRecommendJSON struct {
	Workload   string            `json:"workload"`
	Critical   ClassCriticalJSON `json:"critical"`
	SharedPool int               `json:"sharedPool"`
	Classes    []ClassPoolJSON   `json:"classes"`
	Swept      string            `json:"swept"`
	Schemes    []SchemeJSON      `json:"schemes"`
	Warnings   []string          `json:"warnings"`
	// Version is the softalloc that wrote the document.
	Version string `json:"version"`
}

// ClassCriticalJSON is the saturated hardware resource ("cpu" or "none").
type ClassCriticalJSON struct {
	Resource    string  `json:"resource"`
	Cores       int     `json:"cores"`
	Utilization float64 `json:"utilization"`
}

// ClassPoolJSON is one class's recommended pool and its outcomes in the
// shared pool and with the recommended pools.
type ClassPoolJSON struct {
	Name        string           `json:"name"`
	Objective   string           `json:"objective"`
	Users       int              `json:"users"`
	MinJobs     int              `json:"minJobs"`
	Pool        int              `json:"pool"`
	Shared      ClassOutcomeJSON `json:"shared"`
	Recommended ClassOutcomeJSON `json:"recommended"`
}

// ClassOutcomeJSON is a class under one configuration at the workload's load.
type ClassOutcomeJSON struct {
	Throughput   float64 `json:"throughput"`
	Adequacy     float64 `json:"adequacy"`
	ResponseTime float64 `json:"responseTime"`
	P90          float64 `json:"p90"`
	Met          bool    `json:"met"`
}

// NewClassRecommendJSON assembles recommend --workload' document.
func NewClassRecommendJSON(r algorithms.ClassPoolRecommendation) ClassRecommendJSON {
	return ClassRecommendJSON{
		Workload: r.Workload,
		Critical: ClassCriticalJSON{Resource: r.Critical.Resource, Cores: r.Critical.Cores,
			Utilization: r.Critical.Utilization},
		SharedPool: r.SharedPool,
		Classes: convert(r.Classes, func(c algorithms.ClassPool) ClassPoolJSON {
			return ClassPoolJSON{Name: c.Name, Objective: c.Objective, Users: c.Users, MinJobs: c.MinJobs, Pool: c.Pool,
				Shared: newClassOutcomeJSON(c.Shared), Recommended: newClassOutcomeJSON(c.Recommended)}
		}),
		Swept:    r.Swept,
		Schemes:  newSchemesJSON(r.Schemes),
		Warnings: nonNil(r.Warnings),
	}
}

// WriteClassRecommendTable is recommend --workload' readable output.
func WriteClassRecommendTable(w io.Writer, rec ClassRecommendJSON) error {
	fmt.Fprintf(w, "workload %s: critical resource %s (%d cores, %.0f%% busy at the load)\n\n",
		rec.Workload, rec.Critical.Resource, rec.Critical.Cores, 100*rec.Critical.Utilization)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CLASS\tOBJECTIVE\tUSERS\tMINJOBS\tPOOL\tSHARED POOL\tRECOMMENDED\t")
	for _, c := range rec.Classes {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\t\n", c.Name, c.Objective, c.Users, c.MinJobs, c.Pool,
			formatOutcome(c.Shared), formatOutcome(c.Recommended))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nshared pool: one pool of %d for every class. outcomes: throughput/s, adequacy, mean response time; * marks a missed objective.\n", rec.SharedPool)
	if len(rec.Schemes) > 0 {
		fmt.Fprintf(w, "\ndegradation scheme as %s grows:\n\n", rec.Swept)
		if err := writeSchemes(w, rec.Swept, rec.Schemes); err != nil {
			return err
		}
	}
	for _, m := range rec.Warnings {
		fmt.Fprintf(w, "warning: %s\n", m)
	}
	return nil
}

func newClassOutcomeJSON(o algorithms.ClassOutcome) ClassOutcomeJSON {
	return ClassOutcomeJSON{Throughput: o.Throughput, Adequacy: o.Adequacy, ResponseTime: o.ResponseTime, P90: o.P90, Met: o.Met}
}

func formatOutcome(o ClassOutcomeJSON) string {
	mark := ""
	if !o.Met {
		mark = " *"
	}
	return fmt.Sprintf("%.1f/s %.0f%% %.3fs%s", o.Throughput, 100*o.Adequacy, o.ResponseTime, mark)
}

// ClassTrialJSON is `softalloc degradation --trial --output json`: one trial
// of a multi-class workload as it is, over the measured window.
type ClassTrialJSON struct {
	Name string `json:"name"`
	// Seconds is the measured window.
	Seconds float64 `json:"seconds"`
	// HitsPerSecond are responses, ErrorsPerSecond refused or failed
	// requests, both over all classes.
	HitsPerSecond   float64 `json:"hitsPerSecond"`
	ErrorsPerSecond float64 `json:"errorsPerSecond"`
	// CPU is the mean utilisation of the cores.
	CPU float64 `json:"cpu"`
	// GCShare is the collector's mean share of the CPU and HeapPeak the
	// most bytes live (with a modelled heap only).
	GCShare  float64          `json:"gcShare,omitempty"`
	HeapPeak float64          `json:"heapPeak,omitempty"`
	Classes  []TrialClassJSON `json:"classes"`
	// Series bins the whole trial by the workload's interval (none without).
	Series []TrialBinJSON `json:"series,omitempty"`
	// Version is the softalloc that wrote the document.
	Version string `json:"version"`
}

// TrialClassJSON is one class over the measured window.
type TrialClassJSON struct {
	Name string `json:"name"`
	// Throughput is responses per second; Goodput those within the SLA.
	Throughput      float64 `json:"throughput"`
	Goodput         float64 `json:"goodput"`
	ErrorsPerSecond float64 `json:"errorsPerSecond"`
	// Adequacy is the share of requests answered within Limit (seconds).
	Adequacy    float64 `json:"adequacy"`
	Limit       float64 `json:"limit"`
	Sent        int64   `json:"sent"`
	Completed   int64   `json:"completed"`
	Refused     int64   `json:"refused"`
	OutOfMemory int64   `json:"outOfMemory,omitempty"`
	// ResponseTime is the mean response time (client side), ServerTime the
	// mean time holding a thread, in seconds.
	ResponseTime  float64              `json:"responseTime"`
	ServerTime    float64              `json:"serverTime"`
	P50           float64              `json:"p50"`
	P90           float64              `json:"p90"`
	P99           float64              `json:"p99"`
	ResponseTimes algorithms.Histogram `json:"responseTimes"`
	Approaches    []TrialApproachJSON  `json:"approaches"`
	// Switches counts the approach selector's deactivations and reactivations.
	Switches int64 `json:"switches,omitempty"`
}

// TrialApproachJSON is the responses one approach of a degradable service
// served, and how many of them within the limit.
type TrialApproachJSON struct {
	Name     string  `json:"name"`
	Served   int64   `json:"served"`
	Share    float64 `json:"share"`
	Adequate int64   `json:"adequate"`
}

// TrialBinJSON is one interval of the time series, all classes together.
type TrialBinJSON struct {
	Start           float64 `json:"start"`
	Users           int     `json:"users"`
	HitsPerSecond   float64 `json:"hitsPerSecond"`
	ErrorsPerSecond float64 `json:"errorsPerSecond"`
	// Duration is the mean response time in the bin, MaxDuration the longest.
	Duration    float64 `json:"duration"`
	MaxDuration float64 `json:"maxDuration"`
}

// WriteClassTrialTable is degradation --trial's readable output.
func WriteClassTrialTable(w io.Writer, r ClassTrialJSON) error {
	fmt.Fprintf(w, "workload %s: %s measured, %.2f hits/s, %.2f errors/s, CPU %.0f%%\n\n",
		r.Name, time.Duration(r.Seconds*float64(time.Second)), r.HitsPerSecond, r.ErrorsPerSecond, 100*r.CPU)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "CLASS\tTHROUGHPUT/S\tGOODPUT/S\tERRORS/S\tADEQUACY\tLIMIT\tMEAN RT\tP50\tP90\tP99\tSERVER\t")
	for _, c := range r.Classes {
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\t%.1f%%\t%gs\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t\n", c.Name, c.Throughput, c.Goodput,
			c.ErrorsPerSecond, 100*c.Adequacy, c.Limit, c.ResponseTime, c.P50, c.P90, c.P99, c.ServerTime)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nthroughput and goodput (within the SLA) in responses/s; adequacy is the share of requests answered within the limit; times in s; server is the time holding a thread.")
	for _, c := range r.Classes {
		if len(c.Approaches) < 2 {
			continue
		}
		fmt.Fprintf(w, "\n%s by approach (%d selector switches):", c.Name, c.Switches)
		for _, a := range c.Approaches {
			fmt.Fprintf(w, " %s %.0f%% (%d of %d adequate);", a.Name, 100*a.Share, a.Adequate, a.Served)
		}
		fmt.Fprintln(w)
	}
	if len(r.Series) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "START\tUSERS\tHITS/S\tERRORS/S\tDURATION\tMAX\t")
	for _, b := range r.Series {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%.2f\t%.1f\t\n", time.Duration(b.Start*float64(time.Second)), b.Users,
			b.HitsPerSecond, b.ErrorsPerSecond, b.Duration, b.MaxDuration)
	}
	return tw.Flush()
}
