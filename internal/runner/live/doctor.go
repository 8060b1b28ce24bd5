package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/oneline"
)

// DoctorOptions say how Doctor probes the deployment.
type DoctorOptions struct {
	// Probe is how many pages of the workload the load generator sends
	// before the readings (0: none, and the check of each tier's throughput
	// against the pages sent is skipped).
	Probe int
	// ProbeRate is the probe's pages per second (default DefaultProbeRate):
	// low, so that the probe reads the deployment's units, not its capacity.
	ProbeRate float64
}

// Doctor's defaults.
const (
	DefaultProbe     = 10
	DefaultProbeRate = 2.0
	// idleRequests is how many requests a front tier may count in a window
	// with no load and still read as idle: rate()'s extrapolation at the
	// window's edges makes up to about one of nothing (apacheServed's rule).
	idleRequests = 2.0
	// slowFactor bounds a tier's mean residence per request against the
	// probe's slowest page (minSlowest at least, for a page served in
	// microseconds): seconds read as milliseconds are 1000x.
	slowFactor = 10.0
	minSlowest = 0.01
)

// DoctorReport is what Doctor read of every query of the runner section.
type DoctorReport struct {
	Prometheus string `json:"prometheus"`
	// At is when the readings were taken, and Window the {window} they used:
	// the probe's span with a probe, else the section's runtime.
	At      time.Time      `json:"at"`
	Window  string         `json:"window"`
	Probe   DoctorProbe    `json:"probe"`
	Servers []DoctorServer `json:"servers"`
	// Pages are the section's page queries (what advise reads).
	Pages []DoctorReading `json:"pages"`
	// Problems would make a campaign fail or mislead; each is one line
	// naming the server, the field, the query as sent and the fix.
	Problems []string `json:"problems"`
	// Warnings are worth knowing and mislead nothing a campaign reads.
	Warnings []string `json:"warnings"`
}

// OK says whether a campaign can rely on what the section reads.
func (r DoctorReport) OK() bool { return len(r.Problems) == 0 }

// DoctorProbe is what the probe sent.
type DoctorProbe struct {
	// Skipped says no probe ran (--probe 0): throughputs were not compared
	// with pages sent.
	Skipped bool   `json:"skipped"`
	Target  string `json:"target,omitempty"`
	// Pages completed, and the requests sent for them (each page and its
	// embedded requests); Failed pages, by cause.
	Pages    int64       `json:"pages"`
	Requests int64       `json:"requests"`
	Failed   ErrorCounts `json:"failed"`
	Seconds  float64     `json:"seconds"`
	// SlowestPage is the longest a completed page took at the load
	// generator, in seconds: no server's mean residence per request can
	// be longer (a page's requests reach each tier within it).
	SlowestPage float64 `json:"slowestPageSeconds"`
}

// DoctorServer is one server's readings.
type DoctorServer struct {
	Tier     string          `json:"tier"`
	Server   string          `json:"server"`
	Readings []DoctorReading `json:"readings"`
}

// Reading statuses.
const (
	StatusOK      = "ok"
	StatusWarning = "warning"
	StatusProblem = "problem"
)

// DoctorReading is one query's value.
type DoctorReading struct {
	Field string `json:"field"`
	// Query is the query as sent, its placeholders expanded.
	Query string `json:"query"`
	// Value is nil when there is none (no series, NaN, an error): Note says why.
	Value  *float64 `json:"value"`
	Unit   string   `json:"unit"`
	Status string   `json:"status"`
	Note   string   `json:"note,omitempty"`
	// Idle is a throughput's reading before the probe, over the section's
	// runtime; PerPage its increase over the probe per page sent.
	Idle    *float64 `json:"idle,omitempty"`
	PerPage *float64 `json:"perPage,omitempty"`
}

