package classes

import (
	"context"
	"fmt"
	"math"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/sim/engine"
)

// Result is one trial: what a load generator and the server's monitors
// report over the measured window.
type Result struct {
	Name string
	// Seconds is the measured window.
	Seconds float64
	// HitsPerSecond are responses received, ErrorsPerSecond refused
	// connections, both over all classes.
	HitsPerSecond   float64
	ErrorsPerSecond float64
	// CPU is the mean utilisation of the cores.
	CPU float64
	// GCShare is the collector's mean share of the CPU over the window and
	// HeapPeak the most bytes live (with server.memory only).
	GCShare  float64
	HeapPeak float64
	Classes  []ClassResult
	// Series bins the whole trial by Run.Interval (empty without one).
	Series []Bin
}

// ClassResult is one class over the measured window.
type ClassResult struct {
	Name string
	// Throughput is responses per second; Goodput those within the SLA.
	Throughput float64
	Goodput    float64
	// ErrorsPerSecond are refused connections and requests that failed
	// for want of memory.
	ErrorsPerSecond float64
	// Adequacy is the share of requests sent in the window (up to a limit
	// before its end, so that each had its chance) answered within the
	// client limit; refused ones are inadequate.
	Adequacy float64
	Limit    float64
	// Sent, Completed and Refused are counts in the window; OutOfMemory
	// counts the refused that a thread took but the heap could not hold.
	Sent        int64
	Completed   int64
	Refused     int64
	OutOfMemory int64
	// ResponseTime is the mean response time (client side, network
	// included); ServerTime the mean time holding a thread.
	ResponseTime float64
	ServerTime   float64
	P50          float64
	P90          float64
	P99          float64
	// ResponseTimes is the distribution of response times.
	ResponseTimes algorithms.Histogram
	// Approaches break responses down by the approach that served them.
	Approaches []ApproachResult
	// Switches counts the selector's deactivations and reactivations.
	Switches int64
}

// ApproachResult is the responses one approach served in the window.
type ApproachResult struct {
	Name   string
	Served int64
	Share  float64
	// Adequate responses came within the client limit.
	Adequate int64
}

// Bin is one interval of the time series, all classes together.
type Bin struct {
	Start float64
	// Users is the closed users at the bin's start.
	Users           int
	HitsPerSecond   float64
	ErrorsPerSecond float64
	// Duration is the mean response time of the responses in the bin
	// (0: none); MaxDuration the longest.
	Duration    float64
	MaxDuration float64
}

// Class is the result of the class named name, or nil.
func (r *Result) Class(name string) *ClassResult {
	for i := range r.Classes {
		if r.Classes[i].Name == name {
			return &r.Classes[i]
		}
	}
	return nil
}

// Heap event kinds.
const (
	evSend        uint8 = iota // a user's think ends
	evArrive                   // a request reaches the server
	evOpen                     // an open arrival of a class
	evRamp                     // a class's ramp adds users
	evSlumpStart               // id: slump index
	evSlumpEnd                 //
	evWindowStart              //
	evWindowEnd                //
)

// Random stream purposes.
const (
	purposeUser uint64 = iota + 101
	purposeDemand
	purposeArrival
)

// maxLive bounds the requests in the system: an open overload without
// admission grows without end, and a trial must fail rather than eat memory.
const maxLive = 20_000_000

type request struct {
	sent    float64
	start   float64
	user    int32 // -1: an open arrival
	class   int16
	appr    int16
	counted bool // sent early enough in the window to count in adequacy
}

type user struct {
	rng   engine.Stream
	class int16
}

type pool struct {
	size, backlog, busy int
	queue               engine.IDQueue
}

