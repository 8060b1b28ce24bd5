package live

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// upHints name, for an exporter (its metrics' prefix), the page or connection it
// reads from its server.
var upHints = map[string]string{
	"apache":    "Apache's status page (mod_status's /server-status?auto, which the exporter's --scrape_uri names)",
	"phpfpm":    "php-fpm's status page (pm.status_path or pm.status_listen)",
	"mysql":     "the database (the exporter's DSN, its user's grants)",
	"pg":        "the database (the exporter's DATA_SOURCE_NAME)",
	"pgbouncer": "PgBouncer's admin console (the exporter's connection string, stats_users)",
	"nginx":     "nginx's stub_status page",
}

// scrapeFailure says why a server's metrics are absent when the cause is
// that Prometheus cannot read them: the target its servers entry names
// ({instance}) is down (a status page that is not there answers 404), or,
// when absent says the query's metrics have no series at all, the exporter
// answers but reports that it cannot read its server (a *_up metric of
// that instance at 0: apache_exporter's apache_up when Apache has no status
// page). Reading such a server's figures as 0 would be a finding about
// nothing. "" when neither holds: the metric is absent for another reason
// (a counter that never moved). The target is asked even when other
// servers export the metric: a replica whose scrapes fail is empty alone.
// transient says the failure may heal by itself (transientScrape).
func (r *Runner) scrapeFailure(ctx context.Context, tg *downTargets, vars map[string]string, at time.Time, absent bool) (why string, transient bool) {
	inst := vars["instance"]
	if inst == "" {
		return "", false
	}
	if down, err := tg.get(ctx, r); err == nil {
		for _, t := range down {
			if t.instance != inst {
				continue
			}
			if transientScrape(t) {
				return fmt.Sprintf("Prometheus cannot scrape %s (job %s): %s: a server too busy to answer within the scrape timeout, or restarting, may answer again", inst, t.job, t.lastError), true
			}
			return fmt.Sprintf("Prometheus cannot scrape %s (job %s): %s: the status page or exporter is missing or failing", inst, t.job, t.lastError), false
		}
	}
	if why := r.missedInWindow(ctx, inst, vars["window"], at); why != "" {
		return why, true
	}
	if !absent {
		return "", false
	}
	// An exporter that cannot read its server (*_up at 0, its failures
	// counted) reads it the same way on every scrape: no retry mends it.
	return r.exporterDown(ctx, inst, at), false
}

// missedInWindow says how many of Prometheus's scrapes of inst failed in
// the window before at, "" when none did (or up cannot be read). The
// target is up again by the reading, since scrapeFailure found it down
// otherwise: it missed its scrapes while loaded and answered the first
// scrape after the load. In CI the testbed's JVM, just started under a
// 0.1-core cap, did so through a whole first trial; its series were stale
// at the window's end and the trial was stopped as if the exporter lacked
// the metric.
func (r *Runner) missedInWindow(ctx context.Context, inst, window string, at time.Time) string {
	if window == "" {
		return ""
	}
	sel := fmt.Sprintf("up{instance=%q}[%s]", inst, window)
	read := func(q string) (float64, bool) {
		v, err := r.prom.value(ctx, q, at)
		return v, err == nil && !math.IsNaN(v)
	}
	scrapes, ok := read("sum(count_over_time(" + sel + "))")
	if !ok || scrapes == 0 {
		return ""
	}
	succeeded, ok := read("sum(sum_over_time(" + sel + "))")
	if !ok || succeeded >= scrapes {
		return ""
	}
	return fmt.Sprintf("Prometheus's scrapes of %s failed %.0f times of %.0f in the window (%s) and succeed again: a server too busy to answer within the scrape timeout, or restarting, may answer again",
		inst, scrapes-succeeded, scrapes, window)
}

// downTargets are Prometheus's targets that are down, read at most once
// for one reading of the servers (servers, series; a zero value has read
// nothing): each figure that reads nothing asks whether its server's
// target is down, which was one /api/v1/targets a figure a server, and
// the answers of one reading are of one instant anyway. A failed read is
// kept too: asked again at once, a Prometheus too slow to answer would be
// slower.
type downTargets struct {
	read bool
	down []downTarget
	err  error
}

func (d *downTargets) get(ctx context.Context, r *Runner) ([]downTarget, error) {
	if !d.read {
		_, d.down, d.err = r.targets(ctx)
		d.read = true
	}
	return d.down, d.err
}