// Doctor runs every query of the runner section now, against e's
// deployment and allocation, and says of each value whether a campaign can
// rely on it: a utilisation in other units (a CPU in cores), a pool busier
// than its size, a series Prometheus lacks, a counter reset in the window,
// and, with a probe of o.Probe pages from the load generator, a throughput
// that counts what the pages do not send (the exporter's own scrapes,
// requests counted as pages). Each problem names the query as sent and the
// fix. An error is a runner section a campaign would refuse (a
// configuration error), or a Prometheus that cannot be asked.
func (r *Runner) Doctor(ctx context.Context, d algorithms.Deployment, a algorithms.Allocation, o DoctorOptions) (DoctorReport, error) {
	rep := DoctorReport{Prometheus: r.cfg.Prometheus, Probe: DoctorProbe{Skipped: o.Probe == 0}}
	if o.Probe < 0 {
		return rep, fmt.Errorf("probe %d: want a number of pages >= 0", o.Probe)
	}
	if o.ProbeRate == 0 {
		o.ProbeRate = DefaultProbeRate
	}
	if !(o.ProbeRate > 0) || math.IsInf(o.ProbeRate, 0) {
		return rep, fmt.Errorf("probe rate %v: want pages per second > 0", o.ProbeRate)
	}
	if len(d.Tiers) == 0 {
		return rep, fmt.Errorf("the deployment has no tiers")
	}
	e := algorithms.Experiment{Deployment: d, Allocation: a}
	if err := r.CheckExperiment(e); err != nil {
		return rep, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.CheckSizing(e, "recommend"); err != nil {
		rep.Problems = append(rep.Problems, err.Error())
	}

	start := time.UnixMilli(time.Now().UnixMilli())
	runtime := r.cfg.Runtime.Duration()

	// What a trial's window can hold: a window of fewer than two scrapes
	// has no rate(), and every query of every trial reads nothing.
	scrape, down, err := r.targets(ctx)
	if err != nil {
		return rep, err
	}
	// A target whose scrapes fail reads nothing: say so once, before each
	// of its queries says it returned nothing.
	for _, t := range down {
		msg := fmt.Sprintf("prometheus: target %s (job %s) is down: %s", t.instance, t.job, t.lastError)
		if t.ours {
			rep.Problems = append(rep.Problems, msg+"; every query of it reads nothing")
		} else {
			rep.Warnings = append(rep.Warnings, msg+" (no servers entry names it)")
		}
	}
	// An exporter that answers but cannot read its server (Apache without
	// its status page: the exporter counts scrape failures) leaves every
	// query of it empty too.
	isDown := map[string]bool{}
	for _, t := range down {
		isDown[t.instance] = true
	}
	for _, inst := range r.instances() {
		if why := r.exporterDown(ctx, inst, start); why != "" && !isDown[inst] {
			rep.Problems = append(rep.Problems, "prometheus: "+why+"; every query of it reads nothing")
		}
	}
	interval := max(r.cfg.Interval.Duration(), scrape)
	if scrape > 0 && runtime < 2*scrape {
		rep.Problems = append(rep.Problems, fmt.Sprintf("runner section: runtime: %v, a trial's window ({window}), is shorter than two of Prometheus's scrape intervals (%v): rate() over it has fewer than two samples; set runtime to at least %v",
			runtime, scrape, 2*scrape))
	}
	if scrape > 0 && r.cfg.Interval.Duration() < scrape {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("runner section: interval: %v is shorter than Prometheus's scrape interval (%v): an adaptive trial's intervals read the same samples twice; set interval to %v",
			r.cfg.Interval.Duration(), scrape, scrape))
	}

	// Before any load: each throughput over a quiet span of doctor's own,
	// a few scrapes long, so that what a tier counts with no pages is seen;
	// a window reaching back before doctor started would count a campaign
	// that ended a moment ago as other clients.
	idleSpan := max(4*interval, 5*time.Second)
	if !sleepUntil(ctx, start.Add(idleSpan)) {
		return rep, ctx.Err()
	}
	idleAt := time.UnixMilli(time.Now().UnixMilli())
	if err := r.prom.waitScraped(ctx, idleAt, r.cfg.ScrapeTimeout.Duration()); err != nil {
		return rep, err
	}
	idleWindow := fmt.Sprintf("%dms", idleAt.Sub(start).Milliseconds())
	idle := map[string]idleReading{} // by server
	for _, t := range d.Tiers {
		tc, q, _ := r.tier(t) // checked by CheckExperiment
		for i := 0; i < t.Replicas; i++ {
			if q.Throughput == "" {
				continue
			}
			pq, _ := expand(q.Throughput, serverVars(t, i, tc, idleWindow))
			if v, err := r.prom.value(ctx, pq, idleAt); err == nil && !math.IsNaN(v) && !math.IsInf(v, 0) {
				idle[t.ServerName(i)] = idleReading{pq, v}
			}
		}
	}

	var pagesIdle float64
	if q := r.cfg.Pages.Throughput; q != "" {
		pq, _ := expand(q, map[string]string{"window": idleWindow, "windowSeconds": windowSeconds(idleWindow)})
		if v, err := r.prom.value(ctx, pq, idleAt); err == nil && !math.IsNaN(v) && !math.IsInf(v, 0) {
			pagesIdle = v
		}
	}

	at, window := start, runtime
	if o.Probe > 0 {
		// The readings span the probe with two scrape intervals on either
		// side, so that every request it sent is in them whatever the scrapes'
		// phase; rate() needs a few samples in the window.
		margin := 2 * interval
		span := max(time.Duration(float64(o.Probe)/o.ProbeRate*float64(time.Second)), 4*interval)
		from := time.Now()
		if !sleepUntil(ctx, from.Add(margin)) {
			return rep, ctx.Err()
		}
		p, err := r.probe(ctx, o.Probe, span/time.Duration(o.Probe))
		if err != nil {
			return rep, err
		}
		rep.Probe = p
		at = time.UnixMilli(time.Now().Add(margin).UnixMilli())
		window = at.Sub(from).Round(time.Millisecond)
		if !sleepUntil(ctx, at) {
			return rep, ctx.Err()
		}
		if err := r.prom.waitScraped(ctx, at, r.cfg.ScrapeTimeout.Duration()); err != nil {
			return rep, err
		}
		if f := p.Failed.Total(); f > 0 {
			rep.Problems = append(rep.Problems, fmt.Sprintf("probe: %d of %d pages sent to %s failed (%s): a campaign's trials would fail the same way; is the target up, and are the workload's paths its pages?",
				f, f+p.Pages, r.cfg.Target, failures(p.Failed)))
		}
	}
	rep.At, rep.Window = at.UTC(), fmt.Sprintf("%dms", window.Milliseconds())

	dr := &doctorRun{r: r, rep: &rep, at: at, window: rep.Window, idle: idle, idleSeconds: idleAt.Sub(start).Seconds(), pagesIdle: pagesIdle}
	for ti, t := range d.Tiers {
		tc, q, _ := r.tier(t)
		for i := 0; i < t.Replicas; i++ {
			s, err := dr.server(ctx, t, i, tc, q, a[t.Name], ti == 0)
			if err != nil {
				return rep, err
			}
			rep.Servers = append(rep.Servers, s)
		}
	}
	if err := dr.frontTier(d.Tiers[0]); err != nil {
		return rep, err
	}
	if err := dr.pages(ctx, d.Tiers[0]); err != nil {
		return rep, err
	}
	if rep.Probe.Skipped {
		rep.Warnings = append(rep.Warnings, "probe: skipped (--probe 0): no throughput was compared with pages sent, so one that counts requests rather than pages, or not this server's, goes unseen")
	}
	return rep, nil
}