type classState struct {
	demand, think, net, limit, sla float64
	mem                            float64 // bytes held from thread to response
	exp                            bool
	costs                          []float64
	pool                           int
	sel                            *selector
	rng                            engine.Stream // demands
	arr                            *Arrivals
	arrRNG                         engine.Stream
	ramp                           *Ramp
	maxUsers                       int
	users                          int

	sent, completed, refused, good int64
	oom                            int64
	counted, adequate              int64
	respSum, serverSum             float64
	rec                            *algorithms.Recorder
	served, servedOK               []int64
}

type bin struct {
	hits, errors int64
	dur, maxDur  float64
}

type model struct {
	w        *Workload
	seed     uint64
	now      float64
	start    float64
	end      float64
	inWindow bool
	bounded  bool
	heap     engine.EventHeap
	cpu      engine.Scheduler
	reqs     []request
	free     []int32
	live     int
	users    []user
	pools    []pool
	cls      []classState
	interval float64
	bins     []bin
	events   int64

	// The heap (server.memory): bytes live in requests, the slump's speed
	// and the collector's share integrated over the window.
	memory           *Memory
	liveBytes        float64
	slump            float64
	gcShare, gcLast  float64
	gcArea, heapPeak float64
}

// simulateWorkload runs one trial of workload w with the given seed. The
// same seed gives the same numbers.
func simulateWorkload(ctx context.Context, w *Workload, seed uint64) (Result, error) {
	if err := w.Validate(); err != nil {
		return Result{}, fmt.Errorf("simulate %q: %w", w.Name, err)
	}
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("simulate %q: %w", w.Name, err)
	}
	m := newModel(w, seed)
	if err := m.run(ctx); err != nil {
		return Result{}, fmt.Errorf("simulate %q: %w", w.Name, err)
	}
	return m.result(), nil
}

func newModel(w *Workload, seed uint64) *model {
	m := &model{w: w, seed: seed, start: float64(w.Run.WarmUp), bounded: w.Server.Admission == admissionBounded}
	m.end = m.start + float64(w.Run.Duration)
	m.slump, m.memory = 1, w.Server.Memory
	for _, s := range w.Server.Slumps {
		if float64(s.From) <= 0 && float64(s.To) > 0 {
			m.slump = s.Speed
		}
	}
	speed := m.slump * m.gcSpeed()
	m.cpu = newCPU(w, speed)
	poolIdx := map[string]int{}
	for i, p := range w.Server.Pools {
		poolIdx[p.Name] = i
		m.pools = append(m.pools, pool{size: p.Size, backlog: p.Backlog})
	}
	if w.Run.Interval > 0 {
		m.interval = float64(w.Run.Interval)
		m.bins = make([]bin, int(math.Ceil(m.end/m.interval)))
	}
	m.cls = make([]classState, len(w.Classes))
	for k := range w.Classes {
		c := &w.Classes[k]
		s := &m.cls[k]
		s.demand, s.think, s.net = float64(c.Demand), float64(c.Load.ThinkTime), float64(c.Network)
		s.mem = float64(c.Memory)
		s.limit, s.sla = float64(c.Limit), float64(c.SLA)
		s.exp = c.Distribution == exponential
		for _, a := range c.Approaches {
			s.costs = append(s.costs, a.Cost)
		}
		s.pool = poolIdx[c.Pool]
		if c.Selector != nil && len(c.Approaches) > 1 {
			s.sel = newSelector(c.Selector, len(c.Approaches))
		}
		s.rng = engine.NewStream(seed, purposeDemand, uint64(k))
		s.rec = &algorithms.Recorder{}
		s.served = make([]int64, len(c.Approaches))
		s.servedOK = make([]int64, len(c.Approaches))
		s.arr, s.ramp, s.maxUsers = c.Load.Arrivals, c.Load.Ramp, c.Load.Users
		if s.arr != nil && s.arr.Rate > 0 {
			s.arrRNG = engine.NewStream(seed, purposeArrival, uint64(k))
			m.heap.Push(m.nextArrival(s, 0), int32(k), evOpen)
		}
		n := c.Load.Concurrency(0)
		for range n {
			m.addUser(k)
		}
		if s.ramp != nil && s.ramp.By > 0 {
			m.heap.Push(float64(s.ramp.Every), int32(k), evRamp)
		}
	}
	for i, s := range w.Server.Slumps {
		if float64(s.From) > 0 {
			m.heap.Push(float64(s.From), int32(i), evSlumpStart)
		}
		m.heap.Push(float64(s.To), int32(i), evSlumpEnd)
	}
	m.heap.Push(m.start, 0, evWindowStart)
	m.heap.Push(m.end, 0, evWindowEnd)
	return m
}

