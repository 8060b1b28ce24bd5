package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/report"
	"github.com/softalloc/softalloc/internal/sim/classes"
)

// ClassesConfig says which multi-class workload to run and how.
type ClassesConfig struct {
	// WorkloadPath is a workload file (docs/classes.md); "" is the
	// embedded seed 000 set-up.
	WorkloadPath string
	// Seed of the simulator: the same seed gives the same numbers.
	Seed uint64
	// Duration, when > 0, replaces the workload's measured window.
	Duration time.Duration
	// NoSelector serves every request with its full approach (seed 002's
	// baseline): the approach selectors are off.
	NoSelector bool
}

// Classes is a multi-class workload ready to run on the class simulator:
// the trials of the class procedures in algorithms, the description they
// need, and the full report of one trial as it is.
type Classes struct {
	algorithms.ClassExperimenter
	// Workload describes the server and its classes.
	Workload algorithms.ClassWorkload
	sim      classes.Runner
}

// NewClasses loads the workload and builds its runner. Errors name the file
// and the bad field.
func NewClasses(cfg ClassesConfig) (Classes, error) {
	w := classes.Seed000()
	if cfg.WorkloadPath != "" {
		var err error
		if w, err = classes.LoadWorkload(cfg.WorkloadPath); err != nil {
			return Classes{}, err
		}
	}
	if cfg.Duration < 0 {
		return Classes{}, fmt.Errorf("workload %q: measured window %v: want a time > 0 (0 keeps the workload's)", w.Name, cfg.Duration)
	}
	if cfg.Duration > 0 {
		w.SetMeasuredWindow(cfg.Duration)
	}
	if cfg.NoSelector {
		w.DisableSelectors()
	}
	r := classes.Runner{Workload: w, Seed: cfg.Seed}
	return Classes{ClassExperimenter: r, Workload: w.Description(), sim: r}, nil
}

// Trial runs the workload once as it is, with its own loads (open arrivals,
// ramps and slumps included), and returns each class's report and the
// time series.
func (c Classes) Trial(ctx context.Context) (report.ClassTrialJSON, error) {
	r, err := c.sim.Simulate(ctx)
	if err != nil {
		return report.ClassTrialJSON{}, err
	}
	out := report.ClassTrialJSON{Name: r.Name, Seconds: r.Seconds, HitsPerSecond: r.HitsPerSecond,
		ErrorsPerSecond: r.ErrorsPerSecond, CPU: r.CPU, GCShare: r.GCShare, HeapPeak: r.HeapPeak}
	out.Classes = convert(r.Classes, func(k classes.ClassResult) report.TrialClassJSON {
		return report.TrialClassJSON{Name: k.Name, Throughput: k.Throughput, Goodput: k.Goodput,
			ErrorsPerSecond: k.ErrorsPerSecond, Adequacy: k.Adequacy, Limit: k.Limit, Sent: k.Sent,
			Completed: k.Completed, Refused: k.Refused, OutOfMemory: k.OutOfMemory, ResponseTime: k.ResponseTime,
			ServerTime: k.ServerTime, P50: k.P50, P90: k.P90, P99: k.P99, ResponseTimes: k.ResponseTimes,
			Approaches: convert(k.Approaches, func(a classes.ApproachResult) report.TrialApproachJSON {
				return report.TrialApproachJSON{Name: a.Name, Served: a.Served, Share: a.Share, Adequate: a.Adequate}
			}),
			Switches: k.Switches}
	})
	out.Series = convert(r.Series, func(b classes.Bin) report.TrialBinJSON {
		return report.TrialBinJSON{Start: b.Start, Users: b.Users, HitsPerSecond: b.HitsPerSecond,
			ErrorsPerSecond: b.ErrorsPerSecond, Duration: b.Duration, MaxDuration: b.MaxDuration}
	})
	return out, nil
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
