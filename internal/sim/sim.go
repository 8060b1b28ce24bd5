// Package sim is the embedded discrete-event simulator of the paper's RUBBoS
// testbed (Wang et al., IPDPS 2011): emulated users in a closed loop, a
// web -> app -> [cluster] -> db chain of processor-sharing CPUs with the
// soft resources of the paper (thread and connection pools), bounded accept
// queues with retried connections, JVM garbage collection and FIN waits.
//
// The RUBBoS chain (rubbos.go) is built on the event core of
// internal/sim/engine, which another model (internal/sim/classes) shares.
// All parameters live in a Model (DefaultModel: the embedded rubbos.yaml
// and rubbos-browse-only.yaml).
package sim

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/softalloc/softalloc/algorithms"
)

// Stats are diagnostics of one trial, beside its observation.
type Stats struct {
	// Events is the number of events the scheduler dispatched, warm-up
	// included. LazyEvents are model events applied without being
	// scheduled: FIN ends while nobody waits for a web worker, and queries
	// joining a busy one-core query-tier CPU.
	Events     int64
	LazyEvents int64
	// Pages is the number of pages completed in the measured window;
	// WarmUpPages before it.
	Pages       int64
	WarmUpPages int64
	// SimulatedSeconds is the simulated time, warm-up included.
	SimulatedSeconds float64
	// QueriesPerServletPage is the mean SQL queries per servlet page sent in
	// the window.
	QueriesPerServletPage float64
	// WebDrops and AppDrops split the observation's drops by tier.
	WebDrops int64
	AppDrops int64
	// GCPauses counts stop-the-world pauses in the window, all servers.
	GCPauses int64
	// FINWait is the mean FIN wait of the workload, seconds (0: off).
	FINWait float64
	// WebQueue and AppQueue are the accept queues' lengths at the end.
	WebQueue int
	AppQueue int
}

// EventsPerPage is events per completed page over the whole trial.
func (s Stats) EventsPerPage() float64 {
	if n := s.Pages + s.WarmUpPages; n > 0 {
		return float64(s.Events) / float64(n)
	}
	return 0
}

// Simulate runs one trial of experiment e on model m (nil: DefaultModel) with
// the given seed. The same seed gives the same numbers. A bad experiment
// (unknown role, missing pool size, fewer than one user) is an error that
// names the value. A zero Timing means DefaultTiming; the ramp-down is not
// simulated (nothing is measured in it).
func Simulate(ctx context.Context, m *Model, e algorithms.Experiment, seed uint64) (algorithms.Observation, Stats, error) {
	c, err := newTrial(m, e, seed)
	if err != nil {
		return algorithms.Observation{}, Stats{}, err
	}
	return c.runToEnd(ctx)
}

// newTrial builds the trial of e on m (nil: DefaultModel) with the seed.
func newTrial(m *Model, e algorithms.Experiment, seed uint64) (*chain, error) {
	if m == nil {
		m = DefaultModel()
	}
	c, err := newChain(m, e, seed)
	if err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	return c, nil
}

// runToEnd runs the trial to the end of its window and gives its result.
func (c *chain) runToEnd(ctx context.Context) (algorithms.Observation, Stats, error) {
	if err := ctx.Err(); err != nil {
		return algorithms.Observation{}, Stats{}, fmt.Errorf("simulate: %w", err)
	}
	if err := c.run(ctx); err != nil {
		return algorithms.Observation{}, c.stats, err
	}
	o, st := c.result()
	return o, st, nil
}

// shape is what checkExperiment reads from a valid experiment for newChain.
type shape struct {
	tiers      [4]algorithms.Tier // by role: web, app, cluster, db
	hasCluster bool
	start, end float64 // the measured window, simulated seconds
	timing     algorithms.Timing
	webThreads int32
	appThreads int32
	appConns   int32
}

