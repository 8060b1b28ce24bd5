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

// Fixed slots of the event sources in chain.key; stations follow, then FIN stations.
const (
	candHeap = iota
	candThink
	candForward
	candStations
)

// user holds what the hops of a user's outstanding request need (a user has
// at most one HTTP request in the system at a time). It is kept small, as
// every event touches one; what only the start and end of a page need lives
// in the chain's cold per-user slices.
type user struct {
	tQ       float64 // the current query reached the query tier (cluster, or db without one)
	tDB      float64 // the current query reached the db tier
	qLeft    int16   // queries left in the servlet
	web      int16
	app      int16
	cl       int16
	db       int16
	kind     uint8 // reqPage, reqStatic or reqImage
	images   uint8 // images still to fetch for this page
	attempts uint8 // drops of the current connection (retry backoff)
}

type webServer struct {
	st      int // station index
	size    int32
	workers engine.Level // held workers, FIN waits included
	queue   engine.IDQueue
	fin     *engine.DelayStation // nil: no FIN wait
	finCand int
	lb      balancer // to the app tier
	count   int64
}

type appServer struct {
	st       int
	threads  engine.Level
	conns    engine.Level
	accept   engine.IDQueue // waiting for a thread
	connWait engine.IDQueue // holding a thread, waiting for a connection
	order    engine.Stream  // random wake-up order
	lb       balancer
	gcUnits  int
	count    int64
}

// queryServer is a cluster or db server: one thread per upstream connection,
// busy while a query is inside (the db call included, for a cluster server).
type queryServer struct {
	st       int
	threads  int32 // the threads that exist: connections that can reach it
	inflight int32 // queries sent to it and not answered yet (on their way included)
	lb       balancer
	gcUnits  int
	count    int64
	rtSum    float64
	samples  int64 // per-second samples, and how many found every thread busy
	full     int64
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
	n      int
	next   int
	random bool
	rng    engine.Stream
}

func (b *balancer) pick() int {
	if b.n == 1 {
		return 0
	}
	if b.random {
		return b.rng.IntN(b.n)
	}
	i := b.next
	b.next++
	if b.next == b.n {
		b.next = 0
	}
	return i
}

// chain is one trial of the RUBBoS chain.
type chain struct {
	mix *Mix

	now  float64
	heap engine.EventHeap
	fwd  engine.DelayQueue // web -> app, ForwardDelay
	src  engine.Sources    // heap, think wheel, forward queue, stations, FIN stations

	st      []engine.Station
	finBase int

	users   []user
	cold    []userCold
	thinks  *engine.Wheel // think ends
	web     []webServer
	app     []appServer
	cl      []queryServer
	db      []queryServer
	client  balancer // users -> web servers
	tiers   [4]algorithms.Tier
	hasCl   bool
	fwdT    float64
	qryT    float64
	retry0  float64
	retryF  float64
	webBack int
	appBack int
	bounded bool
	rndWake bool

	// window
	start, end float64
	measuring  bool
	rec        algorithms.Recorder
	pages      int64
	drops      int64
	retries    int64
	webDrops   int64
	appDrops   int64
	queries    int64
	servlets   int64
	lazyEvents int64
	loaded     int64 // the wheel bucket whose users were touched
	touch      uint8 // sink of those loads

	stats  Stats
	onPage func(u int32, state uint8, think float64) // test hook
}

