// Package live is the runner that measures a real deployment: for each
// experiment it applies the allocation through the deployment file's hook,
// waits until the health URL answers, drives the deployment with a built-in
// closed-loop HTTP load generator (emulated users walking a workload file),
// and reads each server's CPU, pools, throughput and response time from
// Prometheus over the runtime window.
//
// Load goes only to loopback addresses or to hosts the deployment file lists
// under allowedHosts, and every trial is bounded in users, requests and time.
//
// Without running anything, Windows reads the same queries over a recorded
// time range, cut into windows, for advice from a deployment's own traffic;
// NewPassive builds a runner for that alone, from a section with no target,
// workload or hook.
package live

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	osexec "os/exec"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/oneline"
	"github.com/softalloc/softalloc/internal/procattr"
	"github.com/softalloc/softalloc/internal/safefile"
	"github.com/softalloc/softalloc/internal/workload"
)

// Runner is the live runner. Trials on one deployment cannot overlap, so
// RunExperiment serialises them: parallel callers simply queue.
type Runner struct {
	// Log receives the hook's output and notes on errors and retries (nil: discarded).
	Log io.Writer
	// Retries is how often a failed trial (hook, health, load or Prometheus
	// failure, a server's scrapes that timed out) is repeated; a
	// configuration error is never retried.
	Retries int
	// Timeout bounds one attempt (0: the trial's length plus the hook's,
	// health's and scrape's timeouts).
	Timeout time.Duration

	cfg      Config
	workload *workload.Workload
	wlHash   string
	target   *url.URL
	guard    *guard
	prom     *prom
	client   *http.Client // health checks and Prometheus

	mu      sync.Mutex
	applied string // allocation key last applied by the hook; "" unknown
	warned  bool
	warmed  bool // a warm-up has run (warmup.go)
	// fingerprint is the hash of the section's fingerprint, "" without one.
	fingerprint string
	// plausible judges each trial against the trials measured beside it.
	plausible plausibility
	absent    map[string]bool // metrics already warned of as absent
}

var _ algorithms.Experimenter = (*Runner)(nil)

// New builds the runner from a deployment file's runner section; path is
// the deployment file (relative paths in the section are relative to it).
func New(section map[string]any, path string) (*Runner, error) {
	c, err := ParseConfig(section, path)
	if err != nil {
		return nil, err
	}
	c = c.withDefaults()
	r := &Runner{cfg: c}
	if r.guard, err = newGuard(c.AllowedHosts); err != nil {
		return nil, fmt.Errorf("runner section: %w", err)
	}
	for _, u := range []struct{ key, val string }{{"target", c.Target}, {"prometheus", c.Prometheus}, {"health", c.Health}} {
		if u.val == "" {
			continue
		}
		if err := r.guard.checkURL(u.key, u.val); err != nil {
			return nil, fmt.Errorf("runner section: %w", err)
		}
	}
	if r.target, err = url.Parse(c.Target); err != nil {
		return nil, fmt.Errorf("runner section: target: %w", err)
	}
	wpath := c.path(c.Workload)
	b, err := safefile.Read(wpath, safefile.MaxInput)
	if err != nil {
		return nil, fmt.Errorf("runner section: workload: %w", err)
	}
	if r.workload, err = ParseWorkload(b); err != nil {
		return nil, fmt.Errorf("runner section: workload %q: %w", wpath, err)
	}
	if r.workload.ThinkTime.Mean == 0 && c.ThinkTime == 0 {
		return nil, fmt.Errorf("runner section: workload %q: thinkTime.mean is 0: a closed loop without think time is a stress test, not a workload", wpath)
	}
	sum := sha256.Sum256(b)
	r.wlHash = hex.EncodeToString(sum[:6])
	if c.Fingerprint != nil {
		// Once per runner, that is per campaign: the application's state
		// for the journal's keys.
		if r.fingerprint, err = c.Fingerprint.compute(context.Background(), c.dir); err != nil {
			return nil, fmt.Errorf("runner section: %w", err)
		}
	}
	r.client = &http.Client{Transport: r.newTransport(4, true), Timeout: time.Minute}
	if r.prom, err = newProm(c.Prometheus, r.client.Transport, c.QueryTimeout.Duration()); err != nil {
		return nil, fmt.Errorf("runner section: %w", err)
	}
	return r, nil
}

