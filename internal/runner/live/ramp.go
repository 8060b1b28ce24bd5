package live

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/softalloc/softalloc/algorithms"
)

// This file is the live runner's ramp (algorithms.Ramper): one load whose
// users rise level by level without a reset (Load.More), each level a
// window chosen as an adaptive trial's (adaptive.go), counted from the
// level's start: MSER-5 on the throughput and the users inside since the
// step finds where its transient ends, Prometheus's range queries at the
// interval give every server's CPU and every pool's busy units, and the
// window ends once every figure is within the precision or at the longest
// runtime. The campaign (algorithms.FindCriticalRamp) reads each window and
// says the next level; the load then rises at once, and the next window is
// measured after at least the least ramp-up.

var _ algorithms.Ramper = (*Runner)(nil)

// rampSchedule is the load's schedule length: the ramp ends its levels
// itself, long before.
const rampSchedule = 72 * time.Hour

// RunRamp runs a ramp on the deployment: the allocation applied once (the
// hook, the health check and the warm-up as for a trial), then one load
// from rp.From users, rising as next asks. A failure ends the ramp (a
// campaign's journal keeps the windows measured, and the ramp resumes
// from the last one).
func (r *Runner) RunRamp(ctx context.Context, rp algorithms.Ramp, next func(algorithms.RampWindow) (algorithms.RampStep, error)) error {
	if r.workload == nil {
		return fmt.Errorf("live: this runner reads recorded metrics only (built by NewPassive): it has no target or workload to run a ramp with")
	}
	if err := rp.Check(); err != nil {
		return fmt.Errorf("live: %w", err)
	}
	if rp.From > r.cfg.MaxUsers {
		return fmt.Errorf("live: %d users: want 1..%d (the runner section's maxUsers)", rp.From, r.cfg.MaxUsers)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.ramp(ctx, rp, next)
	if err != nil {
		r.applied = "" // the deployment's state is unknown after a failure
		return fmt.Errorf("live: ramp on %s: %w", rp.Allocation, err)
	}
	return nil
}

func (r *Runner) ramp(ctx context.Context, rp algorithms.Ramp, next func(algorithms.RampWindow) (algorithms.RampStep, error)) error {
	e := algorithms.Experiment{Deployment: rp.Deployment, Allocation: rp.Allocation, Workload: algorithms.Workload{Users: rp.From}, Timing: rp.Timing}
	// Idle connections for the most users the ramp may reach.
	st, err := r.start(ctx, e, r.cfg.MaxUsers, false)
	if err != nil {
		return err
	}
	defer st.tr.CloseIdleConnections()
	tr, oomBefore, watchOOM := st.tr, st.oomBefore, st.watchOOM
	iv := r.cfg.Interval.Duration()
	bins := NewBins(iv, rp.Timing.SLAs)
	more := make(chan int, 1)
	timing := rp.Timing
	timing.Runtime, timing.RampDown = rampSchedule, 0
	load := Load{Workload: r.workload, Target: r.target, Users: rp.From, Timing: timing,
		ThinkTime: r.cfg.ThinkTime.Duration(), RequestTimeout: r.cfg.RequestTimeout.Duration(),
		MaxRequests: r.cfg.MaxRequests, Seed: r.cfg.Seed, Transport: tr, Bins: bins, More: more}
	lctx, stopLoad := context.WithCancel(ctx)
	ld := &loadEnd{done: make(chan struct{})}
	go func() {
		_, ld.err = load.Run(lctx)
		close(ld.done)
	}()
	defer func() {
		stopLoad()
		<-ld.done
	}()

	users, precision, base, lastEnd := rp.From, rp.Timing.Precision, 0, 0.0
	for i := 0; ; i++ {
		we := e
		we.Workload.Users, we.Timing.Precision = users, precision
		obs, from, to, err := r.rampWindow(ctx, we, bins, base, ld)
		if err != nil {
			return fmt.Errorf("window %d at %d users: %w", i, users, err)
		}
		if err := r.checkOOM(ctx, we, oomBefore, watchOOM); err != nil {
			return err
		}
		end := (time.Duration(to) * iv).Seconds()
		w := algorithms.RampWindow{Index: i, Users: users, Start: (time.Duration(from) * iv).Seconds(), End: end,
			Elapsed: end - lastEnd, Observation: obs}
		lastEnd = end
		r.logf("ramp window %d: %d users, %.1f pages/s over %.0f s", i, users, obs.Throughput, obs.RuntimeSeconds)
		step, err := next(w)
		switch {
		case err != nil:
			return err
		case step.Users == 0:
			return nil
		case step.Users < users:
			return fmt.Errorf("a step from %d down to %d users; a ramp only rises", users, step.Users)
		case step.Users > r.cfg.MaxUsers:
			return fmt.Errorf("%d users: want at most %d (the runner section's maxUsers)", step.Users, r.cfg.MaxUsers)
		}
		precision = rp.Timing.Precision
		if step.Precision > 0 {
			precision = step.Precision
		}
		// The next level is counted from the next whole interval.
		base = int(math.Ceil(float64(time.Since(bins.started())) / float64(iv)))
		if step.Users > users {
			users = step.Users
			select {
			case more <- users:
			case <-ld.done:
				return fmt.Errorf("rising to %d users: %w", users, ld.error())
			}
		}
	}
}

// rampWindow chooses and reads the window of the level that began at
// interval base of the load in bins, by the adaptive trial's rule with the
// level's start for the load's; from and to are the window's intervals
// since the load's start.
func (r *Runner) rampWindow(ctx context.Context, e algorithms.Experiment, bins *Bins, base int, ld *loadEnd) (algorithms.Observation, int, int, error) {
	iv := r.cfg.Interval.Duration()
	intervals := func(d time.Duration) int { return int(math.Ceil(d.Seconds() / iv.Seconds())) }
	minWarm, maxRows := intervals(e.Timing.RampUp), max(algorithms.DefaultBatches, intervals(e.Timing.Runtime))
	stopping := algorithms.Stopping{Precision: e.Timing.Precision, GoodputOnly: e.Timing.GoodputOnly}
	tick := time.NewTicker(iv)
	defer tick.Stop()
	var (
		figs     []algorithms.Figure
		series   [][]float64
		est      algorithms.Estimates
		from, to int // since the level's start
		d        int
	)
	for decided := false; !decided; {
		select {
		case <-ctx.Done():
			return algorithms.Observation{}, 0, 0, ctx.Err()
		case <-ld.done:
			return algorithms.Observation{}, 0, 0, ld.error()
		case <-tick.C:
		}
		start := bins.started()
		if start.IsZero() {
			continue
		}
		t := int(time.Since(start)/iv) - base
		if t < minWarm+1 {
			continue
		}
		rates, inside := bins.fifthSeries(base + t)
		var trusted bool
		d, trusted = algorithms.WarmUp(rates[5*base:], inside[5*base:])
		d /= 5 // whole intervals
		from, to = max(minWarm, d, t-maxRows), t
		step := stopping.Next(t, to-from, minWarm, maxRows, trusted)
		var err error
		switch step {
		case algorithms.StepWait:
			continue
		case algorithms.StepEstimateWhole:
			if figs, series, err = r.series(ctx, e, bins, base+minWarm, base+to); err != nil {
				return algorithms.Observation{}, 0, 0, err
			}
			if est = stopping.EstimateWhole(figs, series, from-minWarm); est.Precise {
				from, decided = minWarm, true
			}
			continue
		}
		if figs, series, err = r.series(ctx, e, bins, base+from, base+to); err != nil {
			return algorithms.Observation{}, 0, 0, err
		}
		est = stopping.Estimate(figs, series)
		decided = est.Precise || step == algorithms.StepEnd
	}
	from, to = base+from, base+to
	pages, h, within, errs := bins.window(from, to)
	if err := r.errorShare(e, pages, errs); err != nil {
		return algorithms.Observation{}, 0, 0, err
	}
	T := time.Duration(to-from) * iv
	obs := algorithms.Observation{RuntimeSeconds: T.Seconds(), Throughput: float64(pages) / T.Seconds(), ResponseTimes: h, Errors: errs.Total()}
	we := e
	we.Timing.Runtime = T
	var err error
	if obs.Servers, err = r.servers(ctx, we, bins.started().Add(time.Duration(to)*iv)); err != nil {
		return algorithms.Observation{}, 0, 0, err
	}
	for j := range e.Timing.SLAs {
		est.Intervals[1+j].Mean = float64(within[j]) / T.Seconds()
	}
	obs.SetIntervals(figs, est, algorithms.MeasuredWindow{WarmUpSeconds: (time.Duration(from-base) * iv).Seconds(),
		TransientSeconds: (time.Duration(d) * iv).Seconds(), IntervalSeconds: iv.Seconds(), Precision: e.Timing.Precision})
	if err := obs.Validate(); err != nil {
		return algorithms.Observation{}, 0, 0, fmt.Errorf("the observation read from Prometheus: %w", err)
	}
	return obs, from, to, nil
}

// loadEnd is the ramp's load's end: done closes when it returns, with err.
type loadEnd struct {
	done chan struct{}
	err  error
}

// error is why the load ended before the ramp did (read after done).
func (l *loadEnd) error() error {
	if l.err != nil {
		return fmt.Errorf("the load ended: %w", l.err)
	}
	return errors.New("the load ended before the ramp did")
}