// newChain checks the experiment (checkExperiment) and builds the trial.
func newChain(m *Model, e algorithms.Experiment, seed uint64) (*chain, error) {
	sh, err := checkExperiment(m, e)
	if err != nil {
		return nil, err
	}
	c := &chain{mix: m.Mix, tiers: sh.tiers, hasCl: sh.hasCl, start: sh.start, end: sh.end}
	users := e.Workload.Users
	wT, aT, aC := sh.webThreads, sh.appThreads, sh.appConns
	cores := func(r int) int {
		if c.tiers[r].Cores > 0 {
			return c.tiers[r].Cores
		}
		return m.Cores
	}

	c.fwdT = float64(m.Web.ForwardDelay)
	c.qryT = float64(m.App.QueryDelay)
	c.retry0 = float64(m.Admission.RetryAfter)
	c.retryF = m.Admission.RetryFactor
	c.webBack = m.Web.Backlog
	c.appBack = m.App.Backlog
	c.bounded = m.Admission.Mode == AdmissionBounded
	c.rndWake = c.bounded && m.App.AcceptOrder == OrderRandom
	random := m.LoadBalancing == BalanceRandom
	lb := func(n int, index uint64) balancer {
		return balancer{n: n, random: random, rng: engine.NewStream(seed, purposeBalance, index)}
	}

	nW, nA, nC, nD := c.tiers[0].Replicas, c.tiers[1].Replicas, c.tiers[2].Replicas, c.tiers[3].Replicas
	openConns := int(min(aC, aT)) * nA // connections the app tier can open
	nextTier := nD
	if c.hasCl {
		nextTier = nC
	}
	addStation := func(role uint8, s *engine.Station) int {
		s.Tag = role
		c.st = append(c.st, *s)
		return len(c.st) - 1
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
		w.st = addStation(roleWeb, engine.NewStation(cores(0), 3, webMeans, stRNG(roleWeb, i)))
		w.size = wT
		w.workers = engine.NewLevel(wT)
		w.lb = lb(nA, 1<<32|uint64(i))
	}
	segMean := float64(m.App.ServletDemand) / (m.Mix.QueriesPerServletPageMean() + 1)
	c.app = make([]appServer, nA)
	for i := range c.app {
		a := &c.app[i]
		s := engine.NewStation(cores(1), 1, []float64{segMean}, stRNG(roleApp, i))
		a.gcUnits = int(aT) + int(min(aC, aT))
		if m.App.GC.enabled() {
			s.SetGC(float64(m.App.GC.WorkInterval), m.App.GC.Share(a.gcUnits))
		}
		a.st = addStation(roleApp, s)
		a.threads, a.conns = engine.NewLevel(aT), engine.NewLevel(aC)
		a.order = engine.NewStream(seed, purposeAccept, uint64(i))
		a.lb = lb(nextTier, 2<<32|uint64(i))
	}
	if c.hasCl {
		c.cl = make([]queryServer, nC)
		for i := range c.cl {
			k := &c.cl[i]
			s := engine.NewStation(cores(2), 1, []float64{float64(m.Cluster.QueryDemand)}, stRNG(roleCluster, i))
			k.gcUnits = (openConns + nC - 1) / nC
			if m.Cluster.GC.enabled() {
				s.SetGC(float64(m.Cluster.GC.WorkInterval), m.Cluster.GC.Share(k.gcUnits))
			}
			k.st = addStation(roleCluster, s)
			k.threads = int32(k.gcUnits)
			k.lb = lb(nD, 3<<32|uint64(i))
		}
	}
	c.db = make([]queryServer, nD)
	for i := range c.db {
		d := &c.db[i]
		d.st = addStation(roleDB, engine.NewStation(cores(3), 1, []float64{float64(m.DB.QueryDemand)}, stRNG(roleDB, i)))
		d.threads = int32(openConns)
	}
	c.finBase = candStations + len(c.st)
	nKeys := c.finBase
	fm := m.Web.FINWait.Mean(users)
	if fm > 0 {
		nKeys += nW
	}
	c.src = engine.NewSources(nKeys)
	if fm > 0 {
		for i := range c.web {
			c.web[i].fin = engine.NewDelayStation(fm, engine.NewStream(seed, purposeFIN, uint64(i)))
			c.web[i].finCand = c.finBase + i
		}
	}
	c.client = lb(nW, 0)

	// Users start thinking at t = 0, at the first page of a session.
	c.users = make([]user, users)
	c.cold = make([]userCold, users)
	// 128 s of 1/64 s buckets: think times over 70 s are 0 in RUBBoS, and a
	// longer one (another mix) goes to the heap.
	c.thinks = engine.NewWheel(users, 64, 13)
	for i := range c.users {
		k := &c.cold[i]
		k.rng = engine.NewStream(seed, purposeUser, uint64(i))
		c.mix.begin(&k.nav)
		k.pageStart = c.mix.think(&k.rng)
		c.prepare(int32(i))
		// Not thinkUntil: its look at the wheel's front would move the
		// wheel to the first user's bucket, and every later user with an
		// earlier end would be inserted into that bucket's sorted run,
		// quadratic in the users.
		if !c.thinks.Push(k.pageStart, int32(i)) {
			c.push(k.pageStart, int32(i), evThink)
		}
	}
	c.setCand(candThink, c.thinkFront())
	c.push(1, 0, evTick)
	c.push(c.start, 0, evWindowStart)
	c.push(c.end, 0, evWindowEnd)
	return c, nil
}