// NewPassive builds a runner that only reads recorded metrics (Windows)
// from the section's prometheus, tiers and pages: it needs no target, no
// workload and no hook, since it generates no load and applies nothing, and
// it refuses to run experiments.
func NewPassive(section map[string]any, path string) (*Runner, error) {
	c, err := parseConfig(section, path, true)
	if err != nil {
		return nil, err
	}
	c = c.withDefaults()
	r := &Runner{cfg: c}
	if r.guard, err = newGuard(c.AllowedHosts); err != nil {
		return nil, fmt.Errorf("runner section: %w", err)
	}
	if err := r.guard.checkURL("prometheus", c.Prometheus); err != nil {
		return nil, fmt.Errorf("runner section: %w", err)
	}
	r.client = &http.Client{Transport: r.newTransport(4, true), Timeout: 5 * time.Minute}
	if r.prom, err = newProm(c.Prometheus, r.client.Transport, c.QueryTimeout.Duration()); err != nil {
		return nil, fmt.Errorf("runner section: %w", err)
	}
	return r, nil
}

// DefaultTiming is the section's schedule, adaptive: rampUp is the least
// warm-up, runtime the longest window.
func (r *Runner) DefaultTiming() algorithms.Timing {
	t := algorithms.Timing{RampUp: r.cfg.RampUp.Duration(), Runtime: r.cfg.Runtime.Duration(), RampDown: r.cfg.RampDown.Duration(),
		Precision: algorithms.DefaultPrecision}
	if r.cfg.Precision != nil {
		t.Precision = *r.cfg.Precision
	}
	return t
}

// Settings identify what determines the runner's observations, for the
// journal: a changed workload, query or label never reuses old experiments.
func (r *Runner) Settings() map[string]string {
	tiers, _ := yaml.Marshal(r.cfg.Tiers)
	sum := sha256.Sum256(tiers)
	s := map[string]string{
		"target":     r.cfg.Target,
		"workload":   r.cfg.Workload + "@" + r.wlHash,
		"prometheus": r.cfg.Prometheus,
		"queries":    hex.EncodeToString(sum[:6]),
		"hook":       strings.Join(r.cfg.Hook, " "),
		"seed":       strconv.FormatUint(r.cfg.Seed, 10),
	}
	if r.cfg.Interval.Duration() != DefaultInterval {
		// The intervals an adaptive trial is measured in shape its
		// intervals; the default keeps older journals' settings.
		s["interval"] = r.cfg.Interval.Duration().String()
	}
	if r.cfg.Label != "" {
		s["label"] = r.cfg.Label
	}
	if r.fingerprint != "" {
		s["fingerprint"] = r.fingerprint
	}
	if r.cfg.ThinkTime != 0 {
		s["thinkTime"] = r.cfg.ThinkTime.Duration().String()
	}
	return s
}

// newTransport dials only what the guard allows, and never through a proxy.
func (r *Runner) newTransport(users int, keepAlive bool) *http.Transport {
	d := &net.Dialer{Timeout: r.cfg.RequestTimeout.Duration(), Control: r.guard.control}
	return &http.Transport{
		DialContext:         d.DialContext,
		MaxIdleConnsPerHost: users,
		DisableKeepAlives:   !keepAlive,
		DisableCompression:  true,
		IdleConnTimeout:     30 * time.Second,
	}
}

func (r *Runner) logf(format string, a ...any) {
	if r.Log != nil {
		fmt.Fprintf(r.Log, "live: "+format+"\n", a...)
	}
}