// transientScrape says whether a down target's last scrape may succeed
// again by itself, so that the trial is measured again rather than the
// campaign stopped: a server too busy to answer within the scrape timeout
// (the testbed's JVM just started, compiling under its 0.1-core cap,
// missed every scrape of a first trial in CI) or restarting. A target
// that answered, with 404 or another status, a body Prometheus cannot
// parse or one past its limit, answers so again.
//
// A timeout is read from the scrape's duration: one that lasted its
// timeout timed out, whatever the message says. A refused, reset or cut
// connection has no field of its own in the targets API (nor in up or
// scrape_duration_seconds: it fails at once, as a 404 does), so the
// message is read for those (transientScrapeErrors), and for a timeout
// only when Prometheus gives no scrapeTimeout.
func transientScrape(t downTarget) bool {
	if t.timeout > 0 && t.duration >= t.timeout {
		return true
	}
	errs := transientScrapeErrors
	if t.timeout == 0 {
		errs = append(errs[:len(errs):len(errs)], timeoutScrapeErrors...)
	}
	for _, s := range errs {
		if strings.Contains(t.lastError, s) {
			return true
		}
	}
	return false
}

// transientScrapeErrors are Go's words in lastError for a connection
// refused (the server restarting) or cut before the answer.
var transientScrapeErrors = []string{
	"connection refused",
	"connection reset",
	"broken pipe",
	"unexpected EOF",
	": EOF", // closed before answering
}

// timeoutScrapeErrors are Go's words for a scrape that ran out of time:
// read only when the target's timeout is unknown.
var timeoutScrapeErrors = []string{
	"context deadline exceeded", // the scrape_timeout
	"i/o timeout",
}

// scrapeMissed is a figure that read nothing because Prometheus's scrapes
// of its server failed in a way that heals (transientScrape): the trial
// is measured again, as after a failed request, with the allocation kept
// (it was applied and the deployment healthy), and nothing of it is kept.
type scrapeMissed struct{ err error }

func (e scrapeMissed) Error() string { return e.err.Error() }
func (e scrapeMissed) Unwrap() error { return e.err }

// scrapeError is the error of a figure (what) that read nothing at at
// because its server cannot be scraped, nil when scrapeFailure finds no
// such cause: a scrapeMissed when the failure may heal, else permanent.
func (r *Runner) scrapeError(ctx context.Context, tg *downTargets, vars map[string]string, at time.Time, absent bool, what string) error {
	why, transient := r.scrapeFailure(ctx, tg, vars, at, absent)
	switch {
	case why == "":
		return nil
	case transient:
		return scrapeMissed{fmt.Errorf("%s: %s", what, why)}
	}
	return permanent{fmt.Errorf("%s: %s", what, why)}
}

// exporterDown says whether the exporter at instance inst answers but
// cannot read its server at at: a *_up metric at 0, or a scrape-failure
// counter (*_scrape_failures_total) that rose over the minute before.
// Debian's apache_exporter 0.12 keeps apache_up at 1 when Apache answers
// its status page's address with 404, and counts the failure only.
func (r *Runner) exporterDown(ctx context.Context, inst string, at time.Time) string {
	query := func(q string) model.Vector {
		qctx, cancel, _ := r.prom.bound(ctx, instantTimeout)
		defer cancel()
		v, _, _, err := r.prom.api.Query(qctx, q, at)
		if err != nil {
			return nil
		}
		vec, _ := v.(model.Vector)
		return vec
	}
	var out []string
	note := func(name, msg string) {
		msg = fmt.Sprintf("%s{instance=%q} %s: the exporter answers but cannot read its server", name, inst, msg)
		if h, ok := upHints[strings.SplitN(name, "_", 2)[0]]; ok {
			msg += ": " + h
		}
		out = append(out, msg)
	}
	// A comparison without bool keeps the metric's name.
	for _, s := range query(fmt.Sprintf(`{__name__=~".+_up",instance=%q} == 0`, inst)) {
		note(string(s.Metric[model.MetricNameLabel]), "is 0")
	}
	for _, s := range query(fmt.Sprintf(`{__name__=~".+_scrape_failures_total",instance=%q}`, inst)) {
		name := string(s.Metric[model.MetricNameLabel])
		if rose := query(fmt.Sprintf(`increase(%s{instance=%q}[1m]) > 0`, name, inst)); len(rose) > 0 {
			note(name, fmt.Sprintf("rose by %.0f in the minute before", float64(rose[0].Value)))
		}
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

// instances are the {instance} values the section's servers name, sorted.
func (r *Runner) instances() []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range r.cfg.Tiers {
		for _, s := range t.Servers {
			if inst := s["instance"]; inst != "" && !seen[inst] {
				seen[inst] = true
				out = append(out, inst)
			}
		}
	}
	sort.Strings(out)
	return out
}
