package sim

import (
	"math"

	"github.com/softalloc/softalloc/algorithms"
)

// This file records a trial as a series of one-second intervals, at the
// chain's per-second tick, and runs the adaptive trial's rule on it. The
// recording only reads the model's state: a trial gives the same numbers
// whether or not it is recorded.
//
// An adaptive trial measures from its minimum ramp-up on, and keeps the
// totals (every integral, and the response-time histogram) every five
// seconds. Every five seconds MSER-5 looks for the end of the transient in
// the throughput since the start of the load, by fifths of a second (its
// batches of five are then seconds, and it needs ten seconds of data, not
// fifty); once its answer can be trusted, the window runs from the next
// five-second mark (never before the minimum ramp-up) to now, and the
// trial ends as soon as the stopping rule says every figure is precise
// over that window, or the window reaches the longest runtime. The window's figures are the differences of two totals, so the
// time between the ramp-up and the end of the transient is measured but
// not counted, and nothing is simulated twice.

// snapshot is a trial's totals and response times at a five-second mark.
type snapshot struct {
	at  int
	tot totals
	rec algorithms.Recorder
}

// series is the recording of one trial.
type series struct {
	figs []algorithms.Figure
	// cols[f] is figure f per second from the restart on; prev its
	// cumulative value at prevT, the last tick (or the restart).
	cols  [][]float64
	prev  []float64
	cur   []float64
	prevT float64
	// slas are the goodput thresholds; within counts the pages since the
	// restart at or under each.
	slas   []float64
	within []int64

	// An adaptive trial.
	adaptive  bool
	stopping  algorithms.Stopping
	minWarmUp int       // seconds, a multiple of 5: the restart
	maxRows   int       // the longest window, seconds, a multiple of 5
	fifths    []float64 // pages completed in each fifth of a second from the start of the load, per second
	inside    []float64 // their response times' sum per second: the users inside the system (Little's law)
	snaps     []snapshot
	start     *snapshot // where the window began, once it ended
	transient float64   // MSER-5's end of the transient, seconds
	est       algorithms.Estimates
	estDone   bool // est is the window's (the trial stopped at the precision)
}

// newSeries lays out the figures of c's servers in observation order.
func newSeries(c *chain, t algorithms.Timing) *series {
	s := &series{slas: t.SLAs, within: make([]int64, len(t.SLAs))}
	s.figs = append(s.figs, algorithms.Figure{Kind: algorithms.FigureThroughput})
	for _, sla := range t.SLAs {
		s.figs = append(s.figs, algorithms.Figure{Kind: algorithms.FigureGoodput, SLA: sla})
	}
	cpu := func(r, i int) {
		s.figs = append(s.figs, algorithms.Figure{Kind: algorithms.FigureCPU, Server: c.tiers[r].ServerName(i), Capacity: 1})
	}
	busy := func(r, i int, pool string, size int32) {
		s.figs = append(s.figs, algorithms.Figure{Kind: algorithms.FigureBusy, Server: c.tiers[r].ServerName(i), Pool: pool, Capacity: float64(size)})
	}
	for i := range c.web {
		cpu(0, i)
		busy(0, i, algorithms.PoolThreads, c.web[i].workers.Size())
	}
	for i := range c.app {
		cpu(1, i)
		busy(1, i, algorithms.PoolThreads, c.app[i].threads.Size())
		busy(1, i, algorithms.PoolConnections, c.app[i].connections.Size())
	}
	for i := range c.cluster {
		cpu(2, i)
		busy(2, i, algorithms.PoolThreads, c.cluster[i].threads)
	}
	for i := range c.db {
		cpu(3, i)
		busy(3, i, algorithms.PoolThreads, c.db[i].threads)
	}
	s.cols = make([][]float64, len(s.figs))
	s.prev = make([]float64, len(s.figs))
	s.cur = make([]float64, len(s.figs))
	if t.Precision > 0 {
		s.adaptive = true
		s.stopping = algorithms.Stopping{Precision: t.Precision, GoodputOnly: t.GoodputOnly}
		// Five-second marks: MSER-5's batches, and the snapshots' spacing.
		s.minWarmUp = 5 * int(math.Ceil(t.RampUp.Seconds()/5))
		s.maxRows = max(5, 5*int(math.Ceil(t.Runtime.Seconds()/5)))
	}
	return s
}