// permanent marks errors that a retry cannot mend.
type permanent struct{ err error }

func (e permanent) Error() string { return e.err.Error() }
func (e permanent) Unwrap() error { return e.err }

// retryBackoff is the wait before a trial's first retry (doubled before the
// second, and so on). A variable so that a test can make it short.
var retryBackoff = 2 * time.Second

// RunExperiment runs one trial, retrying transient failures and trials whose
// readings are implausible against the trials measured beside them.
func (r *Runner) RunExperiment(ctx context.Context, e algorithms.Experiment) (algorithms.Observation, error) {
	if r.workload == nil {
		return algorithms.Observation{}, fmt.Errorf("live: this runner reads recorded metrics only (built by NewPassive): it has no target or workload to run an experiment with")
	}
	if e.Workload.Users < 1 || e.Workload.Users > r.cfg.MaxUsers {
		return algorithms.Observation{}, fmt.Errorf("live: %d users: want 1..%d (the runner section's maxUsers)", e.Workload.Users, r.cfg.MaxUsers)
	}
	if e.Timing.Runtime <= 0 {
		return algorithms.Observation{}, fmt.Errorf("live: runtime %v: want a positive runtime", e.Timing.Runtime)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var err error
	missed := 0 // attempts whose scrapes failed (scrapeMissed)
	for attempt := 0; attempt <= r.Retries; attempt++ {
		if attempt > 0 {
			wait := time.Duration(attempt) * retryBackoff
			r.logf("%d users: attempt %d of %d failed: %v; retrying in %v", e.Workload.Users, attempt, r.Retries+1, err, wait)
			// The deployment's state is unknown after a failure, except
			// after scrapes that failed: it was applied and healthy, and a
			// hook run again could restart the server that was too busy.
			if !errors.As(err, new(scrapeMissed)) {
				r.applied = ""
			}
			if !sleepUntil(ctx, time.Now().Add(wait)) {
				return algorithms.Observation{}, ctx.Err()
			}
		}
		var obs algorithms.Observation
		obs, err = r.attempt(ctx, e)
		if errors.As(err, new(scrapeMissed)) {
			missed++
		}
		if err == nil {
			if why := r.plausible.check(e.Workload.Users, plausibilityKey(e), obs); why != "" {
				err = fmt.Errorf("%d users: an implausible trial, not used: %s", e.Workload.Users, why)
				continue
			}
			r.plausible.add(e.Workload.Users, plausibilityKey(e), obs)
			return obs, nil
		}
		var p permanent
		var q errQuery
		if ctx.Err() != nil || errors.As(err, &p) || errors.As(err, &q) || errors.Is(err, ErrRequestBound) {
			break
		}
	}
	if n := r.Retries + 1; missed == n && ctx.Err() == nil {
		return algorithms.Observation{}, fmt.Errorf("live: %w: the scrapes failed in each of %d attempts (the runner's retries: %d)", err, n, r.Retries)
	}
	return algorithms.Observation{}, fmt.Errorf("live: %w", err)
}

func (r *Runner) attempt(ctx context.Context, e algorithms.Experiment) (algorithms.Observation, error) {
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = e.Timing.Total() + r.cfg.HookTimeout.Duration() + r.cfg.HealthTimeout.Duration() + r.cfg.ScrapeTimeout.Duration() + time.Minute +
			r.cfg.WarmUp.bound(r.cfg.ScrapeTimeout.Duration())
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	st, err := r.start(ctx, e, e.Workload.Users, false)
	if err != nil {
		return algorithms.Observation{}, err
	}
	defer st.tr.CloseIdleConnections()
	tr, oomBefore, watchOOM := st.tr, st.oomBefore, st.watchOOM
	if e.Timing.Adaptive() {
		obs, err := r.adaptiveAttempt(ctx, e, tr)
		if oerr := r.checkOOM(ctx, e, oomBefore, watchOOM); oerr != nil && (err == nil || errors.As(oerr, new(*OOMKillError))) {
			// A kill is the cause, whatever else failed with it.
			return algorithms.Observation{}, oerr
		}
		return obs, err
	}
	load := Load{Workload: r.workload, Target: r.target, Users: e.Workload.Users, Timing: e.Timing,
		ThinkTime: r.cfg.ThinkTime.Duration(), RequestTimeout: r.cfg.RequestTimeout.Duration(),
		MaxRequests: r.cfg.MaxRequests, Seed: r.cfg.Seed, Transport: tr}
	res, err := load.Run(ctx)
	if oerr := r.checkOOM(ctx, e, oomBefore, watchOOM); oerr != nil && (err == nil || errors.As(oerr, new(*OOMKillError))) {
		return algorithms.Observation{}, oerr
	}
	if err != nil {
		return algorithms.Observation{}, err
	}
	if err := r.errorShare(e, res.Pages, res.Errors); err != nil {
		return algorithms.Observation{}, err
	}
	if err := r.prom.waitScraped(ctx, res.WindowEnd, r.cfg.ScrapeTimeout.Duration()); err != nil {
		return algorithms.Observation{}, err
	}
	runtime := res.WindowEnd.Sub(res.WindowStart).Seconds()
	obs := algorithms.Observation{
		RuntimeSeconds: runtime,
		Throughput:     float64(res.Pages) / runtime,
		ResponseTimes:  res.ResponseTimes,
		Errors:         res.Errors.Total(),
	}
	if obs.Servers, err = r.servers(ctx, e, res.WindowEnd); err != nil {
		return algorithms.Observation{}, err
	}
	if err := obs.Validate(); err != nil {
		return algorithms.Observation{}, permanent{fmt.Errorf("the observation read from Prometheus: %w", err)}
	}
	return obs, nil
}

// started is the deployment as start leaves it for a load: the transport
// the load runs on (the caller closes its idle connections) and the OOM
// kills counted before it, which checkOOM compares with.
type started struct {
	tr        *http.Transport
	watchOOM  bool
	oomBefore map[string]float64
}

// start brings the deployment to where a load begins, as a trial, a ramp
// and Runner.WarmUp all need it, with r.mu held: e's allocation applied
// (the hook when it changed) and healthy, the OOM kills so far counted (a
// kill from here on fails what follows), a transport with idle connections
// for users, and the warm-up on it when the hook ran, before the first
// load, or always with warm (a caller that cannot know whether the hook
// changed anything). A warm-up that failed because a server was OOM-killed
// fails with the kill.
func (r *Runner) start(ctx context.Context, e algorithms.Experiment, users int, warm bool) (started, error) {
	before := r.applied
	if err := r.apply(ctx, e.Allocation); err != nil {
		return started{}, err
	}
	applied := warm || r.applied != before
	if err := r.waitHealthy(ctx); err != nil {
		return started{}, err
	}
	st := started{watchOOM: r.hasOOMQuery(e)}
	if st.watchOOM {
		var err error
		if st.oomBefore, err = r.oomCounts(ctx, e, time.Time{}); err != nil {
			return started{}, err
		}
	}
	st.tr = r.newTransport(users, *r.cfg.KeepAlive)
	if err := r.warmUp(ctx, e, st.tr, applied); err != nil {
		st.tr.CloseIdleConnections()
		if oerr := r.checkOOM(ctx, e, st.oomBefore, st.watchOOM); errors.As(oerr, new(*OOMKillError)) {
			return started{}, oerr
		}
		return started{}, err
	}
	return st, nil
}

// apply runs the hook when the allocation differs from the last one applied.
func (r *Runner) apply(ctx context.Context, a algorithms.Allocation) error {
	if len(r.cfg.Hook) == 0 {
		if !r.warned {
			r.logf("warning: the runner section has no hook: allocations are not applied, the deployment keeps its own pools")
			r.warned = true
		}
		return nil
	}
	if r.applied == a.Key() {
		return nil
	}
	argv, err := hookArgv(r.cfg.Hook, a)
	if err != nil {
		return permanent{err}
	}
	ctx, cancel := context.WithTimeout(ctx, r.cfg.HookTimeout.Duration())
	defer cancel()
	cmd := osexec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = r.cfg.dir
	cmd.Env = procattr.Environ() // softalloc's secrets stay its own
	out := &prefixWriter{w: r.Log, prefix: "live: hook: ", keep: 3}
	cmd.Stdout, cmd.Stderr = out, out // one writer: exec gives them one pipe, in order
	// Its own process group, so that a timeout stops whatever it started.
	cmd.SysProcAttr = procattr.Child()
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("hook %s: timed out after %v (hookTimeout): %w", strings.Join(argv, " "), r.cfg.HookTimeout.Duration(), ctx.Err())
		}
		if ctx.Err() != nil {
			return fmt.Errorf("hook %s: %w", strings.Join(argv, " "), ctx.Err())
		}
		// The reason is usually in what the hook printed last.
		if t := out.lastOutput(); t != "" {
			return fmt.Errorf("hook %s: %w; its last output: %s", strings.Join(argv, " "), err, t)
		}
		return fmt.Errorf("hook %s: %w", strings.Join(argv, " "), err)
	}
	r.applied = a.Key()
	return nil
}