// addUser starts a closed user of class k at a random phase of its think
// time, so that a population does not send in lockstep.
func (m *model) addUser(k int) {
	s := &m.cls[k]
	id := int32(len(m.users))
	m.users = append(m.users, user{rng: engine.NewStream(m.seed, purposeUser, uint64(id)), class: int16(k)})
	s.users++
	t := m.now
	if s.think > 0 {
		t += s.think * m.users[id].rng.Exp()
	}
	m.heap.Push(t, id, evSend)
}

// nextArrival is the time of the next open arrival after t: Poisson at the
// class rate, counted only in the on-part of each period for bursts.
func (m *model) nextArrival(s *classState, t float64) float64 {
	gap := s.arrRNG.Exp() / s.arr.Rate
	on, period := float64(s.arr.On), float64(s.arr.Period)
	if on <= 0 {
		return t + gap
	}
	for {
		p := math.Floor(t / period)
		onEnd := p*period + on
		if t >= onEnd { // in the off-part: skip to the next burst
			t = (p + 1) * period
			continue
		}
		if t+gap <= onEnd {
			return t + gap
		}
		gap -= onEnd - t
		t = (p + 1) * period
	}
}

func (m *model) run(ctx context.Context) error {
	for {
		m.events++
		if m.events&0xffff == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if tc := m.cpu.Next(); tc <= m.heap.Top() {
			m.now = tc
			if id := m.cpu.Pop(tc); id >= 0 {
				m.finish(id)
			}
			continue
		}
		t, id, kind := m.heap.Pop()
		m.now = t
		switch kind {
		case evSend:
			m.send(id)
		case evArrive:
			m.arrive(id)
		case evOpen:
			s := &m.cls[id]
			m.open(int(id))
			m.heap.Push(m.nextArrival(s, t), id, evOpen)
		case evRamp:
			s := &m.cls[id]
			for range s.ramp.By {
				if s.maxUsers > 0 && s.users >= s.maxUsers {
					break
				}
				m.addUser(int(id))
			}
			if s.maxUsers == 0 || s.users < s.maxUsers {
				m.heap.Push(t+float64(s.ramp.Every), id, evRamp)
			}
		case evSlumpStart:
			m.slump = m.w.Server.Slumps[id].Speed
			m.cpu.SetSpeed(t, m.slump*m.gcSpeed())
		case evSlumpEnd:
			m.slump = 1
			m.cpu.SetSpeed(t, m.gcSpeed())
		case evWindowStart:
			m.inWindow = true
			m.cpu.Restart(t)
			m.gcLast, m.gcArea, m.heapPeak = t, 0, m.liveBytes
		case evWindowEnd:
			return nil
		}
		if m.live > maxLive {
			return fmt.Errorf("more than %d requests in the system at %.0f s: an open overload without admission", maxLive, t)
		}
	}
}

func (m *model) newReq(k int, u int32) int32 {
	var id int32
	if n := len(m.free); n > 0 {
		id = m.free[n-1]
		m.free = m.free[:n-1]
	} else {
		id = int32(len(m.reqs))
		m.reqs = append(m.reqs, request{})
	}
	s := &m.cls[k]
	r := &m.reqs[id]
	*r = request{sent: m.now, user: u, class: int16(k)}
	m.live++
	if m.inWindow {
		s.sent++
		if m.now <= m.end-s.limit {
			r.counted = true
			s.counted++
		}
	}
	return id
}