// downTarget is a target whose last scrape failed; ours when a servers
// entry of the section names its instance. duration is how long that
// scrape took (lastScrapeDuration, scrape_duration_seconds's last sample)
// and timeout the target's scrape timeout (0 when Prometheus, before 2.30,
// does not say).
type downTarget struct {
	job, instance, lastError string
	ours                     bool
	duration, timeout        time.Duration
}

// targets reads Prometheus's active targets: the scrape interval of those
// the section's servers name (their instance), or of all when it names
// none (0 when an older Prometheus does not say), and the targets down.
func (r *Runner) targets(ctx context.Context) (time.Duration, []downTarget, error) {
	ctx, cancel, d := r.prom.bound(ctx, instantTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(r.cfg.Prometheus, "/")+"/api/v1/targets?state=active", nil)
	if err != nil {
		return 0, nil, fmt.Errorf("prometheus targets: %w", err)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("prometheus targets: %w", late(ctx, d, err))
	}
	defer resp.Body.Close()
	var body struct {
		Data struct {
			ActiveTargets []struct {
				Labels         map[string]string `json:"labels"`
				ScrapeInterval string            `json:"scrapeInterval"`
				ScrapeTimeout  string            `json:"scrapeTimeout"`
				Health         string            `json:"health"`
				LastError      string            `json:"lastError"`
				// Seconds.
				LastScrapeDuration float64 `json:"lastScrapeDuration"`
			} `json:"activeTargets"`
		} `json:"data"`
	}
	if resp.StatusCode != http.StatusOK {
		return 0, nil, fmt.Errorf("prometheus targets: %s answered %s (is it the Prometheus URL?)", r.cfg.Prometheus, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxPromBody)).Decode(&body); err != nil {
		return 0, nil, fmt.Errorf("prometheus targets: %s did not answer as Prometheus's HTTP API does (is it the Prometheus URL?): %w", r.cfg.Prometheus, err)
	}
	named := map[string]bool{}
	for _, t := range r.cfg.Tiers {
		for _, s := range t.Servers {
			for _, v := range s {
				named[v] = true
			}
		}
	}
	var ours, all time.Duration
	var down []downTarget
	for _, t := range body.Data.ActiveTargets {
		inst := t.Labels["instance"]
		if t.Health == "down" {
			dt := downTarget{job: t.Labels["job"], instance: inst, lastError: oneline.Shorten(t.LastError, 300), ours: named[inst],
				duration: time.Duration(t.LastScrapeDuration * float64(time.Second))}
			if to, err := model.ParseDuration(t.ScrapeTimeout); err == nil {
				dt.timeout = time.Duration(to)
			}
			down = append(down, dt)
		}
		iv, err := model.ParseDuration(t.ScrapeInterval)
		if err != nil {
			continue // an older Prometheus does not say
		}
		all = max(all, time.Duration(iv))
		if named[inst] {
			ours = max(ours, time.Duration(iv))
		}
	}
	if ours > 0 {
		return ours, down, nil
	}
	return all, down, nil
}

