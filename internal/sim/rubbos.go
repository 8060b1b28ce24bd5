package sim

import (
	"context"
	"fmt"
	"math"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/sim/engine"
)

// This file is the RUBBoS chain model: emulated users, web -> app ->
// [cluster] -> db, the paper's soft resources and admission, built on the
// event core of internal/sim/engine.

// HTTP request kinds: the classes of a web station.
const (
	reqPage   = 0 // a servlet page, forwarded to the app tier
	reqStatic = 1 // a static page
	reqImage  = 2 // an embedded image
)

// Heap event kinds.
const (
	evThink uint8 = iota // a user ends a think and sends a page
	evRetryWeb
	evRetryApp
	evTick // once per simulated second: cancellation
	evWindowStart
	evWindowEnd
)

// Stream purposes: part of the seed of every stream (engine.NewStream).
const (
	purposeUser uint64 = iota + 1
	purposeStation
	purposeFIN
	purposeBalance
	purposeAccept
	purposeMix
)

// inf is the time of an event that will not happen.
var inf = math.Inf(1)

// Station roles.
const (
	roleWeb uint8 = iota
	roleApp
	roleCluster
	roleDB
)

// Fixed slots of chain.sources; the stations follow, then the FIN stations.
const (
	candHeap = iota
	candThink
	candForward
	candStations
)

// user holds what the hops of a user's outstanding request need (a user has
// at most one HTTP request in the system at a time). It is kept small, as
// every event touches one; what only the start and end of a page need lives
// in chain.usersCold.
type user struct {
	atQueryTier float64 // when the current query reached the query tier (cluster, or db without one)
	atDB        float64 // when the current query reached the db tier
	queriesLeft int16   // queries the servlet has still to send
	// The servers the current request is at or went through, by index in
	// their tier: the responses retrace the requests' path.
	web, app, cluster, db int16
	requestKind           uint8 // reqPage, reqStatic or reqImage
	imagesLeft            uint8 // images still to fetch for this page
	connDrops             uint8 // drops of the current connection: the retry backoff's exponent
}

// webServer is a web server (Apache, worker MPM): a worker per HTTP
// request, held until the client's FIN.
type webServer struct {
	station   int                  // index of its CPU in chain.stations
	workers   engine.Level         // held workers, FIN waits included; full at the worker pool's size
	waiting   engine.IDQueue       // users waiting for a worker (the accept queue)
	finWait   *engine.DelayStation // workers waiting for the client's FIN; nil: no FIN wait
	finSource int                  // slot of finWait in chain.sources
	toApp     balancer             // picks the app server of a servlet request
	responses int64                // responses sent in the window
}

// appServer is an app server (Tomcat): a thread and a DB connection per
// servlet request, both held for the whole servlet.
type appServer struct {
	station        int            // index of its CPU in chain.stations
	threads        engine.Level   // busy threads; full at the thread pool's size
	connections    engine.Level   // held DB connections; full at the connection pool's size
	acceptQueue    engine.IDQueue // users waiting for a thread
	connectionWait engine.IDQueue // users holding a thread, waiting for a connection
	wakeOrder      engine.Stream  // the random order in which waiting users get a thread
	toNext         balancer       // picks the cluster (or db) server of a query
	gcUnits        int            // threads + connections the JVM holds: its collection cost
	servlets       int64          // servlets completed in the window
}

// queryServer is a cluster or db server: one thread per upstream connection,
// busy while a query is inside (the db call included, for a cluster server).
type queryServer struct {
	station      int      // index of its CPU in chain.stations
	threads      int32    // the threads that exist: connections that can reach it
	inflight     int32    // queries sent to it and not answered yet (on their way included)
	toDB         balancer // a cluster server's pick of the db server of a query
	gcUnits      int      // connections the JVM holds: its collection cost
	queries      int64    // queries answered in the window
	residenceSum float64  // seconds the window's answered queries spent inside (Little's law)
	samples      int64    // per-second samples of the threads in the window,
	fullSamples  int64    // and how many found every thread busy
}

// userCold is what only the start and the end of a page need.
//
// It is padded to a cache line: at 48 bytes every other user's cold
// state straddles two lines, and each page touches it once, at random.
type userCold struct {
	rng       engine.Stream // think times, navigation, query counts
	pageStart float64       // end of the think, start of the page
	nav       nav
	_         [20]byte
}

