package engine

import "math"

// What a station's next event is.
const (
	nextNone uint8 = iota
	nextDone
	nextGCStart
	nextGCEnd
)

// maxClasses bounds the demand classes of one Station.
const maxClasses = 4

// Station is a CPU of one server: c cores shared by processor sharing among
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
//
// A model asks Due when the station next needs attention and calls Step
// then; Arrive and ArriveAt add jobs.
type Station struct {
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
	rng      Stream
	nextKind uint8
	simple   bool // one core, one class: the rate is mu[0] whenever busy
	paused   bool
	// Tag is the model's label for the station (its role in the model,
	// say); the station never reads it. It sits here, in a hole of the
	// layout, because a model reads it at every completion.
	Tag     uint8
	classes int
	cores   int
	mu      [maxClasses]float64 // 1/mean demand per class
	rate    float64             // total completion rate now
	sum     float64             // several classes: the rate before sharing, as of the last reschedule

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
	pend     DelayQueue
	absorbed int64 // arrivals that joined without an event
}

// NewStation is an idle station of cores cores and classes demand classes
// (at most 4) with the given mean demands, seconds; a mean of 0
// leaves at once, in effect. rng draws its demands and its choices.
func NewStation(cores, classes int, means []float64, rng Stream) *Station {
	s := &Station{next: inf, classes: classes, cores: cores, rng: rng}
	for k := 0; k < classes; k++ {
		if means[k] > 0 {
			s.mu[k] = 1 / means[k]
		} else {
			s.mu[k] = math.MaxFloat64 / 4 // zero demand: leaves at once, in effect
		}
	}
	s.simple = cores == 1 && classes == 1
	s.mean0 = 1 / s.mu[0]
	s.clock = rng.Exp()
	return s
}

// SetGC turns on stop-the-world collection: a pause of share*work after
// every work core-seconds of CPU work.
func (s *Station) SetGC(work, share float64) {
	if work > 0 && share > 0 {
		s.gcWork, s.gcPause = work, work*share
	}
}

// Cores is the station's number of cores.
func (s *Station) Cores() int { return s.cores }

// Busy is the core-seconds busy since Restart, pauses included (a pause
// holds every core), up to the last Advance.
func (s *Station) Busy() float64 { return s.busyArea }

// BusyAt is the core-seconds busy from Restart to now (>= the last
// Advance), without advancing: Advance would also move the completion
// clock, in pieces whose rounding differs from a run that never looked.
func (s *Station) BusyAt(now float64) float64 {
	dt := now - s.last
	switch {
	case dt <= 0:
		return s.busyArea
	case s.paused:
		return s.busyArea + float64(s.cores)*dt
	}
	return s.busyArea + float64(min(s.n, s.cores))*dt
}

// PausedAt is the seconds spent in collection pauses from Restart to now
// (>= the last Advance), without advancing (see BusyAt).
func (s *Station) PausedAt(now float64) float64 {
	if dt := now - s.last; s.paused && dt > 0 {
		return s.gcArea + dt
	}
	return s.gcArea
}

// Paused is the seconds spent in collection pauses since Restart, up to the
// last Advance.
func (s *Station) Paused() float64 { return s.gcArea }

// Pauses is the number of collection pauses begun since Restart.
func (s *Station) Pauses() int64 { return s.pauses }

// Absorbed is the number of delayed arrivals that joined a busy one-core
// station without an event of their own.
func (s *Station) Absorbed() int64 { return s.absorbed }