// hookVar is a {tier.pool} placeholder of the hook: any dotted name, so
// that a misspelt pool ({web.thread}) is refused rather than passed on as
// written; braces without a dot ({keep}) are the hook's own.
var hookVar = regexp.MustCompile(`\{[A-Za-z0-9][A-Za-z0-9_-]*\.[A-Za-z0-9_]+\}`)

// hookOpen is a {tier.pool} placeholder left unclosed ({web.threads, or
// "{web.threads }"): it would reach the hook as written.
var hookOpen = regexp.MustCompile(`(\{[A-Za-z0-9][A-Za-z0-9_-]*\.[A-Za-z0-9_]+)(?:[^}A-Za-z0-9_]|$)`)

// hookArgv substitutes {tier.pool} in the hook's arguments.
func hookArgv(hook []string, a algorithms.Allocation) ([]string, error) {
	vars := map[string]string{}
	for tier, p := range a {
		if p.Threads > 0 {
			vars[tier+"."+algorithms.PoolThreads] = strconv.Itoa(p.Threads)
		}
		if p.Connections > 0 {
			vars[tier+"."+algorithms.PoolConnections] = strconv.Itoa(p.Connections)
		}
	}
	out := make([]string, len(hook))
	for i, arg := range hook {
		if m := hookOpen.FindStringSubmatch(arg); m != nil {
			return nil, fmt.Errorf("hook argument %q: a placeholder %s is not closed; want %s}", arg, m[1], m[1])
		}
		var missing string
		out[i] = hookVar.ReplaceAllStringFunc(arg, func(m string) string {
			name := m[1 : len(m)-1]
			// A children tier's pool as its file names it (pools: {children: N}): its threads.
			if t, ok := strings.CutSuffix(name, "."+algorithms.PoolChildren); ok {
				name = t + "." + algorithms.PoolThreads
			}
			// A virtual-thread tier's limit ({permits: N}): its threads too.
			if t, ok := strings.CutSuffix(name, "."+algorithms.PoolPermits); ok {
				name = t + "." + algorithms.PoolThreads
			}
			if v, ok := vars[name]; ok {
				return v
			}
			missing = m
			return m
		})
		if missing != "" {
			have := make([]string, 0, len(vars))
			for k := range vars {
				have = append(have, "{"+k+"}")
			}
			sort.Strings(have)
			return nil, fmt.Errorf("hook argument %q: the allocation sets no %s (it sets %s)", arg, missing, strings.Join(have, ", "))
		}
	}
	return out, nil
}