// checkExperiment is newChain's validation: everything it refuses, in the
// order it refuses it.
func checkExperiment(m *Model, e algorithms.Experiment) (shape, error) {
	var sh shape
	if err := m.validate(); err != nil {
		return sh, fmt.Errorf("model %q: %w", m.Name, err)
	}
	users := e.Workload.Users
	if users < 1 || users > math.MaxInt32 {
		return sh, fmt.Errorf("workload.users: want an integer in [1,%d], got %d", math.MaxInt32, users)
	}
	t := e.Timing
	if t.RampUp == 0 && t.Runtime == 0 && t.RampDown == 0 {
		d := DefaultTiming()
		t.RampUp, t.Runtime = d.RampUp, d.Runtime
	}
	if t.Runtime <= 0 || t.RampUp < 0 {
		return sh, fmt.Errorf("timing: want rampUp >= 0 and runtime > 0, got %v and %v", t.RampUp, t.Runtime)
	}
	if err := t.CheckAdaptive(); err != nil {
		return sh, err
	}
	sh.timing = t
	sh.start = t.RampUp.Seconds()
	sh.end = sh.start + t.Runtime.Seconds()

	// The chain: web, app, optional cluster, db, in this order.
	order := []string{algorithms.RoleWeb, algorithms.RoleApp, algorithms.RoleCluster, algorithms.RoleDB}
	var seen [4]bool
	last := -1
	for i, tr := range e.Deployment.Tiers {
		r := -1
		for j, name := range order {
			if tr.Role == name {
				r = j
			}
		}
		f := fmt.Sprintf("deployment.tiers[%d] (%q)", i, tr.Name)
		if tr.Children {
			// Simulating children as threads with as many connections
			// would give RUBBoS's Java figures under a PHP stack's names.
			return sh, fmt.Errorf("deployment %q: tier %q's pool is %s, each holding its own connections to the next tier; "+
				"the simulator models the RUBBoS chain (web threads, app threads and app connections) and has no children: "+
				"run a PHP stack with --runner live (a runner section in the deployment file) or --runner exec",
				e.Deployment.Topology, tr.Name, tr.PoolLabel(algorithms.PoolThreads))
		}
		switch {
		case r < 0:
			return sh, fmt.Errorf("%s: unknown role %q, want web, app, cluster or db", f, tr.Role)
		case seen[r]:
			return sh, fmt.Errorf("%s: a second tier of role %q; the chain has one tier per role", f, tr.Role)
		case r < last:
			return sh, fmt.Errorf("%s: role %q after %q; the chain runs web, app, cluster, db", f, tr.Role, order[last])
		case tr.Replicas < 1 || tr.Replicas > math.MaxInt16:
			return sh, fmt.Errorf("%s.replicas: want an integer in [1,%d], got %d", f, math.MaxInt16, tr.Replicas)
		case tr.Cores < 0:
			return sh, fmt.Errorf("%s.cores: want an integer >= 0 (0: the model's %d), got %d", f, m.Cores, tr.Cores)
		}
		seen[r], last = true, r
		sh.tiers[r] = tr
	}
	for _, r := range []int{0, 1, 3} {
		if !seen[r] {
			return sh, fmt.Errorf("deployment %q: no tier of role %q; the chain needs web, app and db", e.Deployment.Topology, order[r])
		}
	}
	sh.hasCluster = seen[2]
	pool := func(r int, name string, v int) (int32, error) {
		if v < 1 || v > math.MaxInt32 {
			return 0, fmt.Errorf("allocation[%q].%s: want a pool size >= 1, got %d", sh.tiers[r].Name, name, v)
		}
		return int32(v), nil
	}
	var err error
	if sh.webThreads, err = pool(0, algorithms.PoolThreads, e.Allocation[sh.tiers[0].Name].Threads); err != nil {
		return sh, err
	}
	if sh.appThreads, err = pool(1, algorithms.PoolThreads, e.Allocation[sh.tiers[1].Name].Threads); err != nil {
		return sh, err
	}
	if sh.appConns, err = pool(1, algorithms.PoolConnections, e.Allocation[sh.tiers[1].Name].Connections); err != nil {
		return sh, err
	}
	return sh, nil
}