// Advance moves the integrals, the GC work counter and the completion clock
// to now.
func (s *Station) Advance(now float64) {
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

// Restart forgets the integrals: the measured window begins at now.
func (s *Station) Restart(now float64) {
	s.Advance(now)
	s.busyArea, s.gcArea, s.pauses = 0, 0, 0
}

// reschedule recomputes the rate and the next event after a change.
func (s *Station) reschedule() {
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

// Arrive adds job id of class k at time now.
func (s *Station) Arrive(now float64, id int32, k int) {
	if s.simple && (s.n > 0 || s.paused) {
		// Busy at one core: the rate, the work rate and the integrals do
		// not depend on how many jobs share it, so nothing else changes.
		s.jobs[0] = append(s.jobs[0], id)
		s.n++
		return
	}
	s.Advance(now)
	s.jobs[k] = append(s.jobs[k], id)
	s.n++
	s.reschedule()
}

// ArriveAt adds job id (class 0) at time t >= now, the time it leaves a
// constant delay: entries must come in time order.
func (s *Station) ArriveAt(t float64, id int32) { s.pend.Push(Delayed{T: t, ID: id}) }

// Pending is the number of delayed arrivals (ArriveAt) that have not
// joined yet.
func (s *Station) Pending() int { return s.pend.n }

// PendingBy counts the delayed arrivals that have happened by now but not
// joined.
func (s *Station) PendingBy(now float64) int {
	q := &s.pend
	n := 0
	for n < q.n && q.buf[(q.head+n)&(len(q.buf)-1)].T <= now {
		n++
	}
	return n
}

// Due is the next time the station needs attention: its own next event, or
// the first delayed arrival that cannot wait for it.
func (s *Station) Due() float64 {
	if s.pend.n == 0 {
		return s.next
	}
	if s.simple {
		if s.n == 0 && !s.paused {
			return s.pend.Front()
		}
		return s.next
	}
	return min(s.next, s.pend.Front())
}

// Step handles what is due at time now (= Due(), up to the few ulps by
// which the caller may round times down): a delayed arrival or the
// station's own event. It returns the job that completed, or -1.
func (s *Station) Step(now float64) int32 {
	if s.pend.n > 0 {
		if !s.simple {
			if s.pend.buf[s.pend.head].T <= s.next {
				s.Arrive(now, s.pend.Pop().ID, 0)
				return -1
			}
			return s.fire(now)
		}
		if s.n == 0 && !s.paused { // an arrival at the idle station
			s.Arrive(now, s.pend.Pop().ID, 0)
			s.absorb(now)
			return -1
		}
		s.absorb(now)
	}
	return s.fire(now)
}

// absorb lets the delayed arrivals that happened by now join a busy
// one-core station.
func (s *Station) absorb(now float64) {
	for s.pend.n > 0 && s.pend.buf[s.pend.head].T <= now {
		s.jobs[0] = append(s.jobs[0], s.pend.Pop().ID)
		s.n++
		s.absorbed++
	}
}

// fire handles the station's next event at time now (= s.next) and returns
// the job that completed, or -1 for a GC start or end.
func (s *Station) fire(now float64) int32 {
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
			i = s.rng.IntN(len(js))
		}
		id := js[i]
		js[i] = js[len(js)-1]
		s.jobs[0] = js[:len(js)-1]
		s.n--
		// s.clock = s.rng.Exp(), its common case written out.
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
	s.Advance(now)
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
		u := s.rng.Float64() * s.sum
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
		i = s.rng.IntN(len(js))
	}
	id := js[i]
	js[i] = js[len(js)-1]
	s.jobs[k] = js[:len(js)-1]
	s.n--
	s.clock = s.rng.Exp()
	s.reschedule()
	return id
}

// DelayStation is an infinite server with exponential holding times of one
// mean: k jobs leave at rate k/mean. Nothing waits on a particular job (a
// model only counts them), so it keeps a count, not identities.
type DelayStation struct {
	next  float64
	k     int32
	mu    float64
	clock float64
	last  float64
	area  float64 // integral of k since the window began
	rng   Stream
}

// NewDelayStation is an empty delay station of the given mean holding
// time, seconds; rng draws the holding times.
func NewDelayStation(mean float64, rng Stream) *DelayStation {
	d := &DelayStation{next: inf, mu: 1 / mean, rng: rng}
	d.clock = rng.Exp()
	return d
}

// Next is the time the next job leaves, +Inf if none is inside.
func (d *DelayStation) Next() float64 { return d.next }

// Mean is the mean holding time, seconds.
func (d *DelayStation) Mean() float64 { return 1 / d.mu }

// Area is the integral of the jobs inside over time since Restart, up to
// the last change.
func (d *DelayStation) Area() float64 { return d.area }

// AreaAt is the integral of the jobs inside from Restart to now (>= the
// last change), without advancing the departure clock.
func (d *DelayStation) AreaAt(now float64) float64 { return d.area + float64(d.k)*(now-d.last) }

// Advance moves the integral and the departure clock to now.
func (d *DelayStation) Advance(now float64) {
	dt := now - d.last
	d.area += float64(d.k) * dt
	d.clock -= float64(d.k) * d.mu * dt
	d.last = now
}

// Restart forgets the integral: the measured window begins at now.
func (d *DelayStation) Restart(now float64) {
	d.Advance(now)
	d.area = 0
}

func (d *DelayStation) reschedule() {
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

// SetMean changes the mean holding time from now on (a ramp's FIN wait
// grows with its users). Holding times are exponential, so the jobs inside
// need no new draws: their remaining work is rescaled with the rate.
func (d *DelayStation) SetMean(now, mean float64) {
	d.Advance(now)
	d.mu = 1 / mean
	d.reschedule()
}

// Arrive adds a job at time now.
func (d *DelayStation) Arrive(now float64) {
	d.Advance(now)
	d.k++
	d.reschedule()
}

// Fire lets one job leave at time now (= Next()).
func (d *DelayStation) Fire(now float64) {
	d.Advance(now)
	d.k--
	d.clock = d.rng.Exp()
	d.reschedule()
}