// waitHealthy polls the health URL until it answers 2xx.
func (r *Runner) waitHealthy(ctx context.Context) error {
	if r.cfg.Health == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, r.cfg.HealthTimeout.Duration())
	defer cancel()
	var last error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.cfg.Health, nil)
		if err != nil {
			return permanent{fmt.Errorf("health %q: %w", r.cfg.Health, err)}
		}
		resp, err := r.client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
			resp.Body.Close()
			if resp.StatusCode/100 == 2 {
				return nil
			}
			err = fmt.Errorf("status %s", resp.Status)
			// A health endpoint usually says what is unhealthy.
			if b := strings.Join(strings.Fields(string(body)), " "); b != "" {
				err = fmt.Errorf("status %s: %q", resp.Status, oneline.Shorten(b, 200))
			}
		}
		last = err
		if !sleepUntil(ctx, time.Now().Add(200*time.Millisecond)) {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("health %s did not answer 2xx within %v: %w", r.cfg.Health, r.cfg.HealthTimeout.Duration(), last)
			}
			return ctx.Err()
		}
	}
}

// servers reads every server's observation at the window's end.
func (r *Runner) servers(ctx context.Context, e algorithms.Experiment, end time.Time) ([]algorithms.ServerObservation, error) {
	window := fmt.Sprintf("%dms", e.Timing.Runtime.Milliseconds())
	var out []algorithms.ServerObservation
	var down downTargets
	err := r.eachServer(e, window, func(t algorithms.Tier, i int, q Queries, vars map[string]string, alloc algorithms.TierPools) error {
		s, err := r.server(ctx, &down, t, i, q, vars, alloc, end)
		if err != nil {
			return fmt.Errorf("%s: %w", t.ServerName(i), err)
		}
		out = append(out, s)
		return nil
	})
	return out, err
}