// balancer picks a replica of the next tier.
type balancer struct {
	replicas int           // of the next tier
	next     int           // round robin: the next pick
	random   bool          // pick at random (what mean value analysis assumes), not round robin
	rng      engine.Stream // random: the picks
}

func (b *balancer) pick() int {
	if b.replicas == 1 {
		return 0
	}
	if b.random {
		return b.rng.IntN(b.replicas)
	}
	i := b.next
	b.next++
	if b.next == b.replicas {
		b.next = 0
	}
	return i
}

// chain is one trial of the RUBBoS chain. The next event is the earliest of
// a few sources (chain.sources): the heap of irregular events, the think wheel,
// the web -> app forwards, each server's CPU and each web server's FIN
// waits; run dispatches it by source.
type chain struct {
	mix *Mix // what users do: pages, think times, queries

	now            float64           // the time of the event being handled
	events         engine.EventHeap  // think ends beyond the wheel's span, retries, ticks, the window's edges
	forwards       engine.DelayQueue // servlet requests on their way from web to app (forwardDelay)
	sources        engine.Sources    // the next time of every event source, by the cand* slots
	stations       []engine.Station  // the servers' CPUs, in source slots candStations+i
	firstFINSource int               // source slot of web server 0's FIN station; the others follow
	users          []user            // hot per-user state, touched at every hop
	usersCold      []userCold        // per-user state touched at a page's start and end only
	thinkEnds      *engine.Wheel     // users thinking, by the end of their think

	// The servers of each tier, in replica order (cluster is empty without
	// a cluster tier); toWeb picks the web server of each new connection;
	// the tiers by role (roleWeb to roleDB).
	web     []webServer
	app     []appServer
	cluster []queryServer
	db      []queryServer
	toWeb   balancer
	tiers   [4]algorithms.Tier

	// Model parameters, copied where a hop reads them.
	hasCluster       bool
	forwardDelay     float64 // web -> app, seconds; 0: straight to the app tier
	queryDelay       float64 // app -> query tier, seconds
	retryAfter       float64 // the wait before the first retry of a dropped connection, seconds
	retryFactor      float64 // its growth at each further retry
	webBacklog       int     // bounded admission: the users that may wait for a web worker,
	appBacklog       int     // and for an app thread
	boundedAdmission bool    // a full pool with a full backlog drops the connection
	randomWakeUp     bool    // a freed app thread goes to a random waiting user, not the first

	// The measured window and what is counted in it.
	windowStart, windowEnd float64             // simulated seconds
	measuring              bool                // the window has begun
	responseTimes          algorithms.Recorder // of the pages completed
	pages                  int64               // pages completed
	drops                  int64               // connections dropped at a full backlog
	retries                int64               // retries of dropped connections
	webDrops               int64               // drops at the web tier
	appDrops               int64               // drops at the app tier
	queriesSent            int64               // SQL queries sent by servlets
	servletPages           int64               // servlet pages started
	lazyFINEnds            int64               // FIN ends applied without an event (finCatchUp), warm-up included

	// thinkFront loads the state of the users whose think ends in the
	// wheel's next bucket at once, so that their cache misses overlap.
	prefetchedBucket int64 // the wheel bucket whose users were loaded
	prefetchSink     uint8 // what the loads read, kept so they are not optimised away

	series *series                                   // the trial as one-second intervals (series.go)
	ramp   *rampDriver                               // a ramp's windows (ramp.go); nil for a trial
	seed   uint64                                    // the streams' seed, for users added later (addUsers)
	stats  Stats                                     // events and warm-up pages, for collectStats
	onPage func(u int32, state uint8, think float64) // test hook: a page ends
}

