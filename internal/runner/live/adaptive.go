package live

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/softalloc/softalloc/algorithms"
)

// This file is the live runner's adaptive trial (algorithms.Timing with a
// precision): the same rule as the simulator's, on a real deployment. The
// load generator counts every page by the interval (the runner section's
// interval, Prometheus's scrape interval) it ended in, and by the fifth of
// one; every interval, once the least ramp-up has passed, MSER-5 on the
// throughput and on the users inside, by fifths since the start of the
// load (algorithms.WarmUp), places the window's
// start (its batches of five are then whole intervals, and it needs ten
// intervals of data, not fifty), Prometheus's range queries at the interval
// give every server's CPU and every pool's busy units over the window, and
// the window ends as soon as every figure is precise (algorithms.Stopping),
// or when it reaches the longest runtime. While MSER's answer is not
// trusted, the window from the least warm-up also ends the trial if it is
// precise and its transient shifts no figure by more than the precision
// (algorithms.Stopping.EstimateWhole). The load then ramps down; the
// observation covers the window only, read as a fixed trial's is.

// Bins are a trial's pages, failures and response times by interval since
// the start of the load, and its pages and their summed response times by
// fifths of an interval (MSER-5's).
type Bins struct {
	mu       sync.Mutex
	interval time.Duration
	slas     []float64
	start    time.Time
	fifths   []int64
	fifthRT  []float64 // seconds
	pages    []int64
	within   [][]int64 // by interval, then SLA
	errors   []ErrorCounts
	recs     []*algorithms.Recorder
}

// NewBins makes bins of the given interval; slas are the goodput
// thresholds counted (seconds).
func NewBins(interval time.Duration, slas []float64) *Bins {
	return &Bins{interval: interval, slas: slas}
}

func (b *Bins) begin(t time.Time) {
	b.mu.Lock()
	b.start = t
	b.mu.Unlock()
}

// started is when the load began (zero before).
func (b *Bins) started() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.start
}

func (b *Bins) add(done time.Time, rt float64, kind outcome) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.start.IsZero() || done.Before(b.start) {
		return
	}
	f := int(done.Sub(b.start) * 5 / b.interval)
	i := f / 5
	for len(b.pages) <= i {
		b.pages = append(b.pages, 0)
		b.within = append(b.within, make([]int64, len(b.slas)))
		b.errors = append(b.errors, ErrorCounts{})
		b.recs = append(b.recs, &algorithms.Recorder{})
		b.fifths = append(b.fifths, 0, 0, 0, 0, 0)
		b.fifthRT = append(b.fifthRT, 0, 0, 0, 0, 0)
	}
	switch kind {
	case ok:
		b.pages[i]++
		b.fifths[f]++
		b.fifthRT[f] += rt
		for j, s := range b.slas {
			if rt <= s {
				b.within[i][j]++
			}
		}
		b.recs[i].Add(rt)
	case refused:
		b.errors[i].Refused++
	case timedOut:
		b.errors[i].TimedOut++
	case serverError:
		b.errors[i].ServerErrors++
	default:
		b.errors[i].Other++
	}
}

// fifthSeries are, by fifths of intervals [0, to), the pages per second and
// the users inside the system (waiting or served): by Little's law, the
// response times of the pages that ended in a fifth over its length.
func (b *Bins) fifthSeries(to int) (rates, inside []float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	sec := b.interval.Seconds() / 5
	rates, inside = make([]float64, 5*to), make([]float64, 5*to)
	for i := range min(5*to, len(b.fifths)) {
		rates[i] = float64(b.fifths[i]) / sec
		inside[i] = b.fifthRT[i] / sec
	}
	return rates, inside
}

// rates are intervals [from, to)'s pages per second, and pages within each
// SLA per second (goodput[sla][i]).
func (b *Bins) rates(from, to int) (throughput []float64, goodput [][]float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	sec := b.interval.Seconds()
	goodput = make([][]float64, len(b.slas))
	for i := from; i < to; i++ {
		var p int64
		var w []int64
		if i < len(b.pages) {
			p, w = b.pages[i], b.within[i]
		}
		throughput = append(throughput, float64(p)/sec)
		for j := range b.slas {
			v := 0.0
			if w != nil {
				v = float64(w[j]) / sec
			}
			goodput[j] = append(goodput[j], v)
		}
	}
	return throughput, goodput
}

