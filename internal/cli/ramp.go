package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/report"
	"github.com/softalloc/softalloc/internal/topology"
	"github.com/softalloc/softalloc/internal/version"
)

// rampHelp is --ramp's help, one for find-critical and recommend.
const rampHelp = "run the campaign as one continuous ramp of load (windows measured to --precision, no reset between levels) instead of a staircase of separate trials; the runner must support it: the simulator, the live runner, or an exec program of protocol 2 (--runner-protocol 2)"

// ramper is the campaign's runner as a Ramper, journaled like its
// experiments; a runner without the capability is refused before any trial.
func (o *campaignOptions) ramper(cp campaign) (algorithms.Ramper, error) {
	rp, ok := cp.runner.Experimenter.(algorithms.Ramper)
	if !ok {
		return nil, usagef("--ramp: the %s runner cannot run a ramp; leave out --ramp to run the staircase", cp.runner.Name)
	}
	// A runner that can ramp only when configured so (an exec program of
	// protocol 2) says why not before any trial.
	if c, ok := rp.(interface{ CanRamp() error }); ok {
		if err := c.CanRamp(); err != nil {
			return nil, usagef("--ramp: %v; or leave out --ramp to run the staircase", err)
		}
	}
	if !cp.opts.Timing.Adaptive() {
		return nil, usagef("--ramp with --fixed: a ramp measures each window to a precision; give --precision or leave out --fixed")
	}
	if cp.journal != nil {
		rp = cp.journal.WrapRamper(rp)
	}
	return rp, nil
}

// rampJSON is the ramp's part of the JSON output: every window, the ones
// the answer rests on, and what the ramp and its confirmations took.
type rampJSON struct {
	algorithms.RampCampaign
	Windows []rampWindowJSON `json:"windows"`
}

type rampWindowJSON struct {
	algorithms.RampWindow
	Throughput float64  `json:"throughput"`
	Saturated  []string `json:"saturated"`
}

func newRampJSON(camp algorithms.RampCampaign, trials []algorithms.Trial) rampJSON {
	out := rampJSON{RampCampaign: camp, Windows: []rampWindowJSON{}}
	for i, w := range camp.Windows {
		j := rampWindowJSON{RampWindow: w, Throughput: w.Observation.Throughput, Saturated: []string{}}
		if i < len(trials) && trials[i].Saturated != nil {
			j.Saturated = trials[i].Saturated
		}
		out.Windows = append(out.Windows, j)
	}
	return out
}

// writeRampTable says which windows the answer rests on, and where the
// ramp's rise per level came from.
func writeRampTable(w io.Writer, camp algorithms.RampCampaign, st algorithms.Steps) {
	fmt.Fprintf(w, "ramp:                %d windows in %d ramps, %.0f s\n", len(camp.Windows), camp.Ramps, camp.Seconds)
	fmt.Fprintf(w, "steps:               rises by %d users a level (small step; step %d, scan span %d): %s\n", st.SmallStep, st.Step, st.ScanSpan, st.From)
	for _, i := range camp.Answer {
		win := camp.Windows[i]
		fmt.Fprintf(w, "  rests on window %d: %d users on %s, %.1f pages/s, %.0f-%.0f s\n",
			i, win.Users, win.Allocation, win.Observation.Throughput, win.Start, win.End)
	}
	if camp.RecommendedGoodput != nil && camp.ReserveGoodput != nil {
		fmt.Fprintf(w, "confirmed:           goodput %s pages/s on the recommendation, %s on the reserve's window\n",
			*camp.RecommendedGoodput, *camp.ReserveGoodput)
	}
}

func runFindCriticalRamp(ctx context.Context, o *findCriticalOptions, cp campaign) error {
	s, d := o.f.Streams, cp.deployment
	rp, err := o.ramper(cp)
	if err != nil {
		return o.finish(cp, err)
	}
	c, camp, err := algorithms.FindCriticalRamp(ctx, rp, d, cp.start, cp.opts)
	err = stepsHint(err)
	if err = o.finish(cp, err); err != nil {
		return err
	}
	set := o.metricSet(cp)
	set.Critical(c)
	set.Experiments(c.Experiments)
	switch o.output {
	case "json":
		err = report.WriteJSON(s.Out, struct {
			report.FindCriticalJSON
			Steps algorithms.Steps `json:"steps"`
			Ramp  rampJSON         `json:"ramp"`
		}{FindCriticalJSON: report.FindCriticalJSON{Topology: d.Topology, Critical: report.NewCriticalJSON(c),
			Reserve: topology.FormatAllocationIn(d, c.Reserve), Experiments: c.Experiments, Failures: report.TrialFailures(c.Trials),
			Warnings: nonNilStrings(c.Warnings), Version: version.String()}, Steps: o.stepsUsed(cp, c.Steps), Ramp: newRampJSON(camp, c.Trials)})
	case "csv":
		err = report.WriteCriticalCSV(s.Out, d.Topology, c, topology.FormatAllocationIn(d, c.Reserve))
	default:
		if err = report.WriteCriticalTable(s.Out, d.Topology, c, topology.FormatAllocationIn(d, c.Reserve)); err == nil {
			writeRampTable(s.Out, camp, o.stepsUsed(cp, c.Steps))
		}
	}
	if err != nil {
		return err
	}
	return o.metrics.emit(ctx, set)
}

func runRecommendRamp(ctx context.Context, o *recommendOptions, cp campaign, formats []string) error {
	s, d := o.f.Streams, cp.deployment
	rp, err := o.ramper(cp)
	if err != nil {
		return o.finish(cp, err)
	}
	rec, camp, err := algorithms.RecommendRamp(ctx, rp, cp.x, d, cp.start, cp.opts)
	err = stepsHint(err)
	if err = o.finish(cp, err); err != nil {
		return err
	}
	doc := report.NewRecommendJSON(d, rec, rec.Allocation.String())
	doc.Version = version.String()
	doc.Snippets = o.snippets(d, rec.Tiers, formats)
	set := o.metricSet(cp)
	set.Recommendation(rec)
	set.Experiments(rec.Experiments)
	switch o.output {
	case "json":
		err = report.WriteJSON(s.Out, struct {
			report.RecommendJSON
			Steps algorithms.Steps `json:"steps"`
			Ramp  rampJSON         `json:"ramp"`
		}{doc, o.stepsUsed(cp, rec.Critical.Steps), newRampJSON(camp, rec.Critical.Trials)})
	case "csv":
		err = report.WriteRecommendCSV(s.Out, doc)
	default:
		if err = report.WriteRecommendTable(s.Out, doc); err == nil {
			writeRampTable(s.Out, camp, o.stepsUsed(cp, rec.Critical.Steps))
		}
	}
	if err != nil {
		return err
	}
	return o.metrics.emit(ctx, set)
}
