package sim

import (
	"math"
	"math/bits"
)

// This file is the event core: clock-free building blocks that know nothing
// of RUBBoS (event heap, constant-delay queues, random streams, stations,
// time-weighted levels). A model (rubbos.go) owns the clock and wires them.

// inf is the time of an event that will not happen.
var inf = math.Inf(1)

// event is one entry of the event heap: a value type, so pushing and popping
// allocate nothing and the heap is one contiguous array.
type event struct {
	t    float64
	id   int32 // the entity the event concerns (a user, a server)
	kind uint8
}

// eventHeap is a 4-ary min-heap on t. Four children per node halve the depth
// of a binary heap and keep the children of a node in one cache line; that is
// what pop, the expensive operation, pays for.
type eventHeap struct{ a []event }

// top is the time of the earliest event, or +Inf.
func (h *eventHeap) top() float64 {
	if len(h.a) == 0 {
		return inf
	}
	return h.a[0].t
}

func (h *eventHeap) push(e event) {
	h.a = append(h.a, e)
	a := h.a
	i := len(a) - 1
	for i > 0 {
		p := (i - 1) >> 2
		if a[p].t <= e.t {
			break
		}
		a[i] = a[p]
		i = p
	}
	a[i] = e
}

func (h *eventHeap) pop() event {
	a := h.a
	top := a[0]
	n := len(a) - 1
	last := a[n]
	h.a = a[:n]
	if n == 0 {
		return top
	}
	a = a[:n]
	i := 0
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		// smallest of up to four children
		m, mt := c, a[c].t
		end := c + 4
		if end > n {
			end = n
		}
		for j := c + 1; j < end; j++ {
			if a[j].t < mt {
				m, mt = j, a[j].t
			}
		}
		if last.t <= mt {
			break
		}
		a[i] = a[m]
		i = m
	}
	a[i] = last
	return top
}

// sources holds the next time of each of a fixed set of event sources (a
// heap, delay queues, stations) and finds the earliest. Each key is the
// time's bits with the source's index in the low bits: for times >= 0 the
// bits order as the floats do, so the earliest source is a branch-free
// unsigned minimum. The index costs the time its lowest bits: events move
// earlier by a few ulps (1e-11 s at most in a trial), the same way on
// every run.
type sources struct {
	key  []uint64 // whole blocks of 16 for minKey
	mask uint64
}

func newSources(n int) sources {
	s := sources{key: make([]uint64, (n+15)/16*16)}
	for s.mask = 1; s.mask < uint64(len(s.key)); s.mask <<= 1 {
	}
	s.mask--
	for i := range s.key {
		s.set(i, inf)
	}
	return s
}

// set sets the next time of source i.
func (s *sources) set(i int, t float64) {
	s.key[i] = math.Float64bits(t)&^s.mask | uint64(i)
}

// next is the earliest source and its time (rounded down by a few ulps).
func (s *sources) next() (int, float64) {
	keys := s.key
	// The first block is minKey written out: one call fewer per event,
	// and most models have one block.
	b := (*[16]uint64)(keys)
	k := min(min(min(b[0], b[1]), min(b[2], b[3])), min(min(b[4], b[5]), min(b[6], b[7])),
		min(min(b[8], b[9]), min(b[10], b[11])), min(min(b[12], b[13]), min(b[14], b[15])))
	for i := 16; i < len(keys); i += 16 {
		k = min(k, minKey((*[16]uint64)(keys[i:])))
	}
	return int(k & s.mask), math.Float64frombits(k &^ s.mask)
}

// minKey is the minimum of 16 keys as a tree of independent comparisons
// (depth 4), which a superscalar CPU overlaps; a running minimum would be a
// chain of 15 dependent ones.
func minKey(k *[16]uint64) uint64 {
	a := min(min(k[0], k[1]), min(k[2], k[3]))
	b := min(min(k[4], k[5]), min(k[6], k[7]))
	c := min(min(k[8], k[9]), min(k[10], k[11]))
	d := min(min(k[12], k[13]), min(k[14], k[15]))
	return min(min(a, b), min(c, d))
}