// eachServer calls f for every server of e's deployment in chain order
// with its tier's queries and placeholder values ({window} is window).
func (r *Runner) eachServer(e algorithms.Experiment, window string,
	f func(t algorithms.Tier, i int, q Queries, vars map[string]string, alloc algorithms.TierPools) error) error {
	for _, t := range e.Deployment.Tiers {
		tc, q, err := r.tier(t)
		if err != nil {
			return permanent{err}
		}
		for i := 0; i < t.Replicas; i++ {
			if err := f(t, i, q, serverVars(t, i, tc, window), e.Allocation[t.Name]); err != nil {
				return err
			}
		}
	}
	return nil
}

// tier returns how tier t is observed and its queries, checked against the
// deployment: every tier has a cpu query and one servers entry per replica.
func (r *Runner) tier(t algorithms.Tier) (TierConfig, Queries, error) {
	tc, ok := r.cfg.Tiers[t.Name]
	if !ok {
		return tc, Queries{}, fmt.Errorf("runner section: tiers.%s: missing; every tier needs at least a cpu query (or a preset that has one)", t.Name)
	}
	if len(tc.Servers) > 0 && len(tc.Servers) != t.Replicas {
		return tc, Queries{}, fmt.Errorf("runner section: tiers.%s.servers: %d entries for %d replicas", t.Name, len(tc.Servers), t.Replicas)
	}
	q := tc.queries()
	if q.CPU == "" {
		return tc, Queries{}, fmt.Errorf("runner section: tiers.%s: no cpu query; set queries.cpu or a preset such as node or cgroup", t.Name)
	}
	return tc, q, nil
}

// serverVars are the placeholder values of server i of tier t; window is a
// PromQL duration such as 6000ms.
func serverVars(t algorithms.Tier, i int, tc TierConfig, window string) map[string]string {
	vars := map[string]string{"window": window, "windowSeconds": windowSeconds(window), "tier": t.Name, "server": t.ServerName(i),
		"cores": strconv.Itoa(max(1, t.Cores))}
	if len(tc.Servers) > 0 {
		for k, v := range tc.Servers[i] {
			vars[k] = v
		}
	}
	return vars
}