func (m *model) release(id int32) {
	m.free = append(m.free, id)
	m.live--
}

// send: user u's request leaves the client.
func (m *model) send(u int32) {
	k := int(m.users[u].class)
	id := m.newReq(k, u)
	m.toServer(id, k)
}

// open: an open arrival of class k leaves its client.
func (m *model) open(k int) {
	m.toServer(m.newReq(k, -1), k)
}

func (m *model) toServer(id int32, k int) {
	if net := m.cls[k].net; net > 0 {
		m.heap.Push(m.now+net, id, evArrive)
		return
	}
	m.arrive(id)
}

// arrive: a request reaches its pool. A free thread takes it; otherwise it
// waits in the accept queue, or, under bounded admission with the backlog
// full, its connection is refused.
func (m *model) arrive(id int32) {
	k := int(m.reqs[id].class)
	p := &m.pools[m.cls[k].pool]
	switch {
	case p.busy < p.size:
		m.begin(id)
	case m.bounded && p.queue.Len() >= p.backlog:
		m.refuse(id)
	default:
		p.queue.Push(id)
	}
}

// begin: a thread takes the request; the selector picks its approach. A
// request whose memory the heap cannot hold fails at once (false): the
// thread stays free.
func (m *model) begin(id int32) bool {
	r := &m.reqs[id]
	s := &m.cls[r.class]
	if s.mem > 0 {
		if float64(m.memory.Base)+m.liveBytes+s.mem > float64(m.memory.Heap) {
			if m.inWindow {
				s.oom++
			}
			m.refuse(id)
			return false
		}
		m.setLive(m.liveBytes + s.mem)
	}
	m.pools[s.pool].busy++
	r.start = m.now
	a := 0
	if s.sel != nil {
		a = s.sel.pick()
	}
	r.appr = int16(a)
	work := s.demand * s.costs[a]
	if s.exp {
		work *= s.rng.Exp()
	}
	m.cpu.Add(m.now, id, int(r.class), work)
	return true
}

func (m *model) refuse(id int32) {
	r := m.reqs[id]
	s := &m.cls[r.class]
	if m.inWindow {
		s.refused++
	}
	if m.bins != nil {
		m.bins[m.binOf(m.now)].errors++
	}
	m.release(id)
	if r.user >= 0 {
		if m.cls[r.class].think > 0 {
			m.think(r.user)
		} else {
			// A client with no think time retries after a reconnect, not
			// in the same instant (which would loop for ever).
			m.heap.Push(m.now+retryPause, r.user, evSend)
		}
	}
}

// retryPause is how long a client with no think time takes to send again
// after an error.
const retryPause = 0.01

func (m *model) binOf(t float64) int { return min(int(t/m.interval), len(m.bins)-1) }

// finish: the response leaves the server (the network time was spent
// before arrival, so the client has it now).
func (m *model) finish(id int32) {
	r := m.reqs[id]
	s := &m.cls[r.class]
	server := m.now - r.start
	if s.sel != nil {
		s.sel.report(int(r.appr), server)
	}
	if s.mem > 0 {
		m.setLive(m.liveBytes - s.mem)
	}
	p := &m.pools[s.pool]
	p.busy--
	for p.queue.Len() > 0 && !m.begin(p.queue.Pop()) {
	}
	resp := m.now - r.sent
	if r.counted && resp <= s.limit {
		s.adequate++
	}
	if m.inWindow {
		s.completed++
		s.respSum += resp
		s.serverSum += server
		s.rec.Add(resp)
		if resp <= s.sla {
			s.good++
		}
		s.served[r.appr]++
		if resp <= s.limit {
			s.servedOK[r.appr]++
		}
	}
	if m.bins != nil {
		b := &m.bins[m.binOf(m.now)]
		b.hits++
		b.dur += resp
		b.maxDur = max(b.maxDur, resp)
	}
	m.release(id)
	if r.user >= 0 {
		m.think(r.user)
	}
}