// newChain checks the experiment (checkExperiment) and builds the trial.
func newChain(m *Model, e algorithms.Experiment, seed uint64) (*chain, error) {
	sh, err := checkExperiment(m, e)
	if err != nil {
		return nil, err
	}
	c := &chain{mix: m.Mix, tiers: sh.tiers, hasCluster: sh.hasCluster, windowStart: sh.start, windowEnd: sh.end}
	users := e.Workload.Users
	wT, aT, aC := sh.webThreads, sh.appThreads, sh.appConns
	cores := func(r int) int {
		if c.tiers[r].Cores > 0 {
			return c.tiers[r].Cores
		}
		return m.Cores
	}

	c.forwardDelay = float64(m.Web.ForwardDelay)
	c.queryDelay = float64(m.App.QueryDelay)
	c.retryAfter = float64(m.Admission.RetryAfter)
	c.retryFactor = m.Admission.RetryFactor
	c.webBacklog = m.Web.Backlog
	c.appBacklog = m.App.Backlog
	c.boundedAdmission = m.Admission.Mode == AdmissionBounded
	c.randomWakeUp = c.boundedAdmission && m.App.AcceptOrder == OrderRandom
	random := m.LoadBalancing == BalanceRandom
	lb := func(n int, index uint64) balancer {
		return balancer{replicas: n, random: random, rng: engine.NewStream(seed, purposeBalance, index)}
	}

	nW, nA, nC, nD := c.tiers[0].Replicas, c.tiers[1].Replicas, c.tiers[2].Replicas, c.tiers[3].Replicas
	openConns := int(min(aC, aT)) * nA // connections the app tier can open
	nextTier := nD
	if c.hasCluster {
		nextTier = nC
	}
	addStation := func(role uint8, s *engine.Station) int {
		s.Tag = role
		c.stations = append(c.stations, *s)
		return len(c.stations) - 1
	}
	// Station streams are indexed by role and server, never by position, so
	// adding a replica elsewhere does not shift them.
	stRNG := func(role uint8, i int) engine.Stream {
		return engine.NewStream(seed, purposeStation, uint64(role)<<32|uint64(i))
	}
	webMeans := []float64{float64(m.Web.PageDemand), float64(m.Web.StaticDemand), float64(m.Web.ImageDemand)}
	c.web = make([]webServer, nW)
	for i := range c.web {
		w := &c.web[i]
		w.station = addStation(roleWeb, engine.NewStation(cores(0), 3, webMeans, stRNG(roleWeb, i)))
		w.workers = engine.NewLevel(wT)
		w.toApp = lb(nA, 1<<32|uint64(i))
	}
	segMean := float64(m.App.ServletDemand) / (m.Mix.queriesPerServletPageMean() + 1)
	c.app = make([]appServer, nA)
	for i := range c.app {
		a := &c.app[i]
		s := engine.NewStation(cores(1), 1, []float64{segMean}, stRNG(roleApp, i))
		a.gcUnits = int(aT) + int(min(aC, aT))
		if m.App.GC.enabled() {
			s.SetGC(float64(m.App.GC.WorkInterval), m.App.GC.share(a.gcUnits))
		}
		a.station = addStation(roleApp, s)
		a.threads, a.connections = engine.NewLevel(aT), engine.NewLevel(aC)
		a.wakeOrder = engine.NewStream(seed, purposeAccept, uint64(i))
		a.toNext = lb(nextTier, 2<<32|uint64(i))
	}
	if c.hasCluster {
		c.cluster = make([]queryServer, nC)
		for i := range c.cluster {
			k := &c.cluster[i]
			s := engine.NewStation(cores(2), 1, []float64{float64(m.Cluster.QueryDemand)}, stRNG(roleCluster, i))
			k.gcUnits = (openConns + nC - 1) / nC
			if m.Cluster.GC.enabled() {
				s.SetGC(float64(m.Cluster.GC.WorkInterval), m.Cluster.GC.share(k.gcUnits))
			}
			k.station = addStation(roleCluster, s)
			k.threads = int32(k.gcUnits)
			k.toDB = lb(nD, 3<<32|uint64(i))
		}
	}
	c.db = make([]queryServer, nD)
	for i := range c.db {
		d := &c.db[i]
		d.station = addStation(roleDB, engine.NewStation(cores(3), 1, []float64{float64(m.DB.QueryDemand)}, stRNG(roleDB, i)))
		d.threads = int32(openConns)
	}
	c.firstFINSource = candStations + len(c.stations)
	nKeys := c.firstFINSource
	fm := m.Web.FINWait.mean(users)
	if fm > 0 {
		nKeys += nW
	}
	c.sources = engine.NewSources(nKeys)
	if fm > 0 {
		for i := range c.web {
			c.web[i].finWait = engine.NewDelayStation(fm, engine.NewStream(seed, purposeFIN, uint64(i)))
			c.web[i].finSource = c.firstFINSource + i
		}
	}
	c.toWeb = lb(nW, 0)

	// Users start thinking at t = 0, at the first page of a session.
	c.users = make([]user, 0, users)
	c.usersCold = make([]userCold, 0, users)
	// 128 s of 1/64 s buckets: think times over 70 s are 0 in RUBBoS, and a
	// longer one (another mix) goes to the heap.
	c.thinkEnds = engine.NewWheel(users, 64, 13)
	c.seed = seed
	c.addUsers(users, 0)
	c.push(1, 0, evTick)
	c.series = newSeries(c, sh.timing)
	if c.series.adaptive {
		// An adaptive trial measures from its minimum ramp-up, and its
		// window ends at a tick (series.go).
		c.windowStart = float64(c.series.minWarmUp)
		c.push(c.windowStart, 0, evWindowStart)
	} else {
		c.push(c.windowStart, 0, evWindowStart)
		c.push(c.windowEnd, 0, evWindowEnd)
	}
	return c, nil
}