// windowSeconds is {windowSeconds}: the window in seconds, to make a count
// over it a rate (the runner writes every window as a Go duration in ms).
func windowSeconds(window string) string {
	d, err := time.ParseDuration(window)
	if err != nil {
		return window // not a duration: the query fails naming it
	}
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}

func (r *Runner) server(ctx context.Context, down *downTargets, t algorithms.Tier, i int, q Queries, vars map[string]string,
	alloc algorithms.TierPools, end time.Time) (algorithms.ServerObservation, error) {
	s := algorithms.ServerObservation{Name: t.ServerName(i), Tier: t.Name}
	// evalRaw returns the query's value and the query as sent; an absent
	// query is (0, false). NaN (0/0: nothing happened in the window) is 0,
	// an infinity is returned as read.
	evalRaw := func(field, query string, required bool) (float64, bool, string, error) {
		if query == "" {
			return 0, false, "", nil
		}
		pq, err := expand(query, vars)
		if err != nil {
			return 0, false, "", permanent{fmt.Errorf("%s: %w", field, err)}
		}
		v, err := r.prom.value(ctx, pq, end)
		if errors.Is(err, errNoData) {
			missing := r.absentMetrics(ctx, pq, end)
			what := fmt.Sprintf("%s: query %s read nothing", field, pq)
			if len(missing) > 0 {
				what = fmt.Sprintf("%s: no series of %s", field, strings.Join(missing, ", "))
			}
			// Not a counter that never moved: the server cannot be read.
			if err := r.scrapeError(ctx, down, vars, end, len(missing) > 0, what); err != nil {
				return 0, false, pq, err
			}
			if len(missing) > 0 && required {
				return 0, false, pq, permanent{fmt.Errorf("%s: Prometheus has no series of %s (query %s): does the exporter expose it?",
					field, strings.Join(missing, ", "), pq)}
			}
			if !required {
				// A counter that never moved (no request of that kind) has no
				// series yet; a metric the exporter lacks is worth a warning.
				for _, m := range missing {
					if !r.absent[m] {
						r.logf("warning: %s: %s: Prometheus has no series of %s: read as 0 (does the exporter expose it?)", s.Name, field, m)
						if r.absent == nil {
							r.absent = map[string]bool{}
						}
						r.absent[m] = true
					}
				}
				return 0, true, pq, nil
			}
		}
		if err != nil {
			return 0, false, pq, fmt.Errorf("%s: %w", field, err)
		}
		if math.IsNaN(v) {
			return 0, true, pq, nil
		}
		return v, true, pq, nil
	}
	// eval reads a figure other than a share: an infinity is 0, as NaN.
	eval := func(field, query string, required bool) (float64, bool, error) {
		v, ok, _, err := evalRaw(field, query, required)
		if math.IsInf(v, 0) {
			v = 0
		}
		return v, ok, err
	}
	// util reads a utilisation: outside [0, 1] by more than ShareTolerance
	// (a query in cores, an infinity) it fails the trial, as no retry mends it.
	util := func(field, query string, required bool) (float64, bool, error) {
		v, ok, pq, err := evalRaw(field, query, required)
		if err != nil || !ok {
			return 0, ok, err
		}
		u, problem := share(field, pq, v, vars["cores"])
		if problem != "" {
			return 0, false, permanent{fmt.Errorf("%s: %s", field, problem)}
		}
		return u, true, nil
	}
	var err error
	if s.CPU, _, err = util("cpu", q.CPU, true); err != nil {
		return s, err
	}
	if s.Throttled, _, err = util("throttled", q.Throttled, false); err != nil {
		return s, err
	}
	if s.GCShare, _, err = util("gcShare", q.GCShare, false); err != nil {
		return s, err
	}
	// count reads a figure that cannot be negative.
	count := func(field, query string, required bool) (float64, bool, error) {
		v, ok, pq, err := evalRaw(field, query, required)
		if err != nil || !ok {
			return 0, ok, err
		}
		n, problem := nonNegative(pq, v)
		if problem != "" {
			return 0, false, permanent{fmt.Errorf("%s: %s", field, problem)}
		}
		return n, true, nil
	}
	if s.Throughput, _, err = count("throughput", q.Throughput, false); err != nil {
		return s, err
	}
	if s.ResponseTime, _, err = count("responseTime", q.ResponseTime, false); err != nil {
		return s, err
	}
	for _, name := range sortedKeys(q.Resources) {
		v, _, err := util("resources."+name, q.Resources[name], true)
		if err != nil {
			return s, err
		}
		if s.Resources == nil {
			s.Resources = map[string]float64{}
		}
		s.Resources[name] = v
	}
	for _, name := range sortedKeys(q.Pools) {
		pq := q.Pools[name]
		if pq.Busy == "" {
			continue
		}
		p := algorithms.PoolObservation{Name: name, FullShare: -1}
		busy, _, err := count("pools."+name+".busy", pq.Busy, false)
		if err != nil {
			return s, err
		}
		size, ok, err := eval("pools."+name+".size", pq.Size, false)
		if err != nil {
			return s, err
		}
		p.Size = int(math.Round(size))
		if !ok || p.Size <= 0 {
			p.Size = alloc.Size(name)
		}
		p.Busy = max(0, busy)
		if p.Size > 0 {
			p.Busy = min(p.Busy, float64(p.Size))
		}
		if full, ok, err := util("pools."+name+".fullShare", pq.FullShare, false); err != nil {
			return s, err
		} else if ok {
			p.FullShare = full
		}
		s.Pools = append(s.Pools, p)
	}
	return s, nil
}