// cumulative writes every figure's integral since the restart up to now
// into out: pages, pages within each SLA, core-seconds busy per core, busy
// unit-seconds of each pool.
func (c *chain) cumulative(now float64, out []float64) {
	s := c.series
	j := 0
	out[j] = float64(c.pages)
	j++
	for _, n := range s.within {
		out[j] = float64(n)
		j++
	}
	cpu := func(st int) {
		out[j] = c.stations[st].BusyAt(now) / float64(c.stations[st].Cores())
		j++
	}
	for i := range c.web {
		w := &c.web[i]
		// Applies the FIN ends due by now, at their own times and with
		// their own draws, as the server's next change would: the same
		// numbers, now rather than later.
		c.finCatchUp(w)
		cpu(w.station)
		out[j] = w.workers.AreaAt(now)
		j++
	}
	for i := range c.app {
		a := &c.app[i]
		cpu(a.station)
		out[j] = a.threads.AreaAt(now)
		out[j+1] = a.connections.AreaAt(now)
		j += 2
	}
	for _, q := range [][]queryServer{c.cluster, c.db} {
		for i := range q {
			cpu(q[i].station)
			out[j] = q[i].residenceSum
			j++
		}
	}
}

// startWindow is the restart: the recording's origin, where every integral
// is 0. An adaptive trial keeps its first snapshot there.
func (c *chain) startWindow(now float64) {
	s := c.series
	s.prevT = now
	clear(s.prev)
	if s.adaptive {
		s.snaps = append(s.snaps, snapshot{at: int(math.Round(now)), tot: c.capture(now), rec: c.responseTimes})
	}
}

// record closes the interval from the last tick to now. Intervals shorter
// than half a second (a tick at the window's start) are not recorded.
func (c *chain) record(now float64) {
	s := c.series
	dt := now - s.prevT
	if dt < 0.5 {
		return
	}
	c.cumulative(now, s.cur)
	for f := range s.cur {
		s.cols[f] = append(s.cols[f], (s.cur[f]-s.prev[f])/dt)
	}
	s.prev, s.cur = s.cur, s.prev
	s.prevT = now
}

// pageDone counts an adaptive trial's page, of response time rt, by the
// fifth of a second it ended in (MSER-5's series).
func (s *series) pageDone(now, rt float64) {
	if !s.adaptive {
		return
	}
	i := int(now * 5)
	for len(s.fifths) <= i {
		s.fifths = append(s.fifths, 0)
		s.inside = append(s.inside, 0)
	}
	s.fifths[i] += 5 // pages per second
	s.inside[i] += 5 * rt
}

// pageWithin counts a page of the window against each SLA threshold.
func (s *series) pageWithin(rt float64) {
	for i, sla := range s.slas {
		if rt <= sla {
			s.within[i]++
		}
	}
}

// tick is the chain's per-second look: it records the window's interval,
// and in an adaptive trial decides, every five seconds, whether the window
// ends now (see the top of the file). It reports whether it does.
func (c *chain) tick(now float64) bool {
	s := c.series
	if !s.adaptive {
		if c.measuring {
			c.record(now)
		}
		return false
	}
	if !c.measuring {
		return false
	}
	c.record(now)
	t := int(math.Round(now))
	if t%5 != 0 {
		return false
	}
	s.snaps = append(s.snaps, snapshot{at: t, tot: c.capture(now), rec: c.responseTimes})
	for len(s.fifths) < 5*t {
		s.fifths = append(s.fifths, 0)
		s.inside = append(s.inside, 0)
	}
	return c.decide(t, now)
}