// addUsers adds n users to the trial at time at, each starting to think at
// the first page of a session, as a trial's users do at its start. User i's
// draws come from its own stream (purposeUser, i) whenever it joins, so a
// ramp (ramp.go) that adds users step by step is deterministic with the seed.
func (c *chain) addUsers(n int, at float64) {
	first := len(c.users)
	c.users = append(c.users, make([]user, n)...)
	c.usersCold = append(c.usersCold, make([]userCold, n)...)
	for i := first; i < first+n; i++ {
		k := &c.usersCold[i]
		k.rng = engine.NewStream(c.seed, purposeUser, uint64(i))
		c.mix.begin(&k.nav)
		k.pageStart = at + c.mix.think(&k.rng)
		c.prepare(int32(i))
		// Not thinkUntil: its look at the wheel's front would move the
		// wheel to the first user's bucket, and every later user with an
		// earlier end would be inserted into that bucket's sorted run,
		// quadratic in the users.
		if !c.thinkEnds.Push(k.pageStart, int32(i)) {
			c.push(k.pageStart, int32(i), evThink)
		}
	}
	c.setCand(candThink, c.thinkFront())
}

// run processes events until the window ends or ctx is done.
func (c *chain) run(ctx context.Context) error {
	var events int64
	defer func() { c.stats.Events += events }()
	for {
		// The next event is the earliest source: a dozen or so slots,
		// cheaper to scan than to keep in a priority queue.
		bi, bt := c.sources.Next()
		c.now = bt
		events++
		switch {
		case bi >= candStations && bi < c.firstFINSource:
			c.stationEvent(bi - candStations)
		case bi == candHeap:
			_, id, kind := c.events.Pop()
			c.setCand(candHeap, c.events.Top())
			switch kind {
			case evThink:
				c.thinkEnd(id)
			case evRetryWeb:
				c.retries++
				c.tryWeb(id)
			case evRetryApp:
				c.retries++
				c.tryApp(id)
			case evTick:
				if err := ctx.Err(); err != nil {
					return fmt.Errorf("simulate: %w", err)
				}
				if c.measuring {
					c.sample()
				}
				if c.tick(bt) {
					// The window is read without closing an integral
					// (capture), so the trial can go on exactly as a finer
					// one would (refine).
					c.windowEnd = bt
					return nil
				}
				if c.ramp != nil && c.ramp.tick(c, bt) {
					// A ramp's window ended: the ramp goes on from here
					// (ramp.go), so the next tick stays scheduled.
					c.push(bt+1, 0, evTick)
					return nil
				}
				c.push(bt+1, 0, evTick)
			case evWindowStart:
				c.restart()
				c.startWindow(bt)
			case evWindowEnd:
				c.record(bt)
				c.finish()
				return nil
			}
		case bi == candThink:
			d := c.thinkEnds.Pop()
			c.setCand(candThink, c.thinkFront())
			c.thinkEnd(d.ID)
		case bi == candForward:
			d := c.forwards.Pop()
			c.setCand(candForward, c.forwards.Front())
			c.toApp(d.ID)
		default:
			w := &c.web[bi-c.firstFINSource]
			w.finWait.Fire(bt)
			c.releaseWorker(w)
			c.finCand(w)
		}
	}
}