// failures names the causes of failed pages.
func failures(e ErrorCounts) string {
	var s []string
	for _, c := range []struct {
		n    int64
		what string
	}{{e.Refused, "refused"}, {e.TimedOut, "timed out"}, {e.ServerErrors, "5xx"}, {e.Other, "other"}} {
		if c.n > 0 {
			s = append(s, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	return strings.Join(s, ", ")
}

// probe sends n pages of the workload, one user walking it as a trial's
// users do, one page every spacing.
func (r *Runner) probe(ctx context.Context, n int, spacing time.Duration) (DoctorProbe, error) {
	p := DoctorProbe{Target: r.cfg.Target}
	tr := r.newTransport(1, *r.cfg.KeepAlive)
	defer tr.CloseIdleConnections()
	l := &Load{Workload: r.workload, Target: r.target, RequestTimeout: r.cfg.RequestTimeout.Duration(), Transport: tr}
	client := &http.Client{Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	u := user{l: l, client: client, r: rand.New(rand.NewPCG(r.cfg.Seed, 0)),
		count: func() bool { p.Requests++; return true }}
	s := session{hist: make([]int, 0, 8)}
	begin(r.workload, &s)
	t0 := time.Now()
	for i := 0; i < n; i++ {
		if !sleepUntil(ctx, t0.Add(time.Duration(i)*spacing)) {
			return p, ctx.Err()
		}
		began := time.Now()
		switch u.page(ctx, s.state) {
		case ok:
			p.Pages++
			p.SlowestPage = max(p.SlowestPage, time.Since(began).Seconds())
		case refused:
			p.Failed.Refused++
		case timedOut:
			p.Failed.TimedOut++
		case serverError:
			p.Failed.ServerErrors++
		case cut:
			return p, ctx.Err()
		default:
			p.Failed.Other++
		}
		step(r.workload, &s, u.r)
	}
	p.Seconds = time.Since(t0).Seconds()
	return p, nil
}

// idleReading is a throughput read before any load: the query as sent, its value.
type idleReading struct {
	query string
	v     float64
}

// doctorRun is one Doctor's readings in progress.
type doctorRun struct {
	r           *Runner
	rep         *DoctorReport
	at          time.Time
	window      string
	idle        map[string]idleReading
	idleSeconds float64
	// front are the first tier's throughput readings, for the probe's check.
	front []*DoctorReading
	// pagesIdle is the page throughput before any load: another client's
	// pages then count beside the probe's, and its count over the probe says
	// nothing of its units.
	pagesIdle float64
}

func (dr *doctorRun) problem(who string, rd *DoctorReading, msg string) {
	rd.Status, rd.Note = StatusProblem, msg
	dr.rep.Problems = append(dr.rep.Problems, who+": "+rd.Field+": "+msg)
}

func (dr *doctorRun) warn(who string, rd *DoctorReading, msg string) {
	if rd.Status != StatusProblem {
		rd.Status, rd.Note = StatusWarning, msg
	}
	dr.rep.Warnings = append(dr.rep.Warnings, who+": "+rd.Field+": "+msg)
}

// read evaluates one query; the reading's Value is nil when it gave none,
// and the problem (a missing series, an error) is then already noted.
func (dr *doctorRun) read(ctx context.Context, who, field, query string, vars map[string]string) (DoctorReading, error) {
	why, optional := optional[field]
	rd := DoctorReading{Field: field, Unit: unitOf(field, vars["cores"]), Status: StatusOK}
	pq, err := expand(query, vars)
	if err != nil {
		rd.Query = query
		dr.problem(who, &rd, err.Error())
		return rd, nil
	}
	rd.Query = pq
	v, err := dr.r.prom.value(ctx, pq, dr.at)
	switch {
	case errors.Is(err, errNoData):
		missing := dr.r.absentMetrics(ctx, pq, dr.at)
		msg := fmt.Sprintf("query %s returned nothing", pq)
		if len(missing) > 0 {
			msg += fmt.Sprintf(": Prometheus has no series of %s; does the exporter expose it (under that name, in its version), and does Prometheus scrape it?",
				strings.Join(missing, ", "))
		} else {
			msg += fmt.Sprintf(" while its metrics have series: its labels match none; check the servers entry's values (%s) against the labels Prometheus has",
				serverValues(vars))
		}
		if optional {
			dr.warn(who, &rd, msg+" ("+why+")")
		} else {
			dr.problem(who, &rd, msg)
		}
		return rd, nil
	case errors.As(err, new(errQuery)):
		dr.problem(who, &rd, err.Error())
		return rd, nil
	case err != nil:
		return rd, err // Prometheus cannot be asked: nothing else can be read either
	}
	switch {
	case math.IsNaN(v) && (optional || field == "responseTime" || field == "throttled" || strings.HasSuffix(field, ".fullShare")):
		rd.Note = "NaN: 0/0, nothing happened in the window (a campaign reads it as 0)"
		return rd, nil
	case math.IsNaN(v), math.IsInf(v, 0):
		dr.problem(who, &rd, fmt.Sprintf("query %s read %v: want a finite number", pq, v))
		return rd, nil
	}
	rd.Value = &v
	if isShare(field) {
		if _, p := share(field, pq, v, vars["cores"]); p != "" {
			dr.problem(who, &rd, p)
		}
	} else if _, p := nonNegative(pq, v); p != "" {
		dr.problem(who, &rd, p)
	}
	return rd, nil
}

// server reads every query of server i of tier t.
func (dr *doctorRun) server(ctx context.Context, t algorithms.Tier, i int, tc TierConfig, q Queries, alloc algorithms.TierPools, front bool) (DoctorServer, error) {
	who := t.ServerName(i)
	vars := serverVars(t, i, tc, dr.window)
	s := DoctorServer{Tier: t.Name, Server: who}
	var err error
	var sent []string
	q.each(func(field, query string) {
		if err != nil {
			return
		}
		var rd DoctorReading
		rd, err = dr.read(ctx, who, field, query, vars)
		sent = append(sent, rd.Query)
		s.Readings = append(s.Readings, rd)
	})
	if err != nil {
		return s, fmt.Errorf("%s: %w", who, err)
	}
	for k := range s.Readings {
		rd := &s.Readings[k]
		if rd.Field == "throughput" {
			// With no probe the readings are the idle ones.
			if idle, ok := dr.idle[who]; ok && !dr.rep.Probe.Skipped {
				rd.Idle = &idle.v
			}
			if front {
				dr.front = append(dr.front, rd)
			} else if rd.Value != nil && !dr.rep.Probe.Skipped && dr.rep.Probe.Pages > 0 {
				perPage := dr.increase(rd) / float64(dr.rep.Probe.Pages)
				rd.PerPage = &perPage
				if !(perPage > 0) {
					dr.warn(who, rd, fmt.Sprintf("query %s did not move with the %d pages the probe sent: does it select this server, or did no page of the probe reach it (a static page)?",
						rd.Query, dr.rep.Probe.Pages))
				}
			}
		}
	}
	// A mean residence longer than the slowest page the probe saw counts
	// other units (milliseconds) or other requests.
	if p := dr.rep.Probe; !p.Skipped && p.Pages > 0 {
		for k := range s.Readings {
			rd := &s.Readings[k]
			if rd.Field == "responseTime" && rd.Value != nil && *rd.Value > slowFactor*max(p.SlowestPage, minSlowest) {
				dr.problem(who, rd, fmt.Sprintf("query %s read %s s per request, while the probe's slowest page took %s s at the client: more than %gx longer, it is in other units (milliseconds? divide by 1000) or counts other requests (a background job's)",
					rd.Query, fmtNum(*rd.Value), fmtNum(p.SlowestPage), slowFactor))
			}
		}
	}
	// A pool cannot be busier than it is large: busy then counts other units
	// (several servers, another pool) or size reads another limit.
	for _, name := range sortedKeys(q.Pools) {
		var busy, size *DoctorReading
		for k := range s.Readings {
			switch s.Readings[k].Field {
			case "pools." + name + ".busy":
				busy = &s.Readings[k]
			case "pools." + name + ".size":
				size = &s.Readings[k]
			}
		}
		if busy == nil || busy.Value == nil {
			continue
		}
		n, from := float64(alloc.Size(name)), "the deployment file's allocation"
		if size != nil {
			if size.Value == nil {
				continue
			}
			n, from = *size.Value, "query "+size.Query
		}
		if n > 0 && *busy.Value > n*(1+ShareTolerance) {
			dr.problem(who, busy, fmt.Sprintf("query %s read %s busy for a pool of %s (%s): busy units cannot exceed the pool's size; does busy count several servers or another pool (narrow its selector to this server), or does size read another limit?",
				busy.Query, fmtNum(*busy.Value), fmtNum(n), from))
		}
	}
	// A counter that went down in the window: its rates straddle two processes.
	g := grid{start: dr.at.Add(-mustDuration(dr.window)), step: mustDuration(dr.window), n: 1}
	rs := &reader{r: dr.r, g: g, cache: map[string]*stepValues{}}
	resets, err := rs.resets(ctx, sent)
	if err != nil {
		return s, fmt.Errorf("%s: %w", who, err)
	}
	if len(resets) == 1 && len(resets[0]) > 0 {
		for k := range s.Readings {
			rd := &s.Readings[k]
			for _, c := range resets[0] {
				if strings.Contains(rd.Query, c) {
					dr.problem(who, rd, fmt.Sprintf("counter %s reset in the window (query %s): a restarted process, whose rates straddle two processes; run doctor again once it has run a whole window, and if it resets at every one, it is a gauge: read it with avg_over_time, not rate",
						c, rd.Query))
					break
				}
			}
		}
	}
	return s, nil
}

// increase is a throughput's count over the probe's readings beyond what
// the tier counted at idle over as long.
func (dr *doctorRun) increase(rd *DoctorReading) float64 {
	secs := mustDuration(dr.window).Seconds()
	n := *rd.Value * secs
	if rd.Idle != nil {
		n -= *rd.Idle * secs
	}
	return n
}

// frontTier judges the first tier's throughput: with no load it must count
// nothing, and over the probe what the probe sent (each page and its
// embedded requests), within plausible.go's visitFactor.
func (dr *doctorRun) frontTier(t algorithms.Tier) error {
	who := t.Name // the tier's servers share the pages between them
	if len(dr.front) == 1 {
		who = t.ServerName(0)
	}
	var sum float64
	all := len(dr.front) > 0
	for k, rd := range dr.front {
		if idle, ok := dr.idle[t.ServerName(k)]; ok && idle.v*dr.idleSeconds > idleRequests {
			dr.problem(t.ServerName(k), rd, fmt.Sprintf("query %s read %s requests/s before any load (%s in %gs): other clients are sending it requests, and a campaign beside them is misled (run when they have stopped), or it counts requests that are not pages (the exporter's own scrapes of a status page: leave them out as the apache preset does with apache_up's samples)",
				idle.query, fmtNum(idle.v), fmtNum(idle.v*dr.idleSeconds), dr.idleSeconds))
			// What it counts beside the probe is unknown: its count over
			// the probe says nothing more.
			all = false
		}
		if rd.Value == nil {
			all = false
			continue
		}
		sum += dr.increase(rd)
	}
	p := dr.rep.Probe
	if !all || p.Skipped || p.Pages == 0 {
		return nil
	}
	perPage := sum / float64(p.Pages)
	sent := float64(p.Requests) / float64(p.Pages+p.Failed.Total())
	for _, rd := range dr.front {
		rd.PerPage = &perPage
	}
	rd := dr.front[0]
	switch {
	case perPage > sent*visitFactor:
		dr.problem(who, rd, fmt.Sprintf("query %s counted %s requests per page over the probe's %d pages, which sent %s each (the page and its embedded requests): it counts requests that are not the pages' own (a page's requests the workload does not list, the exporter's scrapes, or other servers' requests: narrow its selector)",
			rd.Query, fmtNum(perPage), p.Pages, fmtNum(sent)))
	case perPage*visitFactor < sent:
		dr.problem(who, rd, fmt.Sprintf("query %s counted %s requests per page over the probe's %d pages, which sent %s each: it does not see the probe's requests; does it select this tier's servers, and is the runner section's target this tier?",
			rd.Query, fmtNum(perPage), p.Pages, fmtNum(sent)))
	}
	return nil
}

// pages reads the section's page queries; a page throughput must count one
// per page the probe sent, within visitFactor, not the pages' requests.
func (dr *doctorRun) pages(ctx context.Context, front algorithms.Tier) error {
	pq := dr.r.cfg.Pages
	vars := map[string]string{"window": dr.window, "windowSeconds": windowSeconds(dr.window)}
	for _, f := range []struct{ field, query string }{
		{"throughput", pq.Throughput}, {"responseTime", pq.ResponseTime}, {"users", pq.Users},
	} {
		if f.query == "" {
			continue
		}
		rd, err := dr.read(ctx, "pages", f.field, f.query, vars)
		if err != nil {
			return fmt.Errorf("pages: %w", err)
		}
		rd.Unit = map[string]string{"throughput": "pages/s", "responseTime": "s", "users": "users"}[f.field]
		dr.rep.Pages = append(dr.rep.Pages, rd)
	}
	p := dr.rep.Probe
	if p.Skipped || p.Pages == 0 {
		return nil
	}
	if pq.Throughput == "" {
		// advise takes the first tier's throughput as the pages'.
		if len(dr.front) > 0 && dr.front[0].PerPage != nil && *dr.front[0].PerPage > visitFactor {
			rd, who := dr.front[0], front.Name
			if len(dr.front) == 1 {
				who = front.ServerName(0)
			}
			dr.warn(who, rd, fmt.Sprintf("with no pages.throughput, advise takes this tier's throughput as pages/s, and it counts %s per page: set pages.throughput to a query counting pages",
				fmtNum(*rd.PerPage)))
		}
		return nil
	}
	rd := &dr.rep.Pages[0]
	if rd.Value == nil || dr.pagesIdle*dr.idleSeconds > idleRequests {
		return nil
	}
	perPage := *rd.Value * mustDuration(dr.window).Seconds() / float64(p.Pages)
	rd.PerPage = &perPage
	switch {
	case perPage > visitFactor:
		dr.problem("pages", rd, fmt.Sprintf("query %s counted %s per page over the probe's %d pages (%s requests each): it counts requests rather than pages (embedded images, the exporter's scrapes); count the pages alone (their paths, or the first tier's requests less the embedded ones)",
			rd.Query, fmtNum(perPage), p.Pages, fmtNum(float64(p.Requests)/float64(p.Pages+p.Failed.Total()))))
	case perPage*visitFactor < 1:
		dr.problem("pages", rd, fmt.Sprintf("query %s counted %s per page over the probe's %d pages: it does not see the pages the probe sent", rd.Query, fmtNum(perPage), p.Pages))
	}
	return nil
}

// isShare says whether field is a utilisation in [0, 1].
func isShare(field string) bool {
	return field == "cpu" || field == "throttled" || field == "gcShare" || strings.HasPrefix(field, "resources.") || strings.HasSuffix(field, ".fullShare")
}

// unitOf is the unit the runner reads field in (presetdoc.go's), with the
// tier's {cores} for a CPU.
func unitOf(field, cores string) string {
	if field == "cpu" {
		return queryUnit(field) + " ({cores} = " + cores + ")"
	}
	return queryUnit(field)
}

// optional are the fields whose series may be absent on a healthy
// deployment, and why: a campaign reads them as 0 (or does without them).
var optional = map[string]string{
	"gcShare":     "a campaign reads it as 0: a JVM's pause series appears at its first collection",
	"oomKills":    "a campaign reads no kill: an OOM kill counter may appear at the first kill",
	"memoryLimit": "a campaign names no limit when an OOM kill fails a trial",
}

// serverValues lists a server's own placeholder values, for a message.
func serverValues(vars map[string]string) string {
	var s []string
	for _, k := range sortedKeys(vars) {
		switch k {
		case "window", "windowSeconds", "cores":
			continue
		}
		s = append(s, fmt.Sprintf("{%s}=%s", k, vars[k]))
	}
	return strings.Join(s, ", ")
}

func mustDuration(window string) time.Duration {
	d, _ := time.ParseDuration(window)
	return d
}

func fmtNum(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