// delayed is an entry of a constant-delay queue.
type delayed struct {
	t  float64
	id int32
}

// fifo is a growable ring buffer. With a constant delay, entries leave in the
// order they enter, so a FIFO replaces the heap for them: O(1) both ways.
type fifo struct {
	buf  []delayed
	head int
	n    int
}

func (q *fifo) push(d delayed) {
	if q.n == len(q.buf) {
		q.grow()
	}
	q.buf[(q.head+q.n)&(len(q.buf)-1)] = d
	q.n++
}

func (q *fifo) grow() {
	size := 2 * len(q.buf)
	if size == 0 {
		size = 64
	}
	b := make([]delayed, size)
	for i := 0; i < q.n; i++ {
		b[i] = q.buf[(q.head+i)&(len(q.buf)-1)]
	}
	q.buf, q.head = b, 0
}

// front is the time of the first entry, or +Inf.
func (q *fifo) front() float64 {
	if q.n == 0 {
		return inf
	}
	return q.buf[q.head].t
}

func (q *fifo) pop() delayed {
	d := q.buf[q.head]
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.n--
	return d
}

// idQueue is a growable ring of entity ids: FIFO waiting lines, with an
// optional removal at a random position (swap with the head, then pop).
type idQueue struct {
	buf  []int32
	head int
	n    int
}

func (q *idQueue) len() int { return q.n }

func (q *idQueue) push(id int32) {
	if q.n == len(q.buf) {
		size := 2 * len(q.buf)
		if size == 0 {
			size = 16
		}
		b := make([]int32, size)
		for i := 0; i < q.n; i++ {
			b[i] = q.buf[(q.head+i)&(len(q.buf)-1)]
		}
		q.buf, q.head = b, 0
	}
	q.buf[(q.head+q.n)&(len(q.buf)-1)] = id
	q.n++
}

func (q *idQueue) pop() int32 {
	id := q.buf[q.head]
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.n--
	return id
}

// popAt removes the i-th waiting entry (0 = head). Waiting order among the
// rest changes, which is what a random wake-up order allows.
func (q *idQueue) popAt(i int) int32 {
	m := len(q.buf) - 1
	j := (q.head + i) & m
	q.buf[j], q.buf[q.head] = q.buf[q.head], q.buf[j]
	return q.pop()
}

// stream is one independent random stream (PCG, 128-bit state). The model
// keeps one per purpose and per entity, so that a change in one place (a
// pool size, a demand) does not shift the draws made anywhere else.
//
// It is math/rand/v2's PCG (128-bit LCG, DXSM output) written out here, with
// the same state, seeding and output, so that the draws are the same; the
// hand-written step is cheap enough for the compiler to inline into the
// draws, and they into the hot paths.
type stream struct{ hi, lo uint64 }

// uint64 is the next 64-bit draw: exactly rand.PCG.Uint64.
func (s *stream) uint64() uint64 {
	const (
		mulHi    = 2549297995355413924
		mulLo    = 4865540595714422341
		incHi    = 6364136223846793005
		incLo    = 1442695040888963407
		cheapMul = 0xda942042e4dd58b5
	)
	hi, lo := bits.Mul64(s.lo, mulLo)
	hi += s.hi*mulLo + s.lo*mulHi
	lo, c := bits.Add64(lo, incLo, 0)
	hi += incHi + c
	s.lo, s.hi = lo, hi
	hi ^= hi >> 32
	hi *= cheapMul
	hi ^= hi >> 48
	return hi * (lo | 1)
}

// Stream purposes: part of the seed of every stream.
const (
	purposeUser uint64 = iota + 1
	purposeStation
	purposeFIN
	purposeBalance
	purposeAccept
	purposeMix
)