// stationEvent handles what is due at station s.
func (c *chain) stationEvent(s int) {
	st := &c.stations[s]
	id := st.Step(c.now)
	c.setCand(candStations+s, st.Due())
	if id >= 0 {
		c.done(s, id)
	}
}

// push adds an event of kind for entity id at time t to the heap.
func (c *chain) push(t float64, id int32, kind uint8) {
	c.events.Push(t, id, kind)
	c.setCand(candHeap, c.events.Top())
}

// setCand sets the next time of event source i.
func (c *chain) setCand(i int, t float64) { c.sources.Set(i, t) }

// arrive puts user u on station s in class k.
func (c *chain) arrive(s int, u int32, k int) {
	st := &c.stations[s]
	st.Arrive(c.now, u, k)
	c.setCand(candStations+s, st.Due())
}

// done routes a job that finished its CPU demand at station s.
func (c *chain) done(s int, u int32) {
	us := &c.users[u]
	switch c.stations[s].Tag {
	case roleWeb:
		if us.requestKind == reqPage {
			if c.forwardDelay > 0 {
				c.forwards.Push(engine.Delayed{T: c.now + c.forwardDelay, ID: u})
				if c.forwards.Len() == 1 {
					c.setCand(candForward, c.now+c.forwardDelay)
				}
			} else {
				c.toApp(u)
			}
			return
		}
		c.respond(u)
	case roleApp:
		if us.queriesLeft > 0 {
			us.queriesLeft--
			c.queriesSent++
			c.sendQuery(u)
			return
		}
		c.servletEnd(u)
	case roleCluster:
		i := c.cluster[us.cluster].toDB.pick()
		us.db = int16(i)
		d := &c.db[i]
		d.inflight++
		us.atDB = c.now
		c.arrive(d.station, u, 0)
	case roleDB:
		d := &c.db[us.db]
		d.inflight--
		d.queries++
		d.residenceSum += c.now - us.atDB
		if c.hasCluster {
			k := &c.cluster[us.cluster]
			k.inflight--
			k.queries++
			k.residenceSum += c.now - us.atQueryTier
		}
		c.arrive(c.app[us.app].station, u, 0) // the next servlet segment
	}
}

// sendQuery sends the servlet's next query towards the query tier: the
// cluster, or the db without one. It reaches it after the constant query
// delay; the replica is chosen now (queries arrive in the order they leave,
// so round robin is the same), and the query counts as inside from then
// on: sample subtracts those still on their way.
func (c *chain) sendQuery(u int32) {
	us := &c.users[u]
	i := c.app[us.app].toNext.pick()
	t := c.now + c.queryDelay
	us.atQueryTier = t
	var k *queryServer
	if c.hasCluster {
		us.cluster = int16(i)
		k = &c.cluster[i]
	} else {
		us.db = int16(i)
		us.atDB = t
		k = &c.db[i]
	}
	k.inflight++
	st := &c.stations[k.station]
	st.ArriveAt(t, u)
	if st.Pending() == 1 {
		c.setCand(candStations+k.station, st.Due())
	}
}

// thinkUntil makes user u think until time t.
func (c *chain) thinkUntil(u int32, t float64) {
	if c.thinkEnds.Push(t, u) {
		c.setCand(candThink, c.thinkFront())
		return
	}
	c.push(t, u, evThink)
}

// thinkFront is the time of the next think end. When the wheel moves to a
// new bucket, it loads the per-user state of the users in it, all at once:
// the cache misses overlap, where one at each think end and page end would
// each stall.
func (c *chain) thinkFront() float64 {
	w := c.thinkEnds
	t := w.Front()
	if b := w.Bucket(); b != c.prefetchedBucket {
		c.prefetchedBucket = b
		x := c.prefetchSink
		for _, d := range w.InBucket() {
			x ^= c.users[d.ID].requestKind ^ c.usersCold[d.ID].nav.state
		}
		c.prefetchSink = x
	}
	return t
}

// thinkEnd sends the user's next page, prepared when the think began.
func (c *chain) thinkEnd(u int32) {
	us := &c.users[u]
	if us.requestKind == reqPage {
		c.servletPages++
	}
	c.request(u, us.requestKind)
}