// window is intervals [from, to)'s pages, response times, pages within
// each SLA and failures.
func (b *Bins) window(from, to int) (pages int64, h algorithms.Histogram, within []int64, errs ErrorCounts) {
	b.mu.Lock()
	defer b.mu.Unlock()
	within = make([]int64, len(b.slas))
	for i := from; i < to && i < len(b.pages); i++ {
		pages += b.pages[i]
		for j := range b.slas {
			within[j] += b.within[i][j]
		}
		errs.add(b.errors[i])
		h = h.Merge(b.recs[i].Histogram())
	}
	return pages, h, within, errs
}

// adaptiveAttempt runs one adaptive trial of e on the applied, healthy
// deployment.
func (r *Runner) adaptiveAttempt(ctx context.Context, e algorithms.Experiment, tr http.RoundTripper) (algorithms.Observation, error) {
	iv := r.cfg.Interval.Duration()
	intervals := func(d time.Duration) int { return int(math.Ceil(d.Seconds() / iv.Seconds())) }
	minWarm, maxRows := intervals(e.Timing.RampUp), max(algorithms.DefaultBatches, intervals(e.Timing.Runtime))
	bins := NewBins(iv, e.Timing.SLAs)
	until := make(chan time.Time, 1)
	// The load's schedule reaches past the latest decision, the longest
	// window after the longest warm-up; the runner ends the window sooner.
	timing := e.Timing
	timing.Runtime = time.Duration(minWarm+maxRows+10)*iv - timing.RampUp
	load := Load{Workload: r.workload, Target: r.target, Users: e.Workload.Users, Timing: timing,
		ThinkTime: r.cfg.ThinkTime.Duration(), RequestTimeout: r.cfg.RequestTimeout.Duration(),
		MaxRequests: r.cfg.MaxRequests, Seed: r.cfg.Seed, Transport: tr, Bins: bins, Until: until}
	type outcome struct {
		res LoadResult
		err error
	}
	done := make(chan outcome, 1)
	lctx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	go func() {
		res, err := load.Run(lctx)
		done <- outcome{res, err}
	}()
	stopping := algorithms.Stopping{Precision: e.Timing.Precision, GoodputOnly: e.Timing.GoodputOnly}
	tick := time.NewTicker(iv)
	defer tick.Stop()
	var (
		figs     []algorithms.Figure
		series   [][]float64
		est      algorithms.Estimates
		from, to int
		d        int
	)
	for decided := false; !decided; {
		select {
		case <-ctx.Done():
			<-done
			return algorithms.Observation{}, ctx.Err()
		case out := <-done:
			if out.err != nil {
				return algorithms.Observation{}, out.err
			}
			return algorithms.Observation{}, fmt.Errorf("the load ended before the window was chosen")
		case <-tick.C:
		}
		start := bins.started()
		if start.IsZero() {
			continue
		}
		t := int(time.Since(start) / iv)
		if t < minWarm+1 {
			continue
		}
		var trusted bool
		d, trusted = algorithms.WarmUp(bins.fifthSeries(t))
		d /= 5 // whole intervals
		from, to = max(minWarm, d, t-maxRows), t
		n := to - from
		step := stopping.Next(t, n, minWarm, maxRows, trusted)
		var err error
		switch step {
		case algorithms.StepWait:
			continue
		case algorithms.StepEstimateWhole:
			if figs, series, err = r.series(ctx, e, bins, minWarm, to); err != nil {
				return algorithms.Observation{}, err
			}
			if est = stopping.EstimateWhole(figs, series, from-minWarm); est.Precise {
				from, decided = minWarm, true
			}
			continue
		}
		// Estimated at the end too: the observation carries the intervals.
		if figs, series, err = r.series(ctx, e, bins, from, to); err != nil {
			return algorithms.Observation{}, err
		}
		est = stopping.Estimate(figs, series)
		decided = est.Precise || step == algorithms.StepEnd
	}
	start := bins.started()
	end := start.Add(time.Duration(to) * iv)
	until <- end
	out := <-done
	if out.err != nil {
		return algorithms.Observation{}, out.err
	}
	pages, h, within, errs := bins.window(from, to)
	if err := r.errorShare(e, pages, errs); err != nil {
		return algorithms.Observation{}, err
	}
	T := time.Duration(to-from) * iv
	obs := algorithms.Observation{RuntimeSeconds: T.Seconds(), Throughput: float64(pages) / T.Seconds(), ResponseTimes: h, Errors: errs.Total()}
	we := e
	we.Timing.Runtime = T
	var err error
	if obs.Servers, err = r.servers(ctx, we, end); err != nil {
		return algorithms.Observation{}, err
	}
	for j := range e.Timing.SLAs {
		est.Intervals[1+j].Mean = float64(within[j]) / T.Seconds()
	}
	obs.SetIntervals(figs, est, algorithms.MeasuredWindow{WarmUpSeconds: (time.Duration(from) * iv).Seconds(),
		TransientSeconds: (time.Duration(d) * iv).Seconds(), IntervalSeconds: iv.Seconds(), Precision: e.Timing.Precision})
	if err := obs.Validate(); err != nil {
		return algorithms.Observation{}, permanent{fmt.Errorf("the observation read from Prometheus: %w", err)}
	}
	return obs, nil
}