// selectorName is a metric name followed by its label matchers or by a
// range (rate(x_total[5m])). A bare name (up) is not found: telling it from a
// function or keyword would take a PromQL parser.
var selectorName = regexp.MustCompile(`([A-Za-z_:][A-Za-z0-9_:]*)\s*[{\[]`)

// absentMetrics names the metrics of query q of which Prometheus has no
// series at all at t (a query's empty answer may instead be labels that match
// nothing yet).
func (r *Runner) absentMetrics(ctx context.Context, q string, t time.Time) []string {
	var out []string
	for _, name := range metricNames(q) {
		if _, err := r.prom.value(ctx, "absent("+name+")", t); err == nil {
			out = append(out, name)
		}
	}
	return out
}

// metricNames are the metric names query q selects, each once, in order.
func metricNames(q string) []string {
	var names []string
	for _, m := range selectorName.FindAllStringSubmatch(q, -1) {
		if !slices.Contains(names, m[1]) {
			names = append(names, m[1])
		}
	}
	return names
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// prefixWriter writes each line with a prefix (the hook's output in the log).
// prefixWriter writes each line to w (nil: nowhere) behind prefix, and
// keeps the last keep lines, for an error's one line.
type prefixWriter struct {
	w      io.Writer
	prefix string
	keep   int
	mu     sync.Mutex
	buf    []byte
	last   []string
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	for {
		i := strings.IndexByte(string(p.buf), '\n')
		if i < 0 {
			break
		}
		if p.w != nil {
			fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.buf[:i])
		}
		if line := strings.TrimSpace(string(p.buf[:i])); line != "" && p.keep > 0 {
			p.last = append(p.last, oneline.Shorten(line, 500))
			if len(p.last) > p.keep {
				p.last = p.last[1:]
			}
		}
		p.buf = p.buf[i+1:]
	}
	return len(b), nil
}

// lastOutput is the last lines kept, joined by " | ", a line not yet ended last.
func (p *prefixWriter) lastOutput() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	lines := p.last
	if part := strings.TrimSpace(string(p.buf)); part != "" {
		lines = append(append([]string{}, lines...), oneline.Shorten(part, 500))
	}
	return strings.Join(lines, " | ")
}