// request opens a new connection to a web server.
func (c *chain) request(u int32, kind uint8) {
	us := &c.users[u]
	us.requestKind = kind
	us.connDrops = 0
	us.web = int16(c.toWeb.pick())
	c.tryWeb(u)
}

// backoff is the wait before the next retry of a dropped connection.
func (c *chain) backoff(us *user) float64 {
	d := c.retryAfter * math.Pow(c.retryFactor, float64(us.connDrops))
	if us.connDrops < 255 {
		us.connDrops++
	}
	return d
}

// finCatchUp lets the FIN waits of web server w that ended by now release
// their workers. While nobody waits for a worker, a FIN end changes nothing
// but the count of held workers, so it is not an event: the ends are drawn
// and applied in time order, with the same draws, the next time the server
// changes.
func (c *chain) finCatchUp(w *webServer) {
	f := w.finWait
	if f == nil || w.waiting.Len() > 0 { // with a queue, FIN ends are events
		return
	}
	for f.Next() <= c.now {
		t := f.Next()
		f.Fire(t)
		w.workers.Add(t, -1)
		c.lazyFINEnds++
	}
}

// finCand makes the FIN ends of w events while requests wait for a worker.
func (c *chain) finCand(w *webServer) {
	if w.finWait == nil {
		return
	}
	if w.waiting.Len() > 0 {
		c.setCand(w.finSource, w.finWait.Next())
	} else {
		c.setCand(w.finSource, inf)
	}
}

// tryWeb asks the user's web server for a worker.
func (c *chain) tryWeb(u int32) {
	us := &c.users[u]
	w := &c.web[us.web]
	c.finCatchUp(w)
	if w.workers.Value() < w.workers.Size() {
		w.workers.Add(c.now, 1)
		c.startWeb(u)
		return
	}
	if !c.boundedAdmission || w.waiting.Len() < c.webBacklog {
		w.waiting.Push(u)
		if w.waiting.Len() == 1 {
			c.finCand(w)
		}
		return
	}
	c.drops++
	c.webDrops++
	c.push(c.now+c.backoff(us), u, evRetryWeb)
}

func (c *chain) startWeb(u int32) {
	us := &c.users[u]
	c.arrive(c.web[us.web].station, u, int(us.requestKind))
}

// respond sends the web server's answer to the current HTTP request: the
// worker waits for the client's FIN, the client goes on with its page.
func (c *chain) respond(u int32) {
	us := &c.users[u]
	w := &c.web[us.web]
	w.responses++
	if w.finWait != nil {
		c.finCatchUp(w)
		w.finWait.Arrive(c.now)
		if w.waiting.Len() > 0 {
			c.setCand(w.finSource, w.finWait.Next())
		}
	} else {
		c.releaseWorker(w)
	}
	if us.imagesLeft > 0 {
		us.imagesLeft--
		c.request(u, reqImage)
		return
	}
	c.pageDone(u)
}

// releaseWorker frees a web worker, or hands it to the first waiting request.
func (c *chain) releaseWorker(w *webServer) {
	if w.waiting.Len() > 0 {
		c.startWeb(w.waiting.Pop())
		return
	}
	w.workers.Add(c.now, -1)
}

// pageDone records the page and starts the user's next think. The next
// page is drawn now, so that the end of the think touches only the hot
// per-user state.
func (c *chain) pageDone(u int32) {
	k := &c.usersCold[u]
	if c.measuring {
		rt := c.now - k.pageStart
		c.responseTimes.Add(rt)
		c.series.pageWithin(rt)
	}
	c.pages++
	c.series.pageDone(c.now, c.now-k.pageStart)
	if c.ramp != nil {
		c.ramp.pageDone(c.now, c.now-k.pageStart)
	}
	c.mix.step(&k.nav, &k.rng)
	z := c.mix.think(&k.rng)
	c.prepare(u)
	if c.onPage != nil {
		c.onPage(u, k.nav.state, z)
	}
	k.pageStart = c.now + z
	c.thinkUntil(u, k.pageStart)
}