// series are the figures of the window [from, to) (in intervals since the
// start of the load) as series of intervals: throughput and goodput from
// the load generator, every server's CPU and every pool's busy units from
// Prometheus's range queries, each query's {window} two intervals long
// (rate() needs two samples, and at the scrape interval a window of one
// holds one).
func (r *Runner) series(ctx context.Context, e algorithms.Experiment, bins *Bins, from, to int) ([]algorithms.Figure, [][]float64, error) {
	iv := r.cfg.Interval.Duration()
	start := bins.started()
	// To the millisecond, as Prometheus evaluates.
	first := start.Add(time.Duration(from+1) * iv).Truncate(time.Millisecond)
	last := start.Add(time.Duration(to) * iv).Truncate(time.Millisecond)
	if err := r.prom.waitScraped(ctx, last, r.cfg.ScrapeTimeout.Duration()); err != nil {
		return nil, nil, err
	}
	n := to - from
	thr, good := bins.rates(from, to)
	figs := []algorithms.Figure{{Kind: algorithms.FigureThroughput}}
	series := [][]float64{thr}
	for j, sla := range e.Timing.SLAs {
		figs = append(figs, algorithms.Figure{Kind: algorithms.FigureGoodput, SLA: sla})
		series = append(series, good[j])
	}
	window := strconv.FormatInt((2*iv).Milliseconds(), 10) + "ms"
	var down downTargets
	err := r.eachServer(e, window, func(t algorithms.Tier, i int, q Queries, vars map[string]string, alloc algorithms.TierPools) error {
		name := t.ServerName(i)
		read := func(field, query string, required bool) ([]float64, error) {
			pq, err := expand(query, vars)
			if err != nil {
				return nil, permanent{fmt.Errorf("%s: %s: %w", name, field, err)}
			}
			v, err := r.prom.series(ctx, pq, first, last, iv, n)
			if errors.Is(err, errNoData) {
				if err := r.scrapeError(ctx, &down, vars, last, true, fmt.Sprintf("%s: %s: query %s read nothing", name, field, pq)); err != nil {
					return nil, err
				}
			}
			if errors.Is(err, errNoData) && !required {
				return make([]float64, n), nil
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", name, field, err)
			}
			return v, nil
		}
		cpu, err := read("cpu", q.CPU, true)
		if err != nil {
			return err
		}
		for k := range cpu {
			cpu[k] = min(1, max(0, cpu[k]))
		}
		figs = append(figs, algorithms.Figure{Kind: algorithms.FigureCPU, Server: name, Capacity: 1})
		series = append(series, cpu)
		for _, pool := range sortedKeys(q.Pools) {
			if q.Pools[pool].Busy == "" {
				continue
			}
			busy, err := read("pools."+pool+".busy", q.Pools[pool].Busy, false)
			if err != nil {
				return err
			}
			figs = append(figs, algorithms.Figure{Kind: algorithms.FigureBusy, Server: name, Pool: pool, Capacity: float64(alloc.Size(pool))})
			series = append(series, busy)
		}
		return nil
	})
	return figs, series, err
}

// errorShare refuses a trial in which more than maxErrorShare of the
// window's pages failed: it measured an outage, not the deployment.
func (r *Runner) errorShare(e algorithms.Experiment, pages int64, errs ErrorCounts) error {
	n := errs.Total()
	if n == 0 {
		return nil
	}
	causes := fmt.Sprintf("%d refused, %d timed out, %d 5xx, %d other", errs.Refused, errs.TimedOut, errs.ServerErrors, errs.Other)
	if share := float64(n) / float64(n+pages); share > *r.cfg.MaxErrorShare {
		// An outage, not a measurement: retried, and never journaled.
		return fmt.Errorf("%d of %d pages to %s failed in the window (%.0f%%: %s), more than maxErrorShare %.0f%%: the trial measured an outage, not the deployment",
			n, n+pages, r.cfg.Target, 100*share, causes, 100**r.cfg.MaxErrorShare)
	}
	r.logf("%d users: %d failed pages in the window (%s)", e.Workload.Users, n, causes)
	return nil
}
