package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/runner"
	"github.com/softalloc/softalloc/internal/runner/live"
)

// doctorOptions are doctor's.
type doctorOptions struct {
	f          *factory
	cmd        *cobra.Command
	deployment deploymentFlags
	probe      int
	probeRate  float64
	output     string
}

// doctorer is a runner that can check its queries before any load (live).
type doctorer interface {
	Doctor(ctx context.Context, d algorithms.Deployment, a algorithms.Allocation, o live.DoctorOptions) (live.DoctorReport, error)
}

// newCmdDoctor is `softalloc doctor`: every query of the live runner's
// section, run now, before a campaign relies on it.
func newCmdDoctor(f *factory, runF func(*doctorOptions) error) *cobra.Command {
	o := &doctorOptions{f: f}
	cmd := &cobra.Command{
		Use:   "doctor -f deployment.yaml",
		Short: "Check every query of a live deployment file against its Prometheus before any load",
		Long: `doctor runs every query of the deployment file's runner section (live runner)
against its Prometheus now: for each tier and server, cpu, throttled,
throughput, responseTime, gcShare, each pool's busy, size and fullShare, and
resources, and the pages queries. It prints each value with its unit and
whether a campaign can rely on it, and names, for each problem, the query as
sent and the fix:

  - a utilisation in other units: a CPU that reads in cores, not a share of
    the tier's cores (divide by {cores});
  - a pool whose busy units exceed its size;
  - a series Prometheus does not have (naming the metric it lacks), or
    labels that match none;
  - a counter that reset in the window (a restarted process);
  - a throughput that counts what the pages do not send: the first tier's
    requests with no load (the exporter's own scrapes, or other clients), or
    a page throughput counting requests rather than pages. doctor reads each
    tier's throughput before any load, then sends a small probe (--probe
    pages of the workload, at --probe-rate pages/s, from the load generator
    to the target) and compares what each tier counted with the requests it
    sent. --probe 0 sends nothing and skips this check;
  - beside a probe, a mean response time more than 10x the slowest page the
    probe saw (milliseconds read as seconds);
  - a Prometheus target that is down (its last scrape's error), and a
    runtime shorter than two of Prometheus's scrape intervals.

It also asks for what recommend's check before any load asks: every tier's
throughput and response time. doctor runs no hook: it reads the deployment
as it is, so run it when nothing else loads it. Readings take {window} as
the section's runtime without a probe, and the probe's span with one.

Exit codes: 0 when everything a campaign needs reads plausibly, 1 when a
campaign would fail or mislead (each problem also one line on stderr), 2 on
usage and configuration errors (a runner section a campaign would refuse).`,
		Example: `  softalloc doctor -f testbed/deployment.yaml
  softalloc doctor -f deployment.yaml --probe 0              # no request to the target
  softalloc doctor -f deployment.yaml --probe 20 --probe-rate 5
  softalloc doctor -f deployment.yaml --output json | jq -r '.problems[]'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(o)
			}
			return runDoctor(o)
		},
	}
	o.cmd = cmd
	fs := cmd.Flags()
	fs.StringVarP(&o.deployment.file, "deployment", "f", "", "deployment file (YAML) whose runner section is the live runner's")
	fs.IntVar(&o.probe, "probe", live.DefaultProbe, "pages of the workload to send before the readings, to compare each tier's throughput with (0: none)")
	fs.Float64Var(&o.probeRate, "probe-rate", live.DefaultProbeRate, "the probe's pages per second")
	fs.StringVarP(&o.output, "output", "o", "table", "output format: table or json")
	return cmd
}

func runDoctor(o *doctorOptions) error {
	s := o.f.Streams
	switch {
	case o.deployment.file == "":
		return usagef("doctor: want -f deployment.yaml, a deployment file whose runner section is the live runner's")
	case o.output != "table" && o.output != "json":
		return usagef("--output %q: want table or json", o.output)
	case o.probe < 0:
		return usagef("--probe %d: want a number of pages >= 0 (0: no probe)", o.probe)
	case !(o.probeRate > 0):
		return usagef("--probe-rate %g: want pages per second > 0", o.probeRate)
	}
	d, a, err := o.deployment.resolve()
	if err != nil {
		return err
	}
	df := o.deployment.loaded
	if df.Runner == nil {
		return usagef("deployment %q: no runner section; doctor checks the live runner's queries (see testbed/deployment.yaml)", o.deployment.file)
	}
	if name, ok := df.Runner["name"]; ok && name != "live" {
		return usagef("deployment %q: runner.name is %v; doctor checks the live runner's queries (name: live)", o.deployment.file, name)
	}
	r, err := o.f.NewRunner(runner.Config{Name: "live", DeploymentFile: df, DeploymentPath: o.deployment.file, Log: s.Err})
	if err != nil {
		return configError(err)
	}
	doc, ok := r.Experimenter.(doctorer)
	if !ok {
		return fmt.Errorf("doctor: runner %q cannot check its queries", r.Name)
	}
	// What a campaign refuses before any load is a configuration error here too.
	if err := r.Check(algorithms.Experiment{Deployment: d, Allocation: a}); err != nil {
		return configError(err)
	}
	rep, err := doc.Doctor(o.cmd.Context(), d, a, live.DoctorOptions{Probe: o.probe, ProbeRate: o.probeRate})
	if err != nil {
		return fmt.Errorf("doctor: %w", err)
	}
	if o.output == "json" {
		if err := writeDoctorJSON(s.Out, rep); err != nil {
			return err
		}
	} else if err := writeDoctorTable(s.Out, rep); err != nil {
		return err
	}
	if rep.OK() {
		return nil
	}
	for _, p := range rep.Problems {
		fmt.Fprintf(s.Err, "softalloc: doctor: %s\n", p)
	}
	return exitError{ExitFailure, fmt.Errorf("doctor: %d problem(s): a campaign on this deployment file would fail or mislead", len(rep.Problems))}
}

// doctorJSON is doctor's --output json: the report and its verdict.
type doctorJSON struct {
	OK bool `json:"ok"`
	live.DoctorReport
}

func writeDoctorJSON(w io.Writer, rep live.DoctorReport) error {
	if rep.Problems == nil {
		rep.Problems = []string{}
	}
	if rep.Warnings == nil {
		rep.Warnings = []string{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doctorJSON{OK: rep.OK(), DoctorReport: rep})
}

func writeDoctorTable(w io.Writer, rep live.DoctorReport) error {
	var b strings.Builder
	fmt.Fprintf(&b, "prometheus %s, readings at %s over {window} = %s\n", rep.Prometheus, rep.At.Format("2006-01-02T15:04:05Z07:00"), rep.Window)
	p := rep.Probe
	if p.Skipped {
		b.WriteString("probe: none (--probe 0)\n")
	} else {
		fmt.Fprintf(&b, "probe: %d pages (%d requests) sent to %s in %.1fs, %d failed\n", p.Pages, p.Requests, p.Target, p.Seconds, p.Failed.Total())
	}
	block := func(title string, rds []live.DoctorReading) {
		fmt.Fprintf(&b, "\n%s\n", title)
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  FIELD\tVALUE\tUNIT\tSTATUS\tQUERY")
		for _, rd := range rds {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", rd.Field, doctorNum(rd.Value), rd.Unit, rd.Status, rd.Query)
		}
		tw.Flush()
		for _, rd := range rds {
			var more []string
			if rd.Idle != nil {
				more = append(more, "before any load "+doctorNum(rd.Idle)+" "+rd.Unit)
			}
			if rd.PerPage != nil {
				more = append(more, doctorNum(rd.PerPage)+" per probe page")
			}
			if len(more) > 0 {
				fmt.Fprintf(&b, "  %s: %s\n", rd.Field, strings.Join(more, ", "))
			}
			if rd.Note != "" {
				fmt.Fprintf(&b, "  %s: %s\n", rd.Field, rd.Note)
			}
		}
	}
	for _, sv := range rep.Servers {
		block(fmt.Sprintf("%s (tier %s)", sv.Server, sv.Tier), sv.Readings)
	}
	if len(rep.Pages) > 0 {
		block("pages", rep.Pages)
	}
	b.WriteString("\n")
	for _, wn := range rep.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", wn)
	}
	for _, pr := range rep.Problems {
		fmt.Fprintf(&b, "problem: %s\n", pr)
	}
	if rep.OK() {
		b.WriteString("ok: every query a campaign needs reads plausibly\n")
	} else {
		fmt.Fprintf(&b, "%d problem(s): a campaign on this deployment file would fail or mislead\n", len(rep.Problems))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func doctorNum(v *float64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'g', 4, 64)
}
