package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/safefile"
	"github.com/softalloc/softalloc/internal/watch"
)

type watchOptions struct {
	f          *factory
	plan       string
	prometheus string
	query      string
	interval   time.Duration
	hold       int
	dryRun     bool
	state      string
	listen     string
	hookTime   time.Duration
	hook       []string
}

// newCmdWatch is `softalloc watch`.
func newCmdWatch(f *factory, runF func(*watchOptions) error) *cobra.Command {
	o := &watchOptions{f: f}
	cmd := &cobra.Command{
		Use:   "watch --plan answer.json --prometheus URL --replicas-query QUERY -- HOOK [ARGS...]",
		Short: "Follow a deployment's replica count and apply the pools planned for it",
		Long: `watch reads the replica count from Prometheus every --interval and, when it
changes, runs the hook with the pools that recommend or advise planned for that
count (their --output json answer for a deployment file with a replica range,
e.g. replicas: 2..12: its replicas key). The hook's arguments name pools as
{tier.pool}, e.g. {app.connections}, as the live runner's hook does.

The pools are sized ahead of the scaler: at N replicas watch applies the
pools the plan has for N + surge (at most its top count), the surge being the
deployment file's (the pods a rollout adds, e.g. surge: 1 or 25%; the plan's
rows carry it). Declare as surge the most replicas the scaler or a rollout can
add before watch has read the count and its hook has run: those replicas start
with the pools of the last apply, and N + surge of them then still fit the
database's budget. Without a surge a scale-up exceeds it until the hook has
shrunk the pools (watch says so, naming the surge that would have covered
it). After a scale-down the pools grow back to the new count's plus surge.

Each reading is one decision, logged on standard error with its reason and
numbers (the surge among them). A new count is applied once it has been read
--hold times in a row (a rollout's surge pods and a missed scrape come and go). A failed reading
(Prometheus down, an answer that is not one number) or a count outside the
plan changes nothing; a failed hook is tried again at the next readings. With
--state the count applied is kept in a file written after each successful
hook, so that a watch stopped at any moment (Ctrl-C, SIGTERM, kill -9)
restarts where it was. --dry-run says what it would apply and applies nothing.
--listen serves its own metrics (softalloc_watch_*) on /metrics.`,
		Example: `  softalloc recommend -f deployment.yaml -o json > answer.json
  softalloc watch --plan answer.json --prometheus http://127.0.0.1:9090 \
    --replicas-query 'count(up{job="app"} == 1)' --dry-run
  softalloc watch --plan answer.json --prometheus http://127.0.0.1:9090 \
    --replicas-query 'count(up{job="app"} == 1)' --state .softalloc/watch.json \
    -- ./hooks/set-pool.sh {app.connections}`,
		Args: cobra.ArbitraryArgs, // the hook's argv, after --
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && cmd.ArgsLenAtDash() != 0 {
				return usagef("watch: unexpected argument %q; the hook goes after --", args[0])
			}
			o.hook = args
			if runF != nil {
				return runF(o)
			}
			return runWatch(cmd.Context(), o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.plan, "plan", "", "recommend's or advise's --output json answer with a replicas key")
	fs.StringVar(&o.prometheus, "prometheus", "", "Prometheus's base URL, e.g. http://127.0.0.1:9090")
	fs.StringVar(&o.query, "replicas-query", "", `PromQL giving the replica count as one number, e.g. count(up{job="app"} == 1)`)
	fs.DurationVar(&o.interval, "interval", 15*time.Second, "time between readings (about the scrape interval)")
	fs.IntVar(&o.hold, "hold", 2, "readings in a row a new count must show before it is applied")
	fs.BoolVar(&o.dryRun, "dry-run", false, "say what would be applied, apply nothing")
	fs.StringVar(&o.state, "state", "", "file keeping the count applied, for restarts")
	fs.StringVar(&o.listen, "listen", "", "address serving watch's metrics on /metrics, e.g. 127.0.0.1:9401")
	fs.DurationVar(&o.hookTime, "hook-timeout", 5*time.Minute, "time the hook may take")
	return cmd
}

func runWatch(ctx context.Context, o *watchOptions) error {
	switch {
	case o.plan == "":
		return usagef("watch: want --plan FILE, recommend's or advise's --output json answer")
	case o.prometheus == "":
		return usagef("watch: want --prometheus URL")
	case o.query == "":
		return usagef(`watch: want --replicas-query, e.g. count(up{job="app"} == 1)`)
	case o.interval <= 0:
		return usagef("watch: --interval %v: want a duration above 0", o.interval)
	case o.hold < 1:
		return usagef("watch: --hold %d: want 1 or more readings", o.hold)
	case len(o.hook) == 0 && !o.dryRun:
		return usagef("watch: want the hook after -- (e.g. -- ./set-pool.sh {app.connections}), or --dry-run")
	}
	data, err := safefile.Read(o.plan, safefile.MaxInput)
	if err != nil {
		return usagef("watch: --plan: %w", err)
	}
	var doc struct {
		Replicas *algorithms.ReplicaPlan `json:"replicas"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return usagef("watch: --plan %q: %w", o.plan, err)
	}
	plan, err := watch.NewPlan(doc.Replicas)
	if err != nil {
		return usagef("watch: --plan %q: %w", o.plan, err)
	}
	hook := watch.Hook{Argv: o.hook, Dir: ".", Timeout: o.hookTime}
	if len(o.hook) > 0 {
		// Every count's pools fill the hook's placeholders, or none is run.
		for n := plan.Min; n <= plan.Max; n++ {
			if _, err := hook.Expand(plan.At[n]); err != nil {
				return usagef("watch: %w", err)
			}
		}
	}
	src, err := watch.NewPrometheus(o.prometheus, o.query, 0)
	if err != nil {
		return usagef("watch: --prometheus: %w", err)
	}
	if o.state != "" {
		o.state = filepath.Clean(o.state)
	}
	w, err := watch.New(plan, src, hook, watch.Options{Hold: o.hold, DryRun: o.dryRun, StatePath: o.state, Log: o.f.Streams.Err})
	if err != nil {
		return configError(err)
	}

	reg := prometheus.NewRegistry()
	read := prometheus.NewGauge(prometheus.GaugeOpts{Name: "softalloc_watch_replicas", Help: "The replica count read last (-1: the reading failed)."})
	applied := prometheus.NewGauge(prometheus.GaugeOpts{Name: "softalloc_watch_applied_replicas", Help: "The replica count whose pools were applied last (0: none)."})
	sized := prometheus.NewGauge(prometheus.GaugeOpts{Name: "softalloc_watch_sized_replicas", Help: "The replica count the pools in place are planned for: the applied count plus its surge, at most the plan's top (0: none)."})
	decisions := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "softalloc_watch_decisions_total", Help: "Decisions by action: apply, dry-run, hold, keep, outside, read-error, apply-error."}, []string{"action"})
	reg.MustRegister(read, applied, sized, decisions)
	applied.Set(float64(w.Applied()))
	if o.listen != "" {
		ln, err := net.Listen("tcp", o.listen)
		if err != nil {
			return usagef("watch: --listen %q: %w", o.listen, err)
		}
		srv := &http.Server{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		fmt.Fprintf(o.f.Streams.Err, "watch: metrics on http://%s/metrics\n", ln.Addr())
	}
	err = w.Run(ctx, o.interval, func(d watch.Decision) {
		read.Set(float64(d.Replicas))
		applied.Set(float64(d.Applied))
		sized.Set(float64(d.SizedFor))
		decisions.WithLabelValues(d.Action).Inc()
	})
	if err == nil && ctx.Err() != nil && !errors.Is(ctx.Err(), context.Canceled) {
		return ctx.Err()
	}
	return err
}
