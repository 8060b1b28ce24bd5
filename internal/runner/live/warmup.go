package live

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/duration"
)

// WarmUp is the load run after an apply, before a trial's ramp-up. A
// reload empties php-fpm's caches (OPcache, APCu, a parser cache kept in
// APCu): the first trial after each hook ran cold, at 7.2 pages/s against
// 18.4 warm. The trial's own ramp-up is not enough: it is as short as the
// queues allow, and an adaptive trial's MSER cuts a transient, not a trend
// that lasts a minute.
//
//	warmUp: 30s                                   # a fixed load of 30 s
//	warmUp: settle                                # until the CPU per page settles (at most 2m)
//	warmUp: {settle: true, max: 3m, interval: 5s, within: 0.05}
//	warmUp: {duration: 30s, users: 10}
type WarmUp struct {
	// Duration is a fixed warm-up's length.
	Duration time.Duration
	// Settle runs the load until the CPU per page (every server's CPU
	// seconds over the pages served) of two consecutive intervals agrees
	// within Within, or Max has passed.
	Settle bool
	// Max bounds a settling warm-up (default DefaultWarmUpMax).
	Max time.Duration
	// Interval is the length of the intervals compared (default
	// DefaultWarmUpInterval): long enough to hold tens of pages.
	Interval time.Duration
	// Within is the relative difference allowed (default: the trial's
	// precision, or DefaultPrecision for fixed trials).
	Within float64
	// Users is the load's users (default: the trial's).
	Users int
}

// Defaults of a settling warm-up.
const (
	DefaultWarmUpMax      = 2 * time.Minute
	DefaultWarmUpInterval = 5 * time.Second
)

// UnmarshalYAML reads a duration, "settle", or a mapping.
func (w *WarmUp) UnmarshalYAML(n *yaml.Node) error {
	want := "want a duration (30s), settle, or a mapping of duration or settle with max, interval, within and users"
	readDur := func(key string, n *yaml.Node) (time.Duration, error) {
		var s duration.Seconds
		if err := n.Decode(&s); err != nil {
			return 0, fmt.Errorf("warmUp.%s: %w", key, err)
		}
		if !s.IsTimeout() || s.Duration() > maxDuration {
			return 0, fmt.Errorf("warmUp.%s: want a duration >= 0 and at most %v, got %g seconds", key, maxDuration, float64(s))
		}
		return s.Duration(), nil
	}
	switch n.Kind {
	case yaml.ScalarNode:
		if strings.TrimSpace(n.Value) == "settle" {
			w.Settle = true
			return nil
		}
		d, err := readDur("duration", n)
		if err != nil {
			return fmt.Errorf("warmUp: %q: %s", n.Value, want)
		}
		w.Duration = d
		return nil
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i].Value, n.Content[i+1]
			var err error
			switch k {
			case "duration":
				w.Duration, err = readDur(k, v)
			case "max":
				w.Max, err = readDur(k, v)
			case "interval":
				w.Interval, err = readDur(k, v)
			case "settle":
				err = v.Decode(&w.Settle)
			case "within":
				err = v.Decode(&w.Within)
			case "users":
				err = v.Decode(&w.Users)
			default:
				return fmt.Errorf("warmUp: unknown key %q; %s", k, want)
			}
			if err != nil {
				return fmt.Errorf("warmUp.%s: %w", k, err)
			}
		}
		return nil
	}
	return fmt.Errorf("warmUp: %s", want)
}

func (w *WarmUp) check() error {
	switch {
	case w == nil:
		return nil
	case w.Settle && w.Duration > 0:
		return errors.New("warmUp: duration and settle both set; want one: a fixed warm-up, or one until the CPU per page settles (bounded by max)")
	case !w.Settle && w.Duration == 0:
		return errors.New("warmUp: no duration and no settle; want a duration (30s) or settle")
	case w.Within < 0 || w.Within > 1 || math.IsNaN(w.Within):
		return fmt.Errorf("warmUp.within: want a relative difference in [0, 1] such as 0.05, got %v", w.Within)
	case w.Users < 0:
		return fmt.Errorf("warmUp.users: want a number of users >= 1, got %d", w.Users)
	case w.Interval != 0 && w.Interval < minInterval:
		return fmt.Errorf("warmUp.interval: want at least %v, got %v", minInterval, w.Interval)
	}
	return nil
}

// bound is the longest a warm-up may take (0 without one): its duration, or
// its max and a wait for Prometheus's scrapes.
func (w *WarmUp) bound(scrape time.Duration) time.Duration {
	switch {
	case w == nil:
		return 0
	case w.Settle && w.Max == 0:
		return DefaultWarmUpMax + scrape
	case w.Settle:
		return w.Max + scrape
	}
	return w.Duration
}