// Runner is the simulator as an algorithms.Experimenter. A nil Model means
// DefaultModel. Runner values are safe for concurrent use: each trial builds
// its own state.
type Runner struct {
	Model *Model
	Seed  uint64
	// Trials, if set, lets a finer adaptive trial go on from a coarser
	// one of the same experiment (nil: every trial from its start).
	Trials *Trials
}

var _ algorithms.Experimenter = Runner{}

// RunExperiment simulates one trial. An adaptive trial that a coarser one
// of the same experiment ended precise before goes on from it (Trials).
func (r Runner) RunExperiment(ctx context.Context, e algorithms.Experiment) (algorithms.Observation, error) {
	if r.Trials == nil || !e.Timing.Adaptive() {
		obs, _, err := Simulate(ctx, r.Model, e, r.Seed)
		return obs, err
	}
	key := trialKey(e)
	c := r.Trials.take(key, e.Timing.Precision)
	// The mark where the coarser trial ended may hold this one too.
	ended := c != nil && c.refine(e.Timing.Precision)
	if c == nil {
		var err error
		if c, err = newTrial(r.Model, e, r.Seed); err != nil {
			return algorithms.Observation{}, err
		}
	}
	var o algorithms.Observation
	if ended {
		o, _ = c.result()
	} else {
		var err error
		if o, _, err = c.runToEnd(ctx); err != nil {
			return o, err
		}
	}
	if c.series.endedPrecise() {
		r.Trials.keep(key, e.Timing.Precision, c)
	}
	return o, nil
}

// CheckExperiment reports what RunExperiment would reject in e, without
// simulating: the model, the workload, the timing, the chain of roles and
// the pools the chain needs. A command that finds this method on its runner
// (runner.ExperimentChecker) refuses a deployment before its first
// experiment rather than experiments into a campaign. The errors are
// Simulate's, without its "simulate: " prefix.
func (r Runner) CheckExperiment(e algorithms.Experiment) error {
	m := r.Model
	if m == nil {
		m = DefaultModel()
	}
	_, err := checkExperiment(m, e)
	return err
}

// result is the trial's observation, with its intervals, and its stats.
func (c *chain) result() (algorithms.Observation, Stats) {
	end := c.capture(c.now)
	tot, h := end, c.responseTimes.Histogram()
	var before totals
	if from := c.series.windowSnapshot(); from != nil {
		// An adaptive trial's window began at a snapshot, not at the restart.
		rec := c.responseTimes.Since(&from.rec)
		tot, h = end.minus(from.tot), rec.Histogram()
		before = from.tot
	}
	o := c.observation(tot, c.windowEnd-c.windowStart, h)
	c.intervals(&o, tot)
	st := c.collectStats()
	st.Pages, st.WarmUpPages = tot.pages, st.WarmUpPages+before.pages
	st.GCPauses = 0
	for _, n := range tot.pauses {
		st.GCPauses += n
	}
	st.WebDrops, st.AppDrops, st.QueriesPerServletPage = tot.webDrops, tot.appDrops, 0
	if tot.servletPages > 0 {
		st.QueriesPerServletPage = float64(tot.queriesSent) / float64(tot.servletPages)
	}
	return o, st
}

func (c *chain) collectStats() Stats {
	s := c.stats
	s.Pages = c.pages
	s.LazyEvents = c.lazyFINEnds
	for i := range c.stations {
		s.LazyEvents += c.stations[i].Absorbed()
	}
	s.SimulatedSeconds = c.now
	if c.servletPages > 0 {
		s.QueriesPerServletPage = float64(c.queriesSent) / float64(c.servletPages)
	}
	s.WebDrops, s.AppDrops = c.webDrops, c.appDrops
	if len(c.web) > 0 && c.web[0].finWait != nil {
		s.FINWait = c.web[0].finWait.Mean()
	}
	for i := range c.web {
		s.WebQueue += c.web[i].waiting.Len()
	}
	for i := range c.app {
		s.AppQueue += c.app[i].acceptQueue.Len()
	}
	return s
}