// gcSpeed is the share of the CPU left to requests by the collector.
func (m *model) gcSpeed() float64 {
	if m.memory == nil || m.memory.GCCost == 0 {
		return 1
	}
	l := float64(m.memory.Base) + m.liveBytes
	return 1 / (1 + m.memory.GCCost*l/(float64(m.memory.Heap)-l))
}

// setLive changes the bytes live in requests and with them the collector's
// share of the CPU.
func (m *model) setLive(v float64) {
	if m.inWindow {
		m.gcArea += m.gcShare * (m.now - m.gcLast)
		m.gcLast = m.now
		m.heapPeak = max(m.heapPeak, float64(m.memory.Base)+v)
	}
	m.liveBytes = max(v, 0)  // rounding of sums of sizes
	if m.memory.GCCost > 0 { // with no collector cost the speed never moves
		g := m.gcSpeed()
		m.gcShare = 1 - g
		m.cpu.SetSpeed(m.now, m.slump*g)
	}
}

func (m *model) think(u int32) {
	us := &m.users[u]
	z := m.cls[us.class].think
	if z <= 0 {
		m.send(u)
		return
	}
	m.heap.Push(m.now+z*us.rng.Exp(), u, evSend)
}

func (m *model) result() Result {
	w := m.w
	T := m.end - m.start
	res := Result{Name: w.Name, Seconds: T}
	res.CPU = m.cpu.Busy(m.end) / (float64(w.Server.Cores) * T)
	if m.memory != nil {
		res.GCShare = (m.gcArea + m.gcShare*(m.end-m.gcLast)) / T
		res.HeapPeak = max(m.heapPeak, float64(m.memory.Base)+m.liveBytes)
	}
	var hits, errs int64
	for k := range m.cls {
		s := &m.cls[k]
		c := ClassResult{
			Name: w.Classes[k].Name, Limit: s.limit,
			Throughput: float64(s.completed) / T, Goodput: float64(s.good) / T,
			ErrorsPerSecond: float64(s.refused) / T,
			Sent:            s.sent, Completed: s.completed, Refused: s.refused, OutOfMemory: s.oom,
			ResponseTimes: s.rec.Histogram(),
		}
		if s.counted > 0 {
			c.Adequacy = float64(s.adequate) / float64(s.counted)
		}
		if s.completed > 0 {
			c.ResponseTime = s.respSum / float64(s.completed)
			c.ServerTime = s.serverSum / float64(s.completed)
			c.P50 = c.ResponseTimes.Quantile(0.5)
			c.P90 = c.ResponseTimes.Quantile(0.9)
			c.P99 = c.ResponseTimes.Quantile(0.99)
		}
		for a, ap := range w.Classes[k].Approaches {
			ar := ApproachResult{Name: ap.Name, Served: s.served[a], Adequate: s.servedOK[a]}
			if s.completed > 0 {
				ar.Share = float64(s.served[a]) / float64(s.completed)
			}
			c.Approaches = append(c.Approaches, ar)
		}
		if s.sel != nil {
			c.Switches = s.sel.switches
		}
		hits += s.completed
		errs += s.refused
		res.Classes = append(res.Classes, c)
	}
	res.HitsPerSecond = float64(hits) / T
	res.ErrorsPerSecond = float64(errs) / T
	for i, b := range m.bins {
		t0 := float64(i) * m.interval
		width := min(m.interval, m.end-t0)
		bn := Bin{Start: t0, HitsPerSecond: float64(b.hits) / width, ErrorsPerSecond: float64(b.errors) / width, MaxDuration: b.maxDur}
		for k := range w.Classes {
			bn.Users += w.Classes[k].Load.Concurrency(t0)
		}
		if b.hits > 0 {
			bn.Duration = b.dur / float64(b.hits)
		}
		res.Series = append(res.Series, bn)
	}
	return res
}
