package sim

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/softalloc/softalloc/algorithms"
)

// This file is the simulator's ramp (algorithms.Ramper): one simulation
// whose user population grows step by step, never reset. Each level's
// window is chosen as an adaptive trial's is (series.go's decide): from
// the level's start, every five seconds MSER-5 looks for the end of the
// step's transient in the throughput and the users inside, and once it is
// trusted the window runs from there until every figure is within the
// precision, or the window reaches the longest runtime. The window's figures
// are differences of the chain's totals at two marks, so the time a level
// settles is simulated but not counted, and nothing is simulated twice.

// rampHorizon is the fixed window the ramp's chain is built with: the ramp
// ends its levels itself, long before.
const rampHorizon = 1e7 * time.Second

// rampDriver is a ramp's state at its current level.
type rampDriver struct {
	stepStart int // the second the level began
	stopping  algorithms.Stopping
	minWarmUp int       // seconds after the step, a multiple of 5
	maxRows   int       // the longest window, seconds, a multiple of 5
	fifths    []float64 // pages per second in each fifth of a second since the step
	inside    []float64 // their response times' sum per second: the users inside
	snaps     []snapshot
	// The window, once it ended: its start and end (seconds since the
	// step), its estimates and MSER's end of the transient.
	from, to  int
	est       algorithms.Estimates
	estDone   bool
	transient float64
}

// newLevel starts a level at second now with precision p.
func (d *rampDriver) newLevel(c *chain, now int, p float64) {
	d.stepStart = now
	d.stopping.Precision = p
	d.fifths, d.inside = d.fifths[:0], d.inside[:0]
	d.snaps = append(d.snaps[:0], snapshot{at: now, tot: c.capture(float64(now)), rec: c.responseTimes})
	d.est, d.estDone, d.transient = algorithms.Estimates{}, false, 0
}

// pageDone counts a page, of response time rt, by the fifth of a second of
// the level it ended in.
func (d *rampDriver) pageDone(now, rt float64) {
	i := int((now - float64(d.stepStart)) * 5)
	if i < 0 {
		return
	}
	for len(d.fifths) <= i {
		d.fifths = append(d.fifths, 0)
		d.inside = append(d.inside, 0)
	}
	d.fifths[i] += 5
	d.inside[i] += 5 * rt
}

// tick is the level's look at second now (after the series recorded its
// interval): every five seconds it decides whether the window ends here.
func (d *rampDriver) tick(c *chain, now float64) bool {
	abs := int(math.Round(now))
	t := abs - d.stepStart
	if t <= 0 || t%5 != 0 {
		return false
	}
	d.snaps = append(d.snaps, snapshot{at: abs, tot: c.capture(now), rec: c.responseTimes})
	for len(d.fifths) < 5*t {
		d.fifths = append(d.fifths, 0)
		d.inside = append(d.inside, 0)
	}
	warm, trusted := algorithms.WarmUp(d.fifths[:5*t], d.inside[:5*t])
	warm = (warm/5 + 4) / 5 * 5 // seconds, up to the next mark
	from := max(d.minWarmUp, warm, t-d.maxRows)
	n := t - from
	// cols[f][j] is the interval [j, j+1] of the chain's clock.
	cols := func(a int) [][]float64 {
		out := make([][]float64, len(c.series.cols))
		for f := range out {
			out[f] = c.series.cols[f][d.stepStart+a : abs]
		}
		return out
	}
	switch d.stopping.Next(t, n, d.minWarmUp, d.maxRows, trusted) {
	case algorithms.StepWait:
		return false
	case algorithms.StepEnd:
	case algorithms.StepEstimateWhole:
		est := d.stopping.EstimateWhole(c.series.figs, cols(d.minWarmUp), from-d.minWarmUp)
		if !est.Precise {
			return false
		}
		d.est, d.estDone, from = est, true, d.minWarmUp
	case algorithms.StepEstimate:
		est := d.stopping.Estimate(c.series.figs, cols(from))
		if !est.Precise {
			return false
		}
		d.est, d.estDone = est, true
	}
	d.from, d.to, d.transient = from, t, float64(warm)
	return true
}