// QueriesPerServletPageMean is the stationary mean SQL queries per servlet
// page after scaling.
func (mx *Mix) QueriesPerServletPageMean() float64 {
	var w, q float64
	for i, st := range mx.states {
		if !st.static {
			w += mx.shares[i]
			q += mx.shares[i] * st.q
		}
	}
	if w == 0 {
		return 0
	}
	return q / w
}

// run processes events until the window ends or ctx is done.
func (c *chain) run(ctx context.Context) error {
	var events int64
	defer func() { c.stats.Events += events }()
	for {
		// The next event is the earliest source: a dozen or so slots,
		// cheaper to scan than to keep in a priority queue.
		bi, bt := c.src.Next()
		c.now = bt
		events++
		switch {
		case bi >= candStations && bi < c.finBase:
			c.stationEvent(bi - candStations)
		case bi == candHeap:
			_, id, kind := c.heap.Pop()
			c.setCand(candHeap, c.heap.Top())
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
				c.push(bt+1, 0, evTick)
			case evWindowStart:
				c.restart()
			case evWindowEnd:
				c.finish()
				return nil
			}
		case bi == candThink:
			d := c.thinks.Pop()
			c.setCand(candThink, c.thinkFront())
			c.thinkEnd(d.ID)
		case bi == candForward:
			d := c.fwd.Pop()
			c.setCand(candForward, c.fwd.Front())
			c.toApp(d.ID)
		default:
			w := &c.web[bi-c.finBase]
			w.fin.Fire(bt)
			c.releaseWorker(w)
			c.finCand(w)
		}
	}
}

// stationEvent handles what is due at station s.
func (c *chain) stationEvent(s int) {
	st := &c.st[s]
	id := st.Step(c.now)
	c.setCand(candStations+s, st.Due())
	if id >= 0 {
		c.done(s, id)
	}
}

// push adds an event of kind for entity id at time t to the heap.
func (c *chain) push(t float64, id int32, kind uint8) {
	c.heap.Push(t, id, kind)
	c.setCand(candHeap, c.heap.Top())
}

// setCand sets the next time of event source i.
func (c *chain) setCand(i int, t float64) { c.src.Set(i, t) }

// arrive puts user u on station s in class k.
func (c *chain) arrive(s int, u int32, k int) {
	st := &c.st[s]
	st.Arrive(c.now, u, k)
	c.setCand(candStations+s, st.Due())
}

// done routes a job that finished its CPU demand at station s.
func (c *chain) done(s int, u int32) {
	us := &c.users[u]
	switch c.st[s].Tag {
	case roleWeb:
		if us.kind == reqPage {
			if c.fwdT > 0 {
				c.fwd.Push(engine.Delayed{T: c.now + c.fwdT, ID: u})
				if c.fwd.Len() == 1 {
					c.setCand(candForward, c.now+c.fwdT)
				}
			} else {
				c.toApp(u)
			}
			return
		}
		c.respond(u)
	case roleApp:
		if us.qLeft > 0 {
			us.qLeft--
			c.queries++
			c.sendQuery(u)
			return
		}
		c.servletEnd(u)
	case roleCluster:
		i := c.cl[us.cl].lb.pick()
		us.db = int16(i)
		d := &c.db[i]
		d.inflight++
		us.tDB = c.now
		c.arrive(d.st, u, 0)
	case roleDB:
		d := &c.db[us.db]
		d.inflight--
		d.count++
		d.rtSum += c.now - us.tDB
		if c.hasCl {
			k := &c.cl[us.cl]
			k.inflight--
			k.count++
			k.rtSum += c.now - us.tQ
		}
		c.arrive(c.app[us.app].st, u, 0) // the next servlet segment
	}
}