// decide is an adaptive trial's check at the five-second mark t (now): it
// reports whether the window ends here. It reads the recording and changes
// it only where the window ends, so a trial refined at the mark where it
// ended (refine) decides again there.
func (c *chain) decide(t int, now float64) bool {
	s := c.series
	// Untrusted, d is at most half-way: past the longest window, that is
	// where the window starts, as MSER's own rule would have it.
	d, trusted := algorithms.WarmUp(s.fifths[:5*t], s.inside[:5*t])
	d = (d/5 + 4) / 5 * 5 // seconds, up to the next snapshot
	from := max(s.minWarmUp, d, t-s.maxRows)
	// Snapshots before the earliest start the window can still have are
	// not needed again.
	for len(s.snaps) > 1 && s.snaps[0].at < min(from, t-s.maxRows) {
		s.snaps = s.snaps[1:]
	}
	n := t - from
	switch s.stopping.Next(t, n, s.minWarmUp, s.maxRows, trusted) {
	case algorithms.StepWait:
		return false
	case algorithms.StepEnd:
		// The longest window, or a transient that has not settled within
		// it: measured as it is, not precise.
	case algorithms.StepEstimateWhole:
		// The cols run from the least warm-up: the whole window.
		est := s.stopping.EstimateWhole(s.figs, s.cols, from-s.minWarmUp)
		if !est.Precise {
			return false
		}
		s.est, s.estDone = est, true
		from = s.minWarmUp
	case algorithms.StepEstimate:
		off := from - s.minWarmUp
		cols := make([][]float64, len(s.cols))
		for f := range s.cols {
			cols[f] = s.cols[f][off:]
		}
		est := s.stopping.Estimate(s.figs, cols)
		if !est.Precise {
			return false
		}
		s.est, s.estDone = est, true
	}
	for i := range s.snaps {
		if s.snaps[i].at == from {
			s.start = &s.snaps[i]
		}
	}
	s.transient = float64(d)
	c.windowStart, c.windowEnd = float64(from), now
	return true
}

// refine makes an adaptive trial that ended precise the same trial at the
// finer precision p, as if run at p from its start: no check before its
// end could have found it precise at p (a half-width within p of its mean
// is within the coarser precision too), and its end changed nothing but
// what is reset here. It decides again at the mark where it ended, and
// reports whether the window ends there too; if not, the trial goes on
// from its next tick.
func (c *chain) refine(p float64) (ended bool) {
	s := c.series
	s.stopping.Precision = p
	s.est, s.estDone, s.start, s.transient = algorithms.Estimates{}, false, nil, 0
	c.windowStart = float64(s.minWarmUp)
	// The mark where the coarser trial ended may hold the finer one too.
	if c.decide(int(math.Round(c.now)), c.now) {
		c.windowEnd = c.now
		return true
	}
	c.push(c.now+1, 0, evTick)
	return false
}

// endedPrecise says an adaptive trial ended because it was precise, not at
// its longest window: a finer one would go on from it.
func (s *series) endedPrecise() bool { return s.adaptive && s.estDone }

// windowSnapshot is where an adaptive trial's window began (nil for a
// fixed trial, whose window began at the restart).
func (s *series) windowSnapshot() *snapshot { return s.start }

// intervals writes the window's intervals and how it was chosen into o;
// tot are the window's totals.
func (c *chain) intervals(o *algorithms.Observation, tot totals) {
	s := c.series
	off := 0
	if s.start != nil {
		off = s.start.at - s.minWarmUp
	}
	if len(s.cols[0]) <= off {
		return
	}
	est := s.est
	if !s.estDone {
		cols := make([][]float64, len(s.cols))
		for f := range s.cols {
			cols[f] = s.cols[f][off:]
		}
		est = s.stopping.Estimate(s.figs, cols)
	}
	// The window's figures are its totals; its intervals are centred on
	// them. Goodput is counted exactly at each threshold.
	T := c.windowEnd - c.windowStart
	for i := range s.slas {
		est.Intervals[1+i].Mean = float64(tot.within[i]) / T
	}
	w := algorithms.MeasuredWindow{WarmUpSeconds: c.windowStart, IntervalSeconds: 1}
	if s.adaptive {
		w.TransientSeconds, w.Precision = s.transient, s.stopping.Precision
	}
	o.SetIntervals(s.figs, est, w)
}