// window is the observation of the level's window that just ended.
func (d *rampDriver) window(c *chain) algorithms.Observation {
	var start *snapshot
	for i := range d.snaps {
		if d.snaps[i].at == d.stepStart+d.from {
			start = &d.snaps[i]
		}
	}
	end := c.capture(c.now)
	tot := end.minus(start.tot)
	rec := c.responseTimes.Since(&start.rec)
	T := float64(d.to - d.from)
	o := c.observation(tot, T, rec.Histogram())
	est := d.est
	if !d.estDone {
		cols := make([][]float64, len(c.series.cols))
		for f := range cols {
			cols[f] = c.series.cols[f][d.stepStart+d.from : d.stepStart+d.to]
		}
		est = d.stopping.Estimate(c.series.figs, cols)
	}
	for i := range c.series.slas {
		est.Intervals[1+i].Mean = float64(tot.within[i]) / T
	}
	o.SetIntervals(c.series.figs, est, algorithms.MeasuredWindow{WarmUpSeconds: float64(d.from), IntervalSeconds: 1,
		TransientSeconds: d.transient, Precision: d.stopping.Precision})
	return o
}

var _ algorithms.Ramper = Runner{}

// RunRamp runs a ramp in one simulation with the runner's seed: the same
// seed and the same steps give the same windows. A step to more users adds
// them, each from its own stream, thinking from that moment as a trial's
// users do from its start; the FIN wait follows the users (the model's
// mean at each level).
func (r Runner) RunRamp(ctx context.Context, rp algorithms.Ramp, next func(algorithms.RampWindow) (algorithms.RampStep, error)) error {
	if err := rp.Check(); err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	m := r.Model
	if m == nil {
		m = DefaultModel()
	}
	e := algorithms.Experiment{Deployment: rp.Deployment, Allocation: rp.Allocation, Workload: algorithms.Workload{Users: rp.From},
		Timing: algorithms.Timing{Runtime: rampHorizon, SLAs: rp.Timing.SLAs}}
	c, err := newTrial(m, e, r.Seed)
	if err != nil {
		return err
	}
	d := &rampDriver{
		stopping:  algorithms.Stopping{Precision: rp.Timing.Precision, GoodputOnly: rp.Timing.GoodputOnly},
		minWarmUp: 5 * int(math.Ceil(rp.Timing.RampUp.Seconds()/5)),
		maxRows:   max(5, 5*int(math.Ceil(rp.Timing.Runtime.Seconds()/5))),
	}
	c.ramp = d
	d.newLevel(c, 0, rp.Timing.Precision)
	users, lastEnd := rp.From, 0.0
	for i := 0; ; i++ {
		if err := c.run(ctx); err != nil {
			return err
		}
		w := algorithms.RampWindow{Index: i, Users: users, Start: float64(d.stepStart + d.from), End: c.now,
			Elapsed: c.now - lastEnd, Observation: d.window(c)}
		lastEnd = c.now
		step, err := next(w)
		if err != nil {
			return err
		}
		switch {
		case step.Users == 0:
			return nil
		case step.Users < users:
			return fmt.Errorf("simulate: ramp: a step from %d down to %d users; a ramp only rises", users, step.Users)
		case step.Users > math.MaxInt32:
			return fmt.Errorf("simulate: ramp: want at most %d users, got %d", math.MaxInt32, step.Users)
		}
		if step.Users > users {
			c.addUsers(step.Users-users, c.now)
			users = step.Users
			if fm := m.Web.FINWait.mean(users); fm > 0 {
				for j := range c.web {
					if c.web[j].finWait != nil {
						c.finCatchUp(&c.web[j])
						c.web[j].finWait.SetMean(c.now, fm)
						c.finCand(&c.web[j])
					}
				}
			}
		}
		p := rp.Timing.Precision
		if step.Precision > 0 {
			p = step.Precision
		}
		d.newLevel(c, int(math.Round(c.now)), p)
	}
}