// sendQuery sends the servlet's next query towards the query tier: the
// cluster, or the db without one. It reaches it after the constant query
// delay; the replica is chosen now (queries arrive in the order they leave,
// so round robin is the same), and the query counts as inside from then
// on: sample subtracts those still on their way.
func (c *chain) sendQuery(u int32) {
	us := &c.users[u]
	i := c.app[us.app].lb.pick()
	t := c.now + c.qryT
	us.tQ = t
	var k *queryServer
	if c.hasCl {
		us.cl = int16(i)
		k = &c.cl[i]
	} else {
		us.db = int16(i)
		us.tDB = t
		k = &c.db[i]
	}
	k.inflight++
	st := &c.st[k.st]
	st.ArriveAt(t, u)
	if st.Pending() == 1 {
		c.setCand(candStations+k.st, st.Due())
	}
}

// thinkUntil makes user u think until time t.
func (c *chain) thinkUntil(u int32, t float64) {
	if c.thinks.Push(t, u) {
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
	w := c.thinks
	t := w.Front()
	if b := w.Bucket(); b != c.loaded {
		c.loaded = b
		x := c.touch
		for _, d := range w.InBucket() {
			x ^= c.users[d.ID].kind ^ c.cold[d.ID].nav.state
		}
		c.touch = x
	}
	return t
}

// thinkEnd sends the user's next page, prepared when the think began.
func (c *chain) thinkEnd(u int32) {
	us := &c.users[u]
	if us.kind == reqPage {
		c.servlets++
	}
	c.request(u, us.kind)
}

// request opens a new connection to a web server.
func (c *chain) request(u int32, kind uint8) {
	us := &c.users[u]
	us.kind = kind
	us.attempts = 0
	us.web = int16(c.client.pick())
	c.tryWeb(u)
}

// backoff is the wait before the next retry of a dropped connection.
func (c *chain) backoff(us *user) float64 {
	d := c.retry0 * math.Pow(c.retryF, float64(us.attempts))
	if us.attempts < 255 {
		us.attempts++
	}
	return d
}

// finCatchUp lets the FIN waits of web server w that ended by now release
// their workers. While nobody waits for a worker, a FIN end changes nothing
// but the count of held workers, so it is not an event: the ends are drawn
// and applied in time order, with the same draws, the next time the server
// changes.
func (c *chain) finCatchUp(w *webServer) {
	f := w.fin
	if f == nil || w.queue.Len() > 0 { // with a queue, FIN ends are events
		return
	}
	for f.Next() <= c.now {
		t := f.Next()
		f.Fire(t)
		w.workers.Add(t, -1)
		c.lazyEvents++
	}
}

// finCand makes the FIN ends of w events while requests wait for a worker.
func (c *chain) finCand(w *webServer) {
	if w.fin == nil {
		return
	}
	if w.queue.Len() > 0 {
		c.setCand(w.finCand, w.fin.Next())
	} else {
		c.setCand(w.finCand, inf)
	}
}

// tryWeb asks the user's web server for a worker.
func (c *chain) tryWeb(u int32) {
	us := &c.users[u]
	w := &c.web[us.web]
	c.finCatchUp(w)
	if w.workers.Value() < w.size {
		w.workers.Add(c.now, 1)
		c.startWeb(u)
		return
	}
	if !c.bounded || w.queue.Len() < c.webBack {
		w.queue.Push(u)
		if w.queue.Len() == 1 {
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
	c.arrive(c.web[us.web].st, u, int(us.kind))
}

// respond sends the web server's answer to the current HTTP request: the
// worker waits for the client's FIN, the client goes on with its page.
func (c *chain) respond(u int32) {
	us := &c.users[u]
	w := &c.web[us.web]
	w.count++
	if w.fin != nil {
		c.finCatchUp(w)
		w.fin.Arrive(c.now)
		if w.queue.Len() > 0 {
			c.setCand(w.finCand, w.fin.Next())
		}
	} else {
		c.releaseWorker(w)
	}
	if us.images > 0 {
		us.images--
		c.request(u, reqImage)
		return
	}
	c.pageDone(u)
}

// releaseWorker frees a web worker, or hands it to the first waiting request.
func (c *chain) releaseWorker(w *webServer) {
	if w.queue.Len() > 0 {
		c.startWeb(w.queue.Pop())
		return
	}
	w.workers.Add(c.now, -1)
}

// pageDone records the page and starts the user's next think. The next
// page is drawn now, so that the end of the think touches only the hot
// per-user state.
func (c *chain) pageDone(u int32) {
	k := &c.cold[u]
	if c.measuring {
		c.rec.Add(c.now - k.pageStart)
	}
	c.pages++
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
	k := &c.cold[u]
	st := &c.mix.states[k.nav.state]
	us := &c.users[u]
	us.images = st.images
	if st.static {
		us.kind = reqStatic
		return
	}
	us.kind = reqPage
	us.qLeft = int16(min(c.mix.queries(k.nav.state, &k.rng), math.MaxInt16))
}

// toApp forwards a servlet request to an app server.
func (c *chain) toApp(u int32) {
	us := &c.users[u]
	us.app = int16(c.web[us.web].lb.pick())
	us.attempts = 0
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
	if !c.bounded || a.accept.Len() < c.appBack {
		a.accept.Push(u)
		return
	}
	c.drops++
	c.appDrops++
	c.push(c.now+c.backoff(us), u, evRetryApp)
}

// gotThread starts the servlet of u once it holds a DB connection.
func (c *chain) gotThread(a *appServer, u int32) {
	if a.conns.Value() < a.conns.Size() {
		a.conns.Add(c.now, 1)
		c.arrive(a.st, u, 0)
		return
	}
	a.connWait.Push(u)
}

// servletEnd releases the connection, then the thread, and answers the web
// worker.
func (c *chain) servletEnd(u int32) {
	us := &c.users[u]
	a := &c.app[us.app]
	a.count++
	if a.connWait.Len() > 0 {
		c.arrive(a.st, a.connWait.Pop(), 0)
	} else {
		a.conns.Add(c.now, -1)
	}
	if n := a.accept.Len(); n > 0 {
		var v int32
		if c.rndWake && n > 1 {
			v = a.accept.PopAt(a.order.IntN(n))
		} else {
			v = a.accept.Pop()
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
			st := &c.st[k.st]
			n := k.inflight - int32(st.Pending()-st.PendingBy(c.now)) // minus those on their way
			k.samples++
			if n >= k.threads {
				k.full++
			}
		}
	}
	look(c.cl)
	look(c.db)
}

// restart begins the measured window: integrals and counters start at zero.
func (c *chain) restart() {
	now := c.now
	for i := range c.st {
		c.st[i].Restart(now)
	}
	for i := range c.web {
		w := &c.web[i]
		c.finCatchUp(w)
		if w.fin != nil {
			w.fin.Restart(now)
		}
		w.workers.Restart(now)
		w.count = 0
	}
	for i := range c.app {
		a := &c.app[i]
		a.threads.Restart(now)
		a.conns.Restart(now)
		a.count = 0
	}
	for _, q := range [][]queryServer{c.cl, c.db} {
		for i := range q {
			q[i].count, q[i].rtSum, q[i].samples, q[i].full = 0, 0, 0, 0
		}
	}
	c.stats.WarmUpPages = c.pages
	c.rec.Reset()
	c.pages, c.drops, c.retries, c.webDrops, c.appDrops, c.queries, c.servlets = 0, 0, 0, 0, 0, 0, 0
	c.measuring = true
}

// finish closes the integrals at the end of the window.
func (c *chain) finish() {
	now := c.now
	for i := range c.st {
		c.st[i].Advance(now)
	}
	for i := range c.web {
		w := &c.web[i]
		c.finCatchUp(w)
		if w.fin != nil {
			w.fin.Advance(now)
		}
		w.workers.Add(now, 0)
	}
	for i := range c.app {
		c.app[i].threads.Add(now, 0)
		c.app[i].conns.Add(now, 0)
	}
}
