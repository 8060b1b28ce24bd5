package live

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/softalloc/softalloc/algorithms"
)

// OOMKillError: the OOM killer killed processes of a server during a trial
// (a php-fpm child over its tier's memory limit). The trial measured a
// deployment that lost workers mid-window, not the allocation: it fails
// with this cause, and is not retried (the same allocation exhausts the
// same memory again) nor journaled.
type OOMKillError struct {
	Server string
	Tier   string
	// Kills is how many processes were killed during the trial.
	Kills int
	// LimitBytes is the server's memory limit; 0 when unknown.
	LimitBytes float64
}

func (e *OOMKillError) Error() string {
	limit := "its memory limit unknown (set memoryLimit)"
	if e.LimitBytes > 0 {
		limit = "memory limit " + mebibytes(e.LimitBytes)
	}
	return fmt.Sprintf("%s: the OOM killer killed %d of tier %s's processes during the trial (%s): the allocation exhausted its memory; not a measurement, not retried",
		e.Server, e.Kills, e.Tier, limit)
}

func mebibytes(b float64) string {
	return strconv.FormatFloat(b/(1<<20), 'f', 0, 64) + " MiB"
}

// oomCounts reads every server's oomKills counter at t (zero: now), by
// server name; servers without the query, or whose counter has no series
// yet (no kill ever), are left out.
func (r *Runner) oomCounts(ctx context.Context, e algorithms.Experiment, t time.Time) (map[string]float64, error) {
	out := map[string]float64{}
	window := fmt.Sprintf("%dms", e.Timing.Runtime.Milliseconds())
	err := r.eachServer(e, window, func(tier algorithms.Tier, i int, q Queries, vars map[string]string, _ algorithms.TierPools) error {
		if q.OOMKills == "" {
			return nil
		}
		pq, err := expand(q.OOMKills, vars)
		if err != nil {
			return permanent{fmt.Errorf("%s: oomKills: %w", tier.ServerName(i), err)}
		}
		v, err := r.prom.value(ctx, pq, t)
		if errors.Is(err, errNoData) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: oomKills: %w", tier.ServerName(i), err)
		}
		if !math.IsNaN(v) {
			out[tier.ServerName(i)] = v
		}
		return nil
	})
	return out, err
}

// checkOOM compares the servers' oomKills counters now with before (read
// before the trial's load): a rise fails the trial with an *OOMKillError
// (permanent). It waits for a scrape past now first, so that a kill in the
// trial's last seconds is seen.
func (r *Runner) checkOOM(ctx context.Context, e algorithms.Experiment, before map[string]float64, hasQuery bool) error {
	if !hasQuery {
		return nil
	}
	now := time.Now()
	if err := r.prom.waitScraped(ctx, now, r.cfg.ScrapeTimeout.Duration()); err != nil {
		return err
	}
	// At Prometheus's now, not at ours: a counter whose first sample is in
	// the scrape just waited for has none at our now.
	after, err := r.oomCounts(ctx, e, time.Time{})
	if err != nil {
		return err
	}
	for _, t := range e.Deployment.Tiers {
		for i := 0; i < t.Replicas; i++ {
			name := t.ServerName(i)
			a, ok := after[name]
			// A counter that appears during the trial started from 0; one
			// that went down was reset (the exporter restarted): no kill seen.
			if !ok || a <= before[name] {
				continue
			}
			oe := &OOMKillError{Server: name, Tier: t.Name, Kills: int(math.Round(a - before[name]))}
			oe.LimitBytes = r.memoryLimit(ctx, e, t, i, now)
			r.applied = "" // processes were lost: apply again before the next trial
			return permanent{oe}
		}
	}
	return nil
}

// memoryLimit is server i of tier t's memoryLimit query at t, 0 when unknown.
func (r *Runner) memoryLimit(ctx context.Context, e algorithms.Experiment, t algorithms.Tier, i int, at time.Time) float64 {
	tc, q, err := r.tier(t)
	if err != nil || q.MemoryLimit == "" {
		return 0
	}
	pq, err := expand(q.MemoryLimit, serverVars(t, i, tc, fmt.Sprintf("%dms", e.Timing.Runtime.Milliseconds())))
	if err != nil {
		return 0
	}
	v, err := r.prom.value(ctx, pq, at)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// hasOOMQuery says whether any tier of e has an oomKills query.
func (r *Runner) hasOOMQuery(e algorithms.Experiment) bool {
	for _, t := range e.Deployment.Tiers {
		if tc, ok := r.cfg.Tiers[t.Name]; ok && tc.queries().OOMKills != "" {
			return true
		}
	}
	return false
}