// warmUp runs the section's warm-up before e's trial, when the hook has
// just applied the allocation or none has run yet, and says in the log what
// it did. A warm-up that does not settle within its bound is a note: the
// trial runs, and its own ramp-up and the plausibility checks judge it.
func (r *Runner) warmUp(ctx context.Context, e algorithms.Experiment, tr http.RoundTripper, applied bool) error {
	w := r.cfg.WarmUp
	if w == nil || (!applied && r.warmed) {
		return nil
	}
	users := e.Workload.Users
	if w.Users > 0 {
		users = w.Users
	}
	what := "after applying " + e.Allocation.String()
	if !applied {
		what = "before the first trial"
	}
	if !w.Settle {
		load := r.warmUpLoad(users, tr, w.Duration, nil, nil)
		res, err := load.Run(ctx)
		if err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
		r.warmed = true
		r.logf("warm-up %s: %v at %d users, %d pages (%.1f pages/s), %d failed", what, w.Duration, users, res.Pages,
			float64(res.Pages)/w.Duration.Seconds(), res.Errors.Total())
		return nil
	}
	iv, most, within := w.Interval, w.Max, w.Within
	if iv == 0 {
		iv = DefaultWarmUpInterval
	}
	if most == 0 {
		most = DefaultWarmUpMax
	}
	if within == 0 {
		within = e.Timing.Precision
		if within <= 0 {
			within = algorithms.DefaultPrecision
		}
	}
	bins := NewBins(iv, nil)
	until := make(chan time.Time, 1)
	load := r.warmUpLoad(users, tr, most, bins, until)
	done := make(chan error, 1)
	lctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		_, err := load.Run(lctx)
		done <- err
	}()
	var perPage []float64 // CPU seconds per page, by interval
	settled := false
	tick := time.NewTicker(iv / 4)
	defer tick.Stop()
	for !settled {
		select {
		case <-ctx.Done():
			<-done
			return ctx.Err()
		case err := <-done:
			if err != nil {
				return fmt.Errorf("warm-up: %w", err)
			}
			r.warmed = true
			r.logf("warm-up %s: the CPU per page did not settle within %v at %d users (by %v intervals: %s); the trial runs, its ramp-up and checks judge it",
				what, most, users, iv, perPageText(perPage))
			return nil
		case <-tick.C:
		}
		start := bins.started()
		if start.IsZero() || time.Since(start) < time.Duration(len(perPage)+1)*iv {
			continue
		}
		k := len(perPage)
		end := start.Add(time.Duration(k+1) * iv)
		c, err := r.cpuSeconds(ctx, e, end, iv)
		if err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
		pages := bins.pagesIn(k)
		v := math.NaN()
		if pages > 0 {
			v = c / float64(pages)
		}
		perPage = append(perPage, v)
		if k >= 1 && !math.IsNaN(v) && !math.IsNaN(perPage[k-1]) && math.Abs(v-perPage[k-1]) <= within*perPage[k-1] {
			settled = true
		}
	}
	until <- time.Now()
	if err := <-done; err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	r.warmed = true
	r.logf("warm-up %s: the CPU per page settled within %.0f%% after %v at %d users (by %v intervals: %s)",
		what, 100*within, time.Duration(len(perPage))*iv, users, iv, perPageText(perPage))
	return nil
}

func (r *Runner) warmUpLoad(users int, tr http.RoundTripper, d time.Duration, bins *Bins, until chan time.Time) Load {
	return Load{Workload: r.workload, Target: r.target, Users: users, Timing: algorithms.Timing{Runtime: d},
		ThinkTime: r.cfg.ThinkTime.Duration(), RequestTimeout: r.cfg.RequestTimeout.Duration(),
		MaxRequests: r.cfg.MaxRequests, Seed: r.cfg.Seed + 1, Transport: tr, Bins: bins, Until: until}
}

// cpuSeconds is the CPU seconds every server of e used in the interval of
// length iv that ended at end: each server's cpu query over that window,
// times its cores and the window.
func (r *Runner) cpuSeconds(ctx context.Context, e algorithms.Experiment, end time.Time, iv time.Duration) (float64, error) {
	if err := r.prom.waitScraped(ctx, end, r.cfg.ScrapeTimeout.Duration()); err != nil {
		return 0, err
	}
	window := strconv.FormatInt(iv.Milliseconds(), 10) + "ms"
	var sum float64
	err := r.eachServer(e, window, func(t algorithms.Tier, i int, q Queries, vars map[string]string, _ algorithms.TierPools) error {
		pq, err := expand(q.CPU, vars)
		if err != nil {
			return permanent{fmt.Errorf("%s: cpu: %w", t.ServerName(i), err)}
		}
		v, err := r.prom.value(ctx, pq, end)
		if errors.Is(err, errNoData) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: cpu: %w", t.ServerName(i), err)
		}
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			sum += min(1, max(0, v)) * float64(max(1, t.Cores)) * iv.Seconds()
		}
		return nil
	})
	return sum, err
}

// pagesIn is the pages that ended in interval i.
func (b *Bins) pagesIn(i int) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if i < len(b.pages) {
		return b.pages[i]
	}
	return 0
}

func perPageText(v []float64) string {
	parts := make([]string, 0, len(v))
	for _, x := range v[max(0, len(v)-6):] {
		if math.IsNaN(x) {
			parts = append(parts, "no page")
			continue
		}
		parts = append(parts, strconv.FormatFloat(x*1000, 'f', 2, 64)+" ms")
	}
	if len(v) > 6 {
		return "... " + strings.Join(parts, ", ")
	}
	return strings.Join(parts, ", ")
}