// prepare sets up the user's next page: its kind, images and queries.
func (c *chain) prepare(u int32) {
	k := &c.usersCold[u]
	st := &c.mix.states[k.nav.state]
	us := &c.users[u]
	us.imagesLeft = st.images
	if st.static {
		us.requestKind = reqStatic
		return
	}
	us.requestKind = reqPage
	us.queriesLeft = int16(min(c.mix.queries(k.nav.state, &k.rng), math.MaxInt16))
}

// toApp forwards a servlet request to an app server.
func (c *chain) toApp(u int32) {
	us := &c.users[u]
	us.app = int16(c.web[us.web].toApp.pick())
	us.connDrops = 0
	c.tryApp(u)
}

// tryApp asks the user's app server for a thread.
func (c *chain) tryApp(u int32) {
	us := &c.users[u]
	a := &c.app[us.app]
	if a.threads.Value() < a.threads.Size() {
		a.threads.Add(c.now, 1)
		c.gotThread(a, u)
		return
	}
	if !c.boundedAdmission || a.acceptQueue.Len() < c.appBacklog {
		a.acceptQueue.Push(u)
		return
	}
	c.drops++
	c.appDrops++
	c.push(c.now+c.backoff(us), u, evRetryApp)
}

// gotThread starts the servlet of u once it holds a DB connection.
func (c *chain) gotThread(a *appServer, u int32) {
	if a.connections.Value() < a.connections.Size() {
		a.connections.Add(c.now, 1)
		c.arrive(a.station, u, 0)
		return
	}
	a.connectionWait.Push(u)
}

// servletEnd releases the connection, then the thread, and answers the web
// worker.
func (c *chain) servletEnd(u int32) {
	us := &c.users[u]
	a := &c.app[us.app]
	a.servlets++
	if a.connectionWait.Len() > 0 {
		c.arrive(a.station, a.connectionWait.Pop(), 0)
	} else {
		a.connections.Add(c.now, -1)
	}
	if n := a.acceptQueue.Len(); n > 0 {
		var v int32
		if c.randomWakeUp && n > 1 {
			v = a.acceptQueue.PopAt(a.wakeOrder.IntN(n))
		} else {
			v = a.acceptQueue.Pop()
		}
		c.gotThread(a, v)
	} else {
		a.threads.Add(c.now, -1)
	}
	c.respond(u)
}

// sample takes the per-second look at the query tiers' threads that SysStat
// and a thread monitor would: are all of them busy?
func (c *chain) sample() {
	look := func(q []queryServer) {
		for i := range q {
			k := &q[i]
			st := &c.stations[k.station]
			n := k.inflight - int32(st.Pending()-st.PendingBy(c.now)) // minus those on their way
			k.samples++
			if n >= k.threads {
				k.fullSamples++
			}
		}
	}
	look(c.cluster)
	look(c.db)
}

// restart begins the measured window: integrals and counters start at zero.
func (c *chain) restart() {
	now := c.now
	for i := range c.stations {
		c.stations[i].Restart(now)
	}
	for i := range c.web {
		w := &c.web[i]
		c.finCatchUp(w)
		if w.finWait != nil {
			w.finWait.Restart(now)
		}
		w.workers.Restart(now)
		w.responses = 0
	}
	for i := range c.app {
		a := &c.app[i]
		a.threads.Restart(now)
		a.connections.Restart(now)
		a.servlets = 0
	}
	for _, q := range [][]queryServer{c.cluster, c.db} {
		for i := range q {
			q[i].queries, q[i].residenceSum, q[i].samples, q[i].fullSamples = 0, 0, 0, 0
		}
	}
	c.stats.WarmUpPages = c.pages
	c.responseTimes.Reset()
	clear(c.series.within)
	c.pages, c.drops, c.retries, c.webDrops, c.appDrops, c.queriesSent, c.servletPages = 0, 0, 0, 0, 0, 0, 0
	c.measuring = true
}

// finish closes the integrals at the end of the window.
func (c *chain) finish() {
	now := c.now
	for i := range c.stations {
		c.stations[i].Advance(now)
	}
	for i := range c.web {
		w := &c.web[i]
		c.finCatchUp(w)
		if w.finWait != nil {
			w.finWait.Advance(now)
		}
		w.workers.Add(now, 0)
	}
	for i := range c.app {
		c.app[i].threads.Add(now, 0)
		c.app[i].connections.Add(now, 0)
	}
}