// totals are a trial's integrals and counts since the last restart, at one
// time: the window's when taken at its end; an adaptive trial's window,
// which begins where the data put the end of the transient, is the
// difference of two.
type totals struct {
	pages, drops, retries                 int64
	webDrops, appDrops                    int64
	queriesSent, servletPages             int64
	within                                []int64   // pages within each SLA of the series
	busy, paused                          []float64 // per station
	pauses                                []int64
	workers, workersFull, fin             []float64 // per web server
	responses                             []int64
	threads, threadsFull, conns, connFull []float64 // per app server
	servlets                              []int64
	queries, samples, fullSamples         []int64 // per query server, cluster then db
	residence                             []float64
}

// capture takes the totals at now, reading without closing any integral.
func (c *chain) capture(now float64) totals {
	t := totals{pages: c.pages, drops: c.drops, retries: c.retries, webDrops: c.webDrops, appDrops: c.appDrops,
		queriesSent: c.queriesSent, servletPages: c.servletPages, within: slices.Clone(c.series.within)}
	for i := range c.stations {
		st := &c.stations[i]
		t.busy = append(t.busy, st.BusyAt(now))
		t.paused = append(t.paused, st.PausedAt(now))
		t.pauses = append(t.pauses, st.Pauses())
	}
	for i := range c.web {
		w := &c.web[i]
		c.finCatchUp(w) // see cumulative
		t.workers = append(t.workers, w.workers.AreaAt(now))
		t.workersFull = append(t.workersFull, w.workers.FullTimeAt(now))
		fin := 0.0
		if w.finWait != nil {
			fin = w.finWait.AreaAt(now)
		}
		t.fin = append(t.fin, fin)
		t.responses = append(t.responses, w.responses)
	}
	for i := range c.app {
		a := &c.app[i]
		t.threads = append(t.threads, a.threads.AreaAt(now))
		t.threadsFull = append(t.threadsFull, a.threads.FullTimeAt(now))
		t.conns = append(t.conns, a.connections.AreaAt(now))
		t.connFull = append(t.connFull, a.connections.FullTimeAt(now))
		t.servlets = append(t.servlets, a.servlets)
	}
	for _, q := range [][]queryServer{c.cluster, c.db} {
		for i := range q {
			k := &q[i]
			t.queries = append(t.queries, k.queries)
			t.residence = append(t.residence, k.residenceSum)
			t.samples = append(t.samples, k.samples)
			t.fullSamples = append(t.fullSamples, k.fullSamples)
		}
	}
	return t
}

// minus is t - a: the totals of the time between a and t.
func (t totals) minus(a totals) totals {
	sub := func(x, y []float64) []float64 {
		out := make([]float64, len(x))
		for i := range x {
			out[i] = x[i] - y[i]
		}
		return out
	}
	subi := func(x, y []int64) []int64 {
		out := make([]int64, len(x))
		for i := range x {
			out[i] = x[i] - y[i]
		}
		return out
	}
	return totals{pages: t.pages - a.pages, drops: t.drops - a.drops, retries: t.retries - a.retries,
		webDrops: t.webDrops - a.webDrops, appDrops: t.appDrops - a.appDrops,
		queriesSent: t.queriesSent - a.queriesSent, servletPages: t.servletPages - a.servletPages,
		within: subi(t.within, a.within), busy: sub(t.busy, a.busy), paused: sub(t.paused, a.paused), pauses: subi(t.pauses, a.pauses),
		workers: sub(t.workers, a.workers), workersFull: sub(t.workersFull, a.workersFull), fin: sub(t.fin, a.fin), responses: subi(t.responses, a.responses),
		threads: sub(t.threads, a.threads), threadsFull: sub(t.threadsFull, a.threadsFull), conns: sub(t.conns, a.conns),
		connFull: sub(t.connFull, a.connFull), servlets: subi(t.servlets, a.servlets),
		queries: subi(t.queries, a.queries), residence: sub(t.residence, a.residence),
		samples: subi(t.samples, a.samples), fullSamples: subi(t.fullSamples, a.fullSamples)}
}