// newStream derives a stream from the trial seed, a purpose and an index with
// splitmix64, so neighbouring indexes give unrelated PCG states.
func newStream(seed, purpose, index uint64) stream {
	a := splitmix(seed ^ splitmix(purpose<<40^index))
	b := splitmix(a ^ 0x9e3779b97f4a7c15)
	var s stream
	s.hi, s.lo = a, b
	return s
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// float64 is uniform in [0, 1).
func (s *stream) float64() float64 { return float64(s.uint64()>>11) * 0x1p-53 }

// intN is uniform in [0, n), n > 0 (Lemire's multiply-shift; the bias of at
// most n/2^64 is far below anything a trial can see).
func (s *stream) intN(n int) int {
	hi, _ := bits.Mul64(s.uint64(), uint64(n))
	return int(hi)
}

// exp is exponential with mean 1, by the ziggurat method (Marsaglia and
// Tsang, 2000): one 64-bit draw and a table look-up in 99% of calls, the
// logarithm only in the tail and at wedge rejections. The common case is
// small enough to inline; the rest continues from the same draw in expSlow.
func (s *stream) exp() float64 {
	u := s.uint64()
	i := u & 0xff
	j := uint32(u >> 32)
	if j < zigK[i] {
		return float64(j) * zigW[i]
	}
	return s.expSlow(u)
}

// expSlow is exp after a first draw u that fell outside its layer's box.
func (s *stream) expSlow(u uint64) float64 {
	for {
		i := u & 0xff
		j := uint32(u >> 32)
		x := float64(j) * zigW[i]
		if j < zigK[i] {
			return x
		}
		if i == 0 {
			return zigR - math.Log(1-s.float64())
		}
		if zigF[i]+s.float64()*(zigF[i-1]-zigF[i]) < math.Exp(-x) {
			return x
		}
		u = s.uint64()
	}
}

// Ziggurat tables for the exponential density exp(-x), 256 layers of equal
// area v, built once from the standard constants.
const (
	zigR = 7.69711747013104972
	zigV = 3.949659822581572e-3
)

var zigK [256]uint32
var zigW, zigF [256]float64

func init() {
	const m = 1 << 32
	de, te := zigR, zigR
	q := zigV / math.Exp(-de)
	zigK[0] = uint32(de / q * m)
	zigK[1] = 0
	zigW[0] = q / m
	zigW[255] = de / m
	zigF[0] = 1
	zigF[255] = math.Exp(-de)
	for i := 254; i >= 1; i-- {
		de = -math.Log(zigV/de + math.Exp(-de))
		zigK[i+1] = uint32(de / te * m)
		te = de
		zigF[i] = math.Exp(-de)
		zigW[i] = de / m
	}
}

// level is a time-weighted count: busy units of a pool, jobs in a server. It
// integrates the count and the time spent at or above full, which is what a
// per-second sampler like SysStat averages to.
type level struct {
	v     int32
	size  int32 // full when v >= size; 0 = no size
	last  float64
	area  float64
	fullT float64
}

func (l *level) set(now float64, v int32) {
	dt := now - l.last
	l.area += float64(l.v) * dt
	if l.size > 0 && l.v >= l.size {
		l.fullT += dt
	}
	l.last = now
	l.v = v
}

func (l *level) add(now float64, d int32) { l.set(now, l.v+d) }

// restart forgets the integrals: the measured window begins.
func (l *level) restart(now float64) { l.last, l.area, l.fullT = now, 0, 0 }

// What a station's next event is.
const (
	nextNone uint8 = iota
	nextDone
	nextGCStart
	nextGCEnd
)

// maxClasses bounds the demand classes of one station.
const maxClasses = 4

// station is a CPU of one server: c cores shared by processor sharing among
// the jobs present, exponential demands with a mean per class, and optional
// stop-the-world garbage collection.
//
// Exponential demands make it memoryless: with n jobs, class k completes at
// rate n_k * min(1, c/n) / d_k and the job that leaves is uniform among its
// class. So the station needs no finish tags and no per-job events, only its
// own next completion. That time is kept as a budget of an Exp(1) clock
// spent at the current total rate (a random time change): a change of rate
// rescales the remaining time with no new draw, which is exact in
// distribution and costs a division.
type station struct {
	// Fields in the order the common event (a completion at a busy
	// one-core station) reads them: the first two cache lines.
	next     float64 // time of the next event, +Inf if none
	last     float64 // time the integrals and clock were last advanced
	clock    float64 // Exp(1) budget left until the next completion
	mean0    float64 // 1/mu[0]
	busyArea float64 // core-seconds busy since the window began, pauses included (all cores)
	work     float64 // core-seconds of work since the last pause
	gcWork   float64 // GC: a pause after this much work; 0 = no GC
	n        int
	jobs     [maxClasses][]int32
	rng      stream
	nextKind uint8
	simple   bool // one core, one class: the rate is mu[0] whenever busy
	paused   bool
	tag      uint8 // the model's label for the station
	classes  int
	cores    int
	mu       [maxClasses]float64 // 1/mean demand per class
	rate     float64             // total completion rate now
	sum      float64             // several classes: the rate before sharing, as of the last reschedule

	gcPause  float64 // length of a pause
	pauseEnd float64
	gcArea   float64 // seconds paused since the window began
	pauses   int64

	// Arrivals after a constant delay (class 0), in time order. At a
	// one-core station they join lazily: a busy one-core processor-sharing
	// station with exponential demands goes on at the same rate whoever
	// arrives, and the job that leaves is uniform among those present, so
	// the arrivals that happened by its next event join just before it,
	// the same model in distribution. Only an arrival at an idle station
	// is an event of its own.
	pend     fifo
	absorbed int64 // arrivals that joined without an event
}

func newStation(cores, classes int, means []float64, rng stream) *station {
	s := &station{next: inf, classes: classes, cores: cores, rng: rng}
	for k := 0; k < classes; k++ {
		if means[k] > 0 {
			s.mu[k] = 1 / means[k]
		} else {
			s.mu[k] = math.MaxFloat64 / 4 // zero demand: leaves at once, in effect
		}
	}
	s.simple = cores == 1 && classes == 1
	s.mean0 = 1 / s.mu[0]
	s.clock = rng.exp()
	return s
}

// setGC turns on stop-the-world collection: a pause of share*work after every
// work core-seconds of CPU work.
func (s *station) setGC(work, share float64) {
	if work > 0 && share > 0 {
		s.gcWork, s.gcPause = work, work*share
	}
}

// advance moves the integrals, the GC work counter and the completion clock
// to now.
func (s *station) advance(now float64) {
	dt := now - s.last
	if dt <= 0 {
		return
	}
	s.last = now
	if s.paused {
		s.busyArea += float64(s.cores) * dt
		s.gcArea += dt
		return
	}
	if s.n == 0 {
		return
	}
	busy := float64(min(s.n, s.cores))
	s.busyArea += busy * dt
	s.work += busy * dt
	s.clock -= s.rate * dt
}

// restart forgets the integrals: the measured window begins.
func (s *station) restart(now float64) {
	s.advance(now)
	s.busyArea, s.gcArea, s.pauses = 0, 0, 0
}

// reschedule recomputes the rate and the next event after a change.
func (s *station) reschedule() {
	if s.paused {
		s.next, s.nextKind = s.pauseEnd, nextGCEnd
		return
	}
	if s.n == 0 {
		s.rate = 0
		s.next, s.nextKind = inf, nextNone
		return
	}
	if s.simple {
		s.rate = s.mu[0]
		s.next, s.nextKind = s.last+max(s.clock, 0)*s.mean0, nextDone
		if s.gcWork > 0 {
			if g := s.last + s.gcWork - s.work; g < s.next {
				s.next, s.nextKind = g, nextGCStart
			}
		}
		return
	}
	var r float64
	if s.classes == 1 {
		r = float64(s.n) * s.mu[0]
	} else {
		for k := 0; k < s.classes; k++ {
			r += float64(len(s.jobs[k])) * s.mu[k]
		}
		s.sum = r
	}
	busy := min(s.n, s.cores)
	if s.n > s.cores {
		r *= float64(s.cores) / float64(s.n)
	}
	s.rate = r
	c := s.clock
	if c < 0 {
		c = 0
	}
	s.next, s.nextKind = s.last+c/r, nextDone
	if s.gcWork > 0 {
		g := s.last + (s.gcWork-s.work)/float64(busy)
		if g < s.next {
			s.next, s.nextKind = g, nextGCStart
		}
	}
}

// arrive adds job id of class k at time now.
func (s *station) arrive(now float64, id int32, k int) {
	if s.simple && (s.n > 0 || s.paused) {
		// Busy at one core: the rate, the work rate and the integrals do
		// not depend on how many jobs share it, so nothing else changes.
		s.jobs[0] = append(s.jobs[0], id)
		s.n++
		return
	}
	s.advance(now)
	s.jobs[k] = append(s.jobs[k], id)
	s.n++
	s.reschedule()
}

// arriveAt adds job id (class 0) at time t >= now, the time it leaves a
// constant delay: entries must come in time order.
func (s *station) arriveAt(t float64, id int32) { s.pend.push(delayed{t: t, id: id}) }

// due is the next time the station needs attention: its own next event, or
// the first delayed arrival that cannot wait for it.
func (s *station) due() float64 {
	if s.pend.n == 0 {
		return s.next
	}
	if s.simple {
		if s.n == 0 && !s.paused {
			return s.pend.front()
		}
		return s.next
	}
	return min(s.next, s.pend.front())
}

// step handles what is due at time now (= due(), up to the few ulps by
// which the caller may round times down): a delayed arrival or the
// station's own event. It returns the job that completed, or -1.
func (s *station) step(now float64) int32 {
	if s.pend.n > 0 {
		if !s.simple {
			if s.pend.buf[s.pend.head].t <= s.next {
				s.arrive(now, s.pend.pop().id, 0)
				return -1
			}
			return s.fire(now)
		}
		if s.n == 0 && !s.paused { // an arrival at the idle station
			s.arrive(now, s.pend.pop().id, 0)
			s.absorb(now)
			return -1
		}
		s.absorb(now)
	}
	return s.fire(now)
}

// absorb lets the delayed arrivals that happened by now join a busy
// one-core station.
func (s *station) absorb(now float64) {
	for s.pend.n > 0 && s.pend.buf[s.pend.head].t <= now {
		s.jobs[0] = append(s.jobs[0], s.pend.pop().id)
		s.n++
		s.absorbed++
	}
}

// pendingBy counts delayed arrivals that have happened by now but not joined.
func (s *station) pendingBy(now float64) int {
	q := &s.pend
	n := 0
	for n < q.n && q.buf[(q.head+n)&(len(q.buf)-1)].t <= now {
		n++
	}
	return n
}

// fire handles the station's next event at time now (= s.next) and returns
// the job that completed, or -1 for a GC start or end.
func (s *station) fire(now float64) int32 {
	if s.simple && s.nextKind == nextDone {
		// The common case, inlined: one core busy throughout, so the
		// integrals grow with the elapsed time alone.
		dt := now - s.last
		s.last = now
		s.busyArea += dt
		s.work += dt
		js := s.jobs[0]
		i := 0
		if len(js) > 1 {
			i = s.rng.intN(len(js))
		}
		id := js[i]
		js[i] = js[len(js)-1]
		s.jobs[0] = js[:len(js)-1]
		s.n--
		// s.clock = s.rng.exp(), its common case written out.
		u := s.rng.uint64()
		if j, l := uint32(u>>32), u&0xff; j < zigK[l] {
			s.clock = float64(j) * zigW[l]
		} else {
			s.clock = s.rng.expSlow(u)
		}
		if s.n == 0 {
			s.rate = 0
			s.next, s.nextKind = inf, nextNone
			return id
		}
		s.next = now + s.clock*s.mean0
		if s.gcWork > 0 {
			if g := now + s.gcWork - s.work; g < s.next {
				s.next, s.nextKind = g, nextGCStart
			}
		}
		return id
	}
	s.advance(now)
	switch s.nextKind {
	case nextGCStart:
		s.paused = true
		s.pauseEnd = now + s.gcPause
		s.work = 0
		s.pauses++
		s.reschedule()
		return -1
	case nextGCEnd:
		s.paused = false
		s.reschedule()
		return -1
	}
	k := 0
	if s.classes > 1 {
		// The total rate before sharing, as reschedule summed it: no job
		// has come or gone since.
		u := s.rng.float64() * s.sum
		for k = 0; k < s.classes-1; k++ {
			u -= float64(len(s.jobs[k])) * s.mu[k]
			if u < 0 && len(s.jobs[k]) > 0 {
				break
			}
		}
		for len(s.jobs[k]) == 0 { // rounding at the last class
			k--
		}
	}
	js := s.jobs[k]
	i := 0
	if len(js) > 1 {
		i = s.rng.intN(len(js))
	}
	id := js[i]
	js[i] = js[len(js)-1]
	s.jobs[k] = js[:len(js)-1]
	s.n--
	s.clock = s.rng.exp()
	s.reschedule()
	return id
}

// delayStation is an infinite server with exponential holding times of one
// mean: k jobs leave at rate k/mean. Nothing waits on a particular job (the
// model only counts them), so it keeps a count, not identities.
type delayStation struct {
	next  float64
	k     int32
	mu    float64
	clock float64
	last  float64
	area  float64 // integral of k since the window began
	rng   stream
}

func newDelayStation(mean float64, rng stream) *delayStation {
	d := &delayStation{next: inf, mu: 1 / mean, rng: rng}
	d.clock = rng.exp()
	return d
}

func (d *delayStation) advance(now float64) {
	dt := now - d.last
	d.area += float64(d.k) * dt
	d.clock -= float64(d.k) * d.mu * dt
	d.last = now
}

// restart forgets the integral: the measured window begins.
func (d *delayStation) restart(now float64) {
	d.advance(now)
	d.area = 0
}

func (d *delayStation) reschedule() {
	if d.k == 0 {
		d.next = inf
		return
	}
	c := d.clock
	if c < 0 {
		c = 0
	}
	d.next = d.last + c/(float64(d.k)*d.mu)
}

func (d *delayStation) arrive(now float64) {
	d.advance(now)
	d.k++
	d.reschedule()
}

// fire lets one job leave at time now (= d.next).
func (d *delayStation) fire(now float64) {
	d.advance(now)
	d.k--
	d.clock = d.rng.exp()
	d.reschedule()
}

// wheel is a timing wheel for the many events of bounded, random delay (think
// times): buckets of a fixed width, each a list of chunks of entries, sorted
// only when the clock reaches them. Push and pop are O(1) and touch no shared
// array but the bucket heads; a binary heap of thousands of entries pays a
// cache miss and a mispredicted branch per level instead. Chunks of a
// cache line, not one node per entry, make reading a bucket a few dependent
// loads rather than one per entry. An entry beyond the wheel's span is
// refused and the caller keeps it elsewhere.
type wheel struct {
	inv   float64 // buckets per second
	mask  int64
	slot  []wheelSlot
	chunk []wheelChunk
	free  int32     // first free chunk, -1 if none
	cur   int64     // absolute number of the bucket being consumed
	run   []delayed // the current bucket, sorted by time, from pos on
	pos   int
	count int // entries in buckets after cur
}

// wheelSlot is a bucket: its newest chunk (-1: empty) and that chunk's
// entries; older chunks are full.
type wheelSlot struct {
	head int32
	fill int32
}

// chunkN entries fill a 64-byte chunk.
const chunkN = 5

type wheelChunk struct {
	t    [chunkN]float64
	id   [chunkN]int32
	next int32 // the bucket's next older chunk, or the next free one; -1: none
}

// newWheel makes a wheel of 2^bits buckets of width 1/perSecond seconds for
// about n entries at a time.
func newWheel(n int, perSecond float64, bits uint) *wheel {
	w := &wheel{inv: perSecond, mask: 1<<bits - 1, slot: make([]wheelSlot, 1<<bits),
		chunk: make([]wheelChunk, 0, n/chunkN+1<<bits/4), free: -1}
	for i := range w.slot {
		w.slot[i].head = -1
	}
	return w
}

// push adds entity id at time t >= the last popped time; false if t lies
// beyond the wheel's span.
func (w *wheel) push(t float64, id int32) bool {
	abs := int64(t * w.inv)
	if abs <= w.cur {
		// The bucket being consumed: insert in order (it is short).
		w.run = append(w.run, delayed{})
		i := len(w.run) - 1
		for i > w.pos && w.run[i-1].t > t {
			w.run[i] = w.run[i-1]
			i--
		}
		w.run[i] = delayed{t: t, id: id}
		return true
	}
	if abs-w.cur > w.mask {
		return false
	}
	b := &w.slot[abs&w.mask]
	if b.head < 0 || b.fill == chunkN {
		c := w.free
		if c >= 0 {
			w.free = w.chunk[c].next
		} else {
			c = int32(len(w.chunk))
			w.chunk = append(w.chunk, wheelChunk{})
		}
		w.chunk[c].next = b.head
		b.head, b.fill = c, 0
	}
	k := &w.chunk[b.head]
	k.t[b.fill] = t
	k.id[b.fill] = id
	b.fill++
	w.count++
	return true
}

// front is the time of the earliest entry, or +Inf.
func (w *wheel) front() float64 {
	if w.pos < len(w.run) {
		return w.run[w.pos].t
	}
	if w.count == 0 {
		return inf
	}
	w.run, w.pos = w.run[:0], 0
	for {
		w.cur++
		b := &w.slot[w.cur&w.mask]
		if b.head < 0 {
			continue
		}
		// Newest first, then a stable sort: entries of equal time keep
		// the order a list of single entries gave them.
		for c, n := b.head, b.fill; c >= 0; n = chunkN {
			k := &w.chunk[c]
			for i := n - 1; i >= 0; i-- {
				w.run = append(w.run, delayed{t: k.t[i], id: k.id[i]})
			}
			next := k.next
			k.next = w.free
			w.free = c
			c = next
		}
		b.head, b.fill = -1, 0
		w.count -= len(w.run)
		// Insertion sort: a bucket holds a few dozen entries at most.
		r := w.run
		for i := 1; i < len(r); i++ {
			d := r[i]
			j := i
			for j > 0 && r[j-1].t > d.t {
				r[j] = r[j-1]
				j--
			}
			r[j] = d
		}
		return r[0].t
	}
}

// pop removes the earliest entry; front must have been called since the
// last change.
func (w *wheel) pop() delayed {
	d := w.run[w.pos]
	w.pos++
	return d
}

// Exported wrappers for another model built on this core
// (internal/sim/classes). They wrap rather than rename, so rubbos.go and its
// benchmarks keep the unexported types as they are; each is small enough to
// inline.

// Stream is an independent random stream (PCG); see stream.
type Stream struct{ s stream }

// NewStream derives a stream from a seed, a purpose and an index.
func NewStream(seed, purpose, index uint64) Stream { return Stream{newStream(seed, purpose, index)} }

// Float64 is uniform in [0, 1).
func (s *Stream) Float64() float64 { return s.s.float64() }

// Exp is exponential with mean 1.
func (s *Stream) Exp() float64 { return s.s.exp() }

// IntN is uniform in [0, n), n > 0.
func (s *Stream) IntN(n int) int { return s.s.intN(n) }

// EventHeap is a min-heap of (time, id, kind) entries; see eventHeap.
type EventHeap struct{ h eventHeap }

// Push adds an entry.
func (h *EventHeap) Push(t float64, id int32, kind uint8) {
	h.h.push(event{t: t, id: id, kind: kind})
}

// Pop removes the earliest entry; the heap must not be empty.
func (h *EventHeap) Pop() (t float64, id int32, kind uint8) {
	e := h.h.pop()
	return e.t, e.id, e.kind
}

// Top is the earliest time, or +Inf when empty.
func (h *EventHeap) Top() float64 { return h.h.top() }

// TopID is the id of the earliest entry; the heap must not be empty.
func (h *EventHeap) TopID() int32 { return h.h.a[0].id }

// Len is the number of entries.
func (h *EventHeap) Len() int { return len(h.h.a) }

// IDQueue is a growable FIFO of ids; see idQueue.
type IDQueue struct{ q idQueue }

// Push appends id.
func (q *IDQueue) Push(id int32) { q.q.push(id) }

// Pop removes the head; the queue must not be empty.
func (q *IDQueue) Pop() int32 { return q.q.pop() }

// Len is the number of ids waiting.
func (q *IDQueue) Len() int { return q.q.len() }
