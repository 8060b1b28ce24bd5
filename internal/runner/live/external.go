package live

import (
	"context"
	"time"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/workload"
)

// This file is what a program that brings its own load generator reuses of
// the live runner (examples/locust, an exec program): the deployment file's
// runner section read and checked as the live runner reads it, the hook and
// the health wait, and each server's observation from Prometheus with the
// same queries and presets. So a trial driven by another load generator is
// measured on the servers' side exactly as a live trial is.

// Config is the runner section as the runner uses it: defaults filled in.
func (r *Runner) Config() Config { return r.cfg }

// Workload is the section's workload file, parsed and checked for the load
// generator (every interaction has a path).
func (r *Runner) Workload() *workload.Workload { return r.workload }

// Prepare applies allocation a through the section's hook (a runner made
// for one experiment always runs it: it cannot know the deployment's state)
// and waits until the health URL answers, as before a live trial.
func (r *Runner) Prepare(ctx context.Context, a algorithms.Allocation) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.apply(ctx, a); err != nil {
		return err
	}
	return r.waitHealthy(ctx)
}

// WarmUp runs the section's warm-up (warmUp) for experiment e with the
// runner's own load generator, as a live trial does after an apply: a
// program that brings its own load generator calls it after Prepare, so
// that its first window does not measure caches a reload emptied (php-fpm's
// OPcache). Absent warmUp: nothing. Like Prepare, it cannot know whether
// the hook changed anything, so it always runs. It starts as a live trial
// does (start): e's allocation applied when Prepare applied another, the
// health wait, and an OOM kill during the warm-up named as such.
func (r *Runner) WarmUp(ctx context.Context, e algorithms.Experiment) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, err := r.start(ctx, e, e.Workload.Users, true)
	if err != nil {
		return err
	}
	st.tr.CloseIdleConnections()
	return nil
}

// Servers reads every server's observation of experiment e over the window
// that ended at end and lasted e.Timing.Runtime (pass the window measured,
// not the one asked for), once Prometheus has scraped past end.
func (r *Runner) Servers(ctx context.Context, e algorithms.Experiment, end time.Time) ([]algorithms.ServerObservation, error) {
	if err := r.prom.waitScraped(ctx, end, r.cfg.ScrapeTimeout.Duration()); err != nil {
		return nil, err
	}
	return r.servers(ctx, e, end)
}