// observation turns a window's totals (T seconds long, response times h)
// into what SysStat, the server logs and the pool monitors gave the paper.
func (c *chain) observation(t totals, T float64, h algorithms.Histogram) algorithms.Observation {
	o := algorithms.Observation{
		RuntimeSeconds: T,
		Throughput:     float64(t.pages) / T,
		ResponseTimes:  h,
		Drops:          t.drops,
		Retries:        t.retries,
	}
	// A server's response time is its time-integral of requests inside
	// divided by its completions (Little's law), which is the mean residence
	// up to the requests cut by the window's edges.
	rt := func(area float64, n int64) float64 {
		if n == 0 {
			return 0
		}
		return area / float64(n)
	}
	cpu := func(s int) float64 {
		return min(1, t.busy[s]/(float64(c.stations[s].Cores())*T))
	}
	// Full time is a difference of running totals: a pool full for the
	// whole window can sum to a rounding more than T.
	pool := func(name string, size int32, area, full float64) algorithms.PoolObservation {
		return algorithms.PoolObservation{Name: name, Size: int(size), Busy: area / T, FullShare: min(1, full/T)}
	}
	server := func(r int, i int, s int, pools []algorithms.PoolObservation, n int64, area float64, gc bool) algorithms.ServerObservation {
		so := algorithms.ServerObservation{
			Name:         c.tiers[r].ServerName(i),
			Tier:         c.tiers[r].Name,
			CPU:          cpu(s),
			Pools:        pools,
			Throughput:   float64(n) / T,
			ResponseTime: rt(area, n),
		}
		if gc {
			so.GCShare = t.paused[s] / T
		}
		return so
	}
	for i := range c.web {
		w := &c.web[i]
		// Little's law on the workers that serve (held minus FIN waits).
		active := t.workers[i]
		if w.finWait != nil {
			active -= t.fin[i]
		}
		o.Servers = append(o.Servers, server(0, i, w.station,
			[]algorithms.PoolObservation{pool(algorithms.PoolThreads, w.workers.Size(), t.workers[i], t.workersFull[i])}, t.responses[i], active, false))
	}
	for i := range c.app {
		a := &c.app[i]
		o.Servers = append(o.Servers, server(1, i, a.station, []algorithms.PoolObservation{
			pool(algorithms.PoolThreads, a.threads.Size(), t.threads[i], t.threadsFull[i]),
			pool(algorithms.PoolConnections, a.connections.Size(), t.conns[i], t.connFull[i]),
		}, t.servlets[i], t.threads[i], true))
	}
	j := 0
	query := func(r int, q []queryServer, gc bool) {
		for i := range q {
			k := &q[i]
			// The answered queries' residences include the time before the
			// window of those that entered before it: a full pool can sum
			// to a little more than its size, which it cannot hold.
			busy := t.residence[j] / T
			if k.threads > 0 {
				busy = min(busy, float64(k.threads))
			}
			p := algorithms.PoolObservation{Name: algorithms.PoolThreads, Size: int(k.threads), Busy: busy, FullShare: -1}
			if t.samples[j] > 0 {
				p.FullShare = float64(t.fullSamples[j]) / float64(t.samples[j])
			}
			o.Servers = append(o.Servers, server(r, i, k.station, []algorithms.PoolObservation{p}, t.queries[j], t.residence[j], gc))
			j++
		}
	}
	query(2, c.cluster, true)
	query(3, c.db, false)
	return o
}
