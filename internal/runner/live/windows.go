package live

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/softalloc/softalloc/algorithms"
)

// Limits of Windows.
const (
	// MinStep is the shortest window. rate() needs two samples in a window,
	// and 1 s is the finest scrape interval in common use (the testbed's): a
	// 2 s window holds two of its scrapes. At a coarser interval, windows
	// shorter than two scrapes show up as gaps, each reported.
	MinStep = 2 * time.Second
	// MaxWindows bounds one call: a year of 5-minute windows is 105,120; a
	// step of a second over a month (2.6 million windows) is a mistake.
	MaxWindows = 100_000
	// MaxFutureSkew is how far the range may end ahead of this machine's
	// clock: Prometheus's clock may be a little ahead, but a window in the
	// future has no data.
	MaxFutureSkew = time.Minute
)

// maxPoints is the most windows one range query asks for: Prometheus refuses
// more than 11,000 points per series. A variable so that a test can make it
// small.
var maxPoints = 10_000

// Windows reads the deployment's own traffic from Prometheus over
// [start, end], cut into consecutive windows of length step from start (a
// remainder shorter than a step at the end is left out), and returns one
// Window per step: its page figures (the section's pages queries) and each
// server's readings (the tiers' queries, as RunExperiment reads them, with
// {window} the step, evaluated at each window's end).
//
// Each query is one range query (one per 10,000 windows), and each server's
// counters one more, for resets. Bad data in a window (a gap, NaN or Inf, a
// counter reset) is that window's Problem, naming the server, the field and
// the query (the window's Label names its time range); what no window can
// have (a cpu or resources metric Prometheus has no series of, a query
// giving several series at once) is an error.
//
// NaN is a Problem, except as 0/0 in an idle window, which reads as 0: a
// response time while the same server (for pages, the deployment) completed
// nothing, or throttled while the server used no CPU. Pool sizes without a
// size query are 0 (unknown): there is no allocation to take them from.
func (r *Runner) Windows(ctx context.Context, d algorithms.Deployment, start, end time.Time, step time.Duration) ([]algorithms.Window, error) {
	g, err := newGrid(start, end, step, time.Now())
	if err != nil {
		return nil, fmt.Errorf("live: windows: %w", err)
	}
	if len(d.Tiers) == 0 {
		return nil, fmt.Errorf("live: windows: the deployment has no tiers")
	}
	if err := r.checkSharedHardware(d); err != nil {
		return nil, fmt.Errorf("live: windows: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	rd := &reader{r: r, g: g, cache: map[string]*stepValues{}}
	window := fmt.Sprintf("%dms", step.Milliseconds())

	var servers []*serverReads
	for _, t := range d.Tiers {
		tc, q, err := r.tier(t)
		if err != nil {
			return nil, fmt.Errorf("live: windows: %w", err)
		}
		for i := 0; i < t.Replicas; i++ {
			s, err := rd.server(ctx, t, i, q, serverVars(t, i, tc, window))
			if err != nil {
				return nil, fmt.Errorf("live: windows: %s: %w", t.ServerName(i), err)
			}
			servers = append(servers, s)
		}
	}
	pages, err := rd.pages(ctx, d.Tiers[0], servers, window)
	if err != nil {
		return nil, fmt.Errorf("live: windows: %w", err)
	}

	out := make([]algorithms.Window, g.n)
	for k := range out {
		w := &out[k]
		w.Label = g.label(k)
		w.Observation.RuntimeSeconds = step.Seconds()
		var problems []string
		for _, s := range servers {
			so, p := s.at(k)
			w.Observation.Servers = append(w.Observation.Servers, so)
			problems = append(problems, p...)
		}
		var p []string
		w.Observation.Throughput, w.ResponseTime, w.Users, p = pages.at(k, servers)
		w.Problem = strings.Join(append(p, problems...), "; ")
	}
	return out, nil
}

// grid is the windows: the k-th (from 0) ends at start + (k+1)*step.
type grid struct {
	start time.Time
	step  time.Duration
	n     int
}

func newGrid(start, end time.Time, step time.Duration, now time.Time) (grid, error) {
	// Prometheus keeps milliseconds: so does the grid, so that its samples'
	// timestamps fall on it exactly.
	start, end = time.UnixMilli(start.UnixMilli()).UTC(), time.UnixMilli(end.UnixMilli()).UTC()
	switch {
	case step <= 0:
		return grid{}, fmt.Errorf("step %v: want a positive duration", step)
	case step < MinStep:
		return grid{}, fmt.Errorf("step %v: want at least %v (rate() needs two samples in a window)", step, MinStep)
	case step%time.Millisecond != 0:
		return grid{}, fmt.Errorf("step %v: want whole milliseconds, as Prometheus keeps time", step)
	case !start.Before(end):
		return grid{}, fmt.Errorf("range %s..%s: want a start before the end", start.Format(time.RFC3339Nano), end.Format(time.RFC3339Nano))
	case end.After(now.Add(MaxFutureSkew)):
		return grid{}, fmt.Errorf("end %s is %v in the future: want a range that has been recorded", end.Format(time.RFC3339), end.Sub(now).Round(time.Second))
	}
	n := end.Sub(start) / step
	if n < 1 {
		return grid{}, fmt.Errorf("range %s..%s (%v) is shorter than one step %v", start.Format(time.RFC3339), end.Format(time.RFC3339), end.Sub(start), step)
	}
	if n > MaxWindows {
		return grid{}, fmt.Errorf("range %s..%s: %d windows of %v; want at most %d: take a longer step or a shorter range",
			start.Format(time.RFC3339), end.Format(time.RFC3339), n, step, MaxWindows)
	}
	return grid{start: start, step: step, n: int(n)}, nil
}

func (g grid) end(k int) time.Time { return g.start.Add(time.Duration(k+1) * g.step) }

// index is the window ending at ts, if one does.
func (g grid) index(ts model.Time) (int, bool) {
	d := int64(ts) - g.end(0).UnixMilli()
	ms := g.step.Milliseconds()
	if d < 0 || d%ms != 0 || d/ms >= int64(g.n) {
		return 0, false
	}
	return int(d / ms), true
}

// label names window k by its time range, the end's date left out when it
// is the start's: 2026-11-24T09:00:00Z..09:05:00Z.
func (g grid) label(k int) string {
	from, to := g.end(k).Add(-g.step), g.end(k)
	layout := "15:04:05.999Z07:00"
	if from.YearDay() != to.YearDay() || from.Year() != to.Year() {
		layout = "2006-01-02T15:04:05.999Z07:00"
	}
	return from.Format("2006-01-02T15:04:05.999Z07:00") + ".." + to.Format(layout)
}

// span is the whole range, for messages.
func (g grid) span() string {
	return g.start.Format(time.RFC3339) + ".." + g.end(g.n-1).Format(time.RFC3339)
}

// stepValues is one query's value at each window's end.
type stepValues struct {
	query string
	v     []float64
	ok    []bool // a sample at that step
	n     int    // steps with a sample
}

// rangeQuery evaluates q at every window's end, in pieces of maxPoints
// windows, and calls f with each sample.
func (p *prom) rangeQuery(ctx context.Context, q string, g grid, f func(m model.Metric, k int, v float64) error) error {
	for lo := 0; lo < g.n; lo += maxPoints {
		hi := min(g.n, lo+maxPoints)
		qctx, cancel, d := p.bound(ctx, rangeTimeout)
		v, _, _, err := p.api.QueryRange(qctx, q, v1.Range{Start: g.end(lo), End: g.end(hi - 1), Step: g.step})
		cancel()
		if err != nil {
			err = late(ctx, d, err)
			if qe := p.queryError(q, err); errors.As(qe, new(errQuery)) {
				return qe
			}
			return fmt.Errorf("query %s over %s: %w", q, g.span(), err)
		}
		m, ok := v.(model.Matrix)
		if !ok {
			return errQuery{fmt.Errorf("query %s: a %s; want a number per step", q, v.Type())}
		}
		for _, s := range m {
			if len(s.Histograms) > 0 {
				return errQuery{fmt.Errorf("query %s: native histograms; want numbers: take histogram_sum or histogram_count", q)}
			}
			for _, pt := range s.Values {
				k, ok := g.index(pt.Timestamp)
				if !ok {
					return fmt.Errorf("query %s: a sample at %s, off the windows' ends", q, pt.Timestamp.Time().UTC().Format(time.RFC3339Nano))
				}
				if err := f(s.Metric, k, float64(pt.Value)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// values evaluates q at every window's end. Series that follow one another
// (a label that changed with a restart) make one; two at the same step are
// an error, as RunExperiment's.
func (p *prom) values(ctx context.Context, q string, g grid) (*stepValues, error) {
	sv := &stepValues{query: q, v: make([]float64, g.n), ok: make([]bool, g.n)}
	from := make([]model.Metric, g.n)
	err := p.rangeQuery(ctx, q, g, func(m model.Metric, k int, v float64) error {
		if sv.ok[k] {
			return errQuery{fmt.Errorf("query %s: several series at %s (%s, %s, ...); want one number per server: aggregate with sum() or narrow the selector",
				q, g.end(k).Format(time.RFC3339), from[k], m)}
		}
		sv.v[k], sv.ok[k], from[k] = v, true, m
		sv.n++
		return nil
	})
	return sv, err
}

// reader reads one call's queries, each once.
type reader struct {
	r     *Runner
	g     grid
	cache map[string]*stepValues
}

// read returns field's query over the range. A query that finds nothing at
// any step is an error when required, naming the metrics Prometheus has no
// series of; otherwise it reads as 0 (a counter that never moved has no series
// yet), with a warning for each absent metric.
func (rd *reader) read(ctx context.Context, who, field, query string, vars map[string]string, required bool) (*stepValues, error) {
	if query == "" {
		return nil, nil
	}
	q, err := expand(query, vars)
	if err != nil {
		return nil, errQuery{fmt.Errorf("%s: %w", field, err)}
	}
	sv, ok := rd.cache[q]
	if !ok {
		if sv, err = rd.r.prom.values(ctx, q, rd.g); err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		rd.cache[q] = sv
	}
	if sv.n > 0 {
		return sv, nil
	}
	missing, err := rd.absent(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	if required {
		if len(missing) > 0 {
			return nil, fmt.Errorf("%s: Prometheus has no series of %s over %s (query %s): does the exporter expose it?",
				field, strings.Join(missing, ", "), rd.g.span(), q)
		}
		return nil, fmt.Errorf("%s: query %s has no sample over %s: its labels match no series", field, q, rd.g.span())
	}
	for _, m := range missing {
		if !rd.r.absent[m] {
			rd.r.logf("warning: %s: %s: Prometheus has no series of %s over %s: read as 0 (does the exporter expose it?)", who, field, m, rd.g.span())
			if rd.r.absent == nil {
				rd.r.absent = map[string]bool{}
			}
			rd.r.absent[m] = true
		}
	}
	zero := &stepValues{query: q, v: make([]float64, rd.g.n), ok: make([]bool, rd.g.n), n: rd.g.n}
	for k := range zero.ok {
		zero.ok[k] = true
	}
	return zero, nil
}

// absent names the metrics of query q of which Prometheus has no series at
// all over the range; it asks the series index, which reads no samples.
func (rd *reader) absent(ctx context.Context, q string) ([]string, error) {
	var out []string
	for _, name := range metricNames(q) {
		qctx, cancel, d := rd.r.prom.bound(ctx, seriesTimeout)
		series, _, _, err := rd.r.prom.api.Series(qctx, []string{name}, rd.g.start, rd.g.end(rd.g.n-1), v1.WithLimit(1))
		cancel()
		if err != nil {
			err = late(ctx, d, err)
			return nil, fmt.Errorf("series of %s over %s: %w", name, rd.g.span(), err)
		}
		if len(series) == 0 {
			out = append(out, name)
		}
	}
	return out, nil
}

// counterSelector finds the range-vector selector inside rate(), irate() or
// increase(): a metric name with its label matchers (quoted values may hold
// braces).
var counterSelector = regexp.MustCompile(`\b(?:rate|irate|increase)\s*\(\s*([A-Za-z_:][A-Za-z0-9_:]*(?:\s*\{(?:[^}"]|"(?:[^"\\]|\\.)*")*\})?)\s*\[`)

// counterLabel tells the counters of one resets query apart.
const counterLabel = "softalloc_counter"

// resets finds, in one range query, the windows in which a counter of the
// given queries went down (a restarted process): a rate over such a window
// straddles two processes. It returns per window the counters that reset.
func (rd *reader) resets(ctx context.Context, queries []string) ([][]string, error) {
	var counters []string
	seen := map[string]bool{}
	for _, q := range queries {
		for _, m := range counterSelector.FindAllStringSubmatch(q, -1) {
			if sel := strings.TrimSpace(m[1]); !seen[sel] {
				seen[sel] = true
				counters = append(counters, sel)
			}
		}
	}
	if len(counters) == 0 {
		return nil, nil
	}
	// One query for all: each counter's resets summed over its series and
	// tagged with its index, only where there were any.
	parts := make([]string, len(counters))
	for i, c := range counters {
		parts[i] = fmt.Sprintf(`(sum by (%s) (label_replace(resets(%s[%dms]), %q, "%d", "", "")) > 0)`,
			counterLabel, c, rd.g.step.Milliseconds(), counterLabel, i)
	}
	q := strings.Join(parts, " or ")
	out := make([][]string, rd.g.n)
	err := rd.r.prom.rangeQuery(ctx, q, rd.g, func(m model.Metric, k int, v float64) error {
		i, err := strconv.Atoi(string(m[counterLabel]))
		if err != nil || i < 0 || i >= len(counters) {
			return fmt.Errorf("resets query %s: a series %s without a counter's index", q, m)
		}
		if v > 0 {
			out[k] = append(out[k], counters[i])
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("counter resets: %w", err)
	}
	return out, nil
}

// reading is a value at one window, or why there is none.
func (sv *stepValues) at(k int) (float64, string) {
	switch v := sv.v[k]; {
	case !sv.ok[k]:
		return 0, "no sample of " + sv.query + " (a gap in its series)"
	case math.IsNaN(v):
		return 0, sv.query + " is NaN"
	case math.IsInf(v, 0):
		return 0, fmt.Sprintf("%s is %v", sv.query, v)
	default:
		return v, ""
	}
}

// serverReads are one server's queries over the range.
type serverReads struct {
	name, tier                   string
	cores                        string // {cores}, for a utilisation's hint
	cpu, throttled, gc, tput, rt *stepValues
	resources                    map[string]*stepValues
	pools                        []poolReads
	resets                       [][]string
}

type poolReads struct {
	name                  string
	busy, size, fullShare *stepValues
}

func (rd *reader) server(ctx context.Context, t algorithms.Tier, i int, q Queries, vars map[string]string) (*serverReads, error) {
	s := &serverReads{name: t.ServerName(i), tier: t.Name, cores: vars["cores"]}
	var queries []string
	read := func(field, query string, required bool) (*stepValues, error) {
		sv, err := rd.read(ctx, s.name, field, query, vars, required)
		if sv != nil {
			queries = append(queries, sv.query)
		}
		return sv, err
	}
	var err error
	if s.cpu, err = read("cpu", q.CPU, true); err != nil {
		return nil, err
	}
	if s.throttled, err = read("throttled", q.Throttled, false); err != nil {
		return nil, err
	}
	if s.gc, err = read("gcShare", q.GCShare, false); err != nil {
		return nil, err
	}
	if s.tput, err = read("throughput", q.Throughput, false); err != nil {
		return nil, err
	}
	if s.rt, err = read("responseTime", q.ResponseTime, false); err != nil {
		return nil, err
	}
	for _, name := range sortedKeys(q.Resources) {
		sv, err := read("resources."+name, q.Resources[name], true)
		if err != nil {
			return nil, err
		}
		if s.resources == nil {
			s.resources = map[string]*stepValues{}
		}
		s.resources[name] = sv
	}
	for _, name := range sortedKeys(q.Pools) {
		pq := q.Pools[name]
		if pq.Busy == "" {
			continue
		}
		p := poolReads{name: name}
		if p.busy, err = read("pools."+name+".busy", pq.Busy, false); err != nil {
			return nil, err
		}
		if p.size, err = read("pools."+name+".size", pq.Size, false); err != nil {
			return nil, err
		}
		if p.fullShare, err = read("pools."+name+".fullShare", pq.FullShare, false); err != nil {
			return nil, err
		}
		s.pools = append(s.pools, p)
	}
	if s.resets, err = rd.resets(ctx, queries); err != nil {
		return nil, err
	}
	return s, nil
}

// at is the server's observation in window k, and its problems there.
func (s *serverReads) at(k int) (algorithms.ServerObservation, []string) {
	o := algorithms.ServerObservation{Name: s.name, Tier: s.tier}
	var problems []string
	// get reads an optional field (nil: no query, 0); idle says a NaN there is
	// 0/0 in a window in which nothing happened.
	get := func(field string, sv *stepValues, idle bool) float64 {
		if sv == nil {
			return 0
		}
		v, p := sv.at(k)
		if p != "" && !(idle && math.IsNaN(sv.v[k]) && sv.ok[k]) {
			problems = append(problems, s.name+": "+field+": "+p)
		}
		return v
	}
	// util reads a utilisation: outside [0, 1] by more than
	// ShareTolerance (a query in cores) it is the window's problem.
	util := func(field string, sv *stepValues, idle bool) float64 {
		v := get(field, sv, idle)
		if sv == nil || !sv.ok[k] || math.IsNaN(sv.v[k]) || math.IsInf(sv.v[k], 0) {
			return v // 0, and its problem if any already noted
		}
		u, p := share(field, sv.query, v, s.cores)
		if p != "" {
			problems = append(problems, s.name+": "+field+": "+p)
		}
		return u
	}
	// count reads a figure that cannot be negative.
	count := func(field string, sv *stepValues, idle bool) float64 {
		v := get(field, sv, idle)
		if sv == nil || !sv.ok[k] {
			return v
		}
		n, p := nonNegative(sv.query, v)
		if p != "" {
			problems = append(problems, s.name+": "+field+": "+p)
		}
		return n
	}
	o.CPU = util("cpu", s.cpu, false)
	o.Throttled = util("throttled", s.throttled, s.cpu.ok[k] && s.cpu.v[k] == 0)
	o.GCShare = util("gcShare", s.gc, false)
	o.Throughput = count("throughput", s.tput, false)
	idle := s.tput != nil && s.tput.ok[k] && s.tput.v[k] == 0
	o.ResponseTime = count("responseTime", s.rt, idle)
	for _, name := range sortedKeys(s.resources) {
		if o.Resources == nil {
			o.Resources = map[string]float64{}
		}
		o.Resources[name] = util("resources."+name, s.resources[name], false)
	}
	for _, pr := range s.pools {
		p := algorithms.PoolObservation{Name: pr.name, FullShare: -1}
		p.Busy = count("pools."+pr.name+".busy", pr.busy, false)
		p.Size = int(math.Round(count("pools."+pr.name+".size", pr.size, false)))
		if p.Size > 0 {
			p.Busy = min(p.Busy, float64(p.Size))
		}
		if pr.fullShare != nil {
			p.FullShare = util("pools."+pr.name+".fullShare", pr.fullShare, false)
		}
		o.Pools = append(o.Pools, p)
	}
	if s.resets != nil && len(s.resets[k]) > 0 {
		problems = append(problems, fmt.Sprintf("%s: counter reset in %s (a restarted process): the window's rates straddle two processes",
			s.name, strings.Join(s.resets[k], ", ")))
	}
	return o, problems
}

// pageReads are the deployment's page figures over the range.
type pageReads struct {
	tput, rt, users *stepValues
	// front is the first tier's name when its servers' throughput stands in
	// for the page throughput.
	front  string
	resets [][]string
}

func (rd *reader) pages(ctx context.Context, front algorithms.Tier, servers []*serverReads, window string) (*pageReads, error) {
	pc := rd.r.cfg.Pages
	vars := map[string]string{"window": window, "windowSeconds": windowSeconds(window)}
	p := &pageReads{}
	var err error
	// A throughput query set is the figure everything else is per: required.
	if p.tput, err = rd.read(ctx, "pages", "pages.throughput", pc.Throughput, vars, true); err != nil {
		return nil, err
	}
	if p.tput == nil {
		for _, s := range servers {
			if s.tier == front.Name && s.tput == nil {
				return nil, fmt.Errorf("runner section: no pages.throughput query and tier %s has no throughput query: want one of them (page throughput in each window)", front.Name)
			}
		}
		p.front = front.Name
		rd.r.logf("pages.throughput is not set: page throughput is the sum of tier %s's servers' throughput (requests, not pages, if a page makes several requests to it)", front.Name)
	}
	if p.rt, err = rd.read(ctx, "pages", "pages.responseTime", pc.ResponseTime, vars, false); err != nil {
		return nil, err
	}
	if p.users, err = rd.read(ctx, "pages", "pages.users", pc.Users, vars, false); err != nil {
		return nil, err
	}
	var queries []string
	for _, sv := range []*stepValues{p.tput, p.rt, p.users} {
		if sv != nil {
			queries = append(queries, sv.query)
		}
	}
	if p.resets, err = rd.resets(ctx, queries); err != nil {
		return nil, fmt.Errorf("pages: %w", err)
	}
	return p, nil
}

// at is window k's page throughput, response time and users, and its
// problems there (a front server's own are the server's).
func (p *pageReads) at(k int, servers []*serverReads) (tput, rt, users float64, problems []string) {
	get := func(field string, sv *stepValues, idle bool) float64 {
		if sv == nil {
			return 0
		}
		v, pr := sv.at(k)
		if pr != "" && !(idle && math.IsNaN(sv.v[k]) && sv.ok[k]) {
			problems = append(problems, "pages: "+field+": "+pr)
		}
		if pr == "" {
			n, pr := nonNegative(sv.query, v)
			if pr != "" {
				problems = append(problems, "pages: "+field+": "+pr)
			}
			v = n
		}
		return v
	}
	if p.front != "" {
		// A front server's negative throughput is its own problem (at).
		for _, s := range servers {
			if s.tier == p.front && s.tput.ok[k] && !math.IsNaN(s.tput.v[k]) && !math.IsInf(s.tput.v[k], 0) {
				tput += max(0, s.tput.v[k])
			}
		}
	} else {
		tput = get("throughput", p.tput, false)
	}
	rt = get("responseTime", p.rt, tput == 0)
	users = get("users", p.users, false)
	if p.resets != nil && len(p.resets[k]) > 0 {
		problems = append(problems, fmt.Sprintf("pages: counter reset in %s (a restarted process): the window's rates straddle two processes",
			strings.Join(p.resets[k], ", ")))
	}
	return tput, rt, users, problems
}
