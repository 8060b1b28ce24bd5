package live

import (
	"context"
	"fmt"
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
// ({instance}) is down (a status page that is not there answers 404), or the
// exporter answers but reports that it cannot read its server (a *_up metric
// of that instance at 0: apache_exporter's apache_up when Apache has no
// status page). Reading such a server's figures as 0 would be a finding
// about nothing. "" when neither holds: the metric is absent for another
// reason (a counter that never moved).
func (r *Runner) scrapeFailure(ctx context.Context, vars map[string]string, at time.Time) string {
	inst := vars["instance"]
	if inst == "" {
		return ""
	}
	if _, down, err := r.targets(ctx); err == nil {
		for _, t := range down {
			if t.instance == inst {
				return fmt.Sprintf("Prometheus cannot scrape %s (job %s): %s: the status page or exporter is missing or failing", inst, t.job, t.lastError)
			}
		}
	}
	return r.exporterDown(ctx, inst, at)
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
