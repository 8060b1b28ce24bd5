package algorithms

import (
	"fmt"
	"math"
	"strconv"

	"gonum.org/v1/gonum/stat/distuv"
)

// This file is the statistics of adaptive trials, one implementation for
// every runner: where the transient of a trial ends (MSER-5), confidence
// intervals of a window's figures by batch means, the stopping rule of a
// trial run to a precision, and comparisons of estimates that respect their
// intervals.

// Confidence is the level of every interval softalloc computes.
const Confidence = 0.95

// DefaultPrecision is the relative half-width adaptive trials run to by
// default (docs/evaluation.md measures the choice).
const DefaultPrecision = 0.02

// Interval is a confidence interval of a mean: Mean ± HalfWidth. A
// half-width of 0 is an estimate without an interval (a bare mean, as
// fixed trials of runners that measure totals only give): comparisons then
// fall back to the means.
type Interval struct {
	Mean      float64 `json:"mean"`
	HalfWidth float64 `json:"halfWidth"`
}

// Lo and Hi are the interval's ends.
func (i Interval) Lo() float64 { return i.Mean - i.HalfWidth }

// Hi is the upper end.
func (i Interval) Hi() float64 { return i.Mean + i.HalfWidth }

// Scaled multiplies the interval by f >= 0.
func (i Interval) Scaled(f float64) Interval { return Interval{i.Mean * f, i.HalfWidth * f} }

// Relative is the half-width over the mean (0 when the mean is 0).
func (i Interval) Relative() float64 {
	if i.Mean == 0 {
		return 0
	}
	return i.HalfWidth / math.Abs(i.Mean)
}

func (i Interval) String() string {
	if i.HalfWidth == 0 {
		return strconv.FormatFloat(i.Mean, 'g', 4, 64)
	}
	return fmt.Sprintf("%.4g±%.2g", i.Mean, i.HalfWidth)
}

// Verdict is the outcome of comparing two estimates.
type Verdict int

// A comparison's outcomes: a is below b, they cannot be told apart at the
// intervals' confidence, or a is above b.
const (
	Below             Verdict = -1
	Indistinguishable Verdict = 0
	Above             Verdict = 1
)

func (v Verdict) String() string {
	switch v {
	case Below:
		return "below"
	case Above:
		return "above"
	}
	return "indistinguishable"
}

// Versus compares a with b: Above when a's mean exceeds b's by more than
// the half-width of their difference, sqrt(ha² + hb²) (independent
// estimates; with common random numbers the two are positively correlated
// and the test is conservative), Below in the mirror case, else
// Indistinguishable. Two bare means are equal only when they are equal.
func (a Interval) Versus(b Interval) Verdict {
	d := a.Mean - b.Mean
	h := math.Hypot(a.HalfWidth, b.HalfWidth)
	switch {
	case d > h:
		return Above
	case -d > h:
		return Below
	}
	return Indistinguishable
}

// VersusValue compares a with a known value x (a threshold).
func (a Interval) VersusValue(x float64) Verdict { return a.Versus(Interval{Mean: x}) }

// tQuantile is the two-sided Confidence quantile of Student's t with df
// degrees of freedom.
func tQuantile(df int) float64 {
	if df < 1 {
		return math.Inf(1)
	}
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(1 - (1-Confidence)/2)
}

// MSER5 finds the end of a trial's transient in a series of equal-length
// intervals (throughput per second, from the start of the load) by MSER-5
// (White, Cobb and Spratt 2000): the series is cut into batches of 5, and
// the truncation d (in batches) that minimises the standard error of the
// mean of what remains, sum((z_j - mean_d)^2) / (m-d)^2, is the warm-up.
// MSER is about the simplest rule that works without a model of the
// transient, and it held up best in the comparisons of Hoad, Robinson and
// Davies (2010) of 42 warm-up methods. Its answer is trusted only when d
// lies in the first half of the series (Franklin and White 2008): a longer
// truncation means the series has not yet shown a steady state for as long
// as its transient lasted, so the trial should run on. It returns the
// truncation in intervals (a multiple of 5) and whether it can be trusted;
// an untrusted truncation is at most half the series, so that a trial that
// must end without a trusted answer measures the later half, not the few
// intervals after a late minimum.
func MSER5(x []float64) (truncate int, ok bool) {
	const b = 5
	m := len(x) / b
	if m < 2*b {
		// Fewer than 10 batches: too short to tell a transient from noise.
		return 0, false
	}
	z := make([]float64, m)
	for j := range z {
		for _, v := range x[j*b : (j+1)*b] {
			z[j] += v
		}
		z[j] /= b
	}
	// Suffix sums give each d's statistic in O(1).
	var s, s2 float64
	best, bestD := math.Inf(1), 0
	stats := make([]float64, m)
	for d := m - 1; d >= 0; d-- {
		s += z[d]
		s2 += z[d] * z[d]
		n := float64(m - d)
		stats[d] = (s2 - s*s/n) / (n * n)
	}
	// The last few batches are left out of the search: with two or three
	// left the statistic is small by chance (MSER's known end effect).
	for d := 0; d <= m-b; d++ {
		if stats[d] < best {
			best, bestD = stats[d], d
		}
	}
	return min(bestD, m/2) * b, bestD <= m/2
}

// WarmUp is where a trial's transient ends: the later of MSER5's answers
// on its throughput and on the sum of its pages' response times per
// interval, which by Little's law is the number of users inside the system
// (waiting or served). Near saturation throughput reaches its plateau
// within seconds, capped by the bottleneck, while the queue in front of it
// is still settling: on the simulator's 1/1/1/1 at 2,750 users MSER on
// throughput alone ended the warm-up at 10 s, and the windows that began
// there held 10-25% more jobs in the app tier than those from 60 s on. Both
// series are per interval, of equal length; trusted only if both answers are.
func WarmUp(throughput, inside []float64) (truncate int, ok bool) {
	d1, ok1 := MSER5(throughput)
	d2, ok2 := MSER5(inside)
	return max(d1, d2), ok1 && ok2
}

// Stopping is the rule of an adaptive trial: batch means (Schmeiser 1982;
// Law and Kelton ch. 9) over the measured window's equal-length intervals
// give each figure's confidence interval, and the trial ends when every
// half-width is within Precision of its figure's mean.
//
// The window is cut into between Batches and 2 x Batches batches of a
// power-of-two number of intervals, so batches grow with the window and
// become nearly independent however correlated the figure is; a figure
// whose batch means still look correlated (the von Neumann ratio test, one
// sided at level 0.01, after Fishman's LBATCH rule) gets batches twice as long,
// down to MinBatches. The t quantile with k-1 degrees of freedom covers
// the remaining non-normality of few batches.
type Stopping struct {
	// Precision is the relative half-width every figure must reach (0.01:
	// within 1% of its mean at 95% confidence).
	Precision float64
	// Batches and MinBatches bound the number of batches (defaults 20 and 10).
	Batches, MinBatches int
	// GoodputOnly: only throughput and goodput keep a trial running
	// (Timing.GoodputOnly).
	GoodputOnly bool
}

// DefaultBatches and DefaultMinBatches are Stopping's defaults: 10 to 30
// batches is the usual advice (Schmeiser 1982); 20 to 40 give the t
// quantile few enough degrees of freedom lost, and 10 after merging still
// leave a usable interval.
const (
	DefaultBatches    = 20
	DefaultMinBatches = 10
)

func (s Stopping) batches() (k0, kmin int) {
	k0, kmin = s.Batches, s.MinBatches
	if k0 <= 0 {
		k0 = DefaultBatches
	}
	if kmin <= 0 {
		kmin = DefaultMinBatches
	}
	return k0, min(kmin, k0)
}

// BatchLength is the number of intervals per batch for a window of n
// intervals: the largest power of two that leaves at least Batches batches
// (1 below that). A runner checks the rule when a batch of this length has
// just been completed, so that every interval of the window is in a batch.
func (s Stopping) BatchLength(n int) int {
	k0, _ := s.batches()
	b := 1
	for n/(2*b) >= k0 {
		b *= 2
	}
	return b
}

// Step is what an adaptive trial does at one of its checks.
type Step int

// An adaptive trial's steps: run on, estimate the window's intervals (and
// end if every figure is precise), or end with the window as it is.
const (
	StepWait Step = iota
	StepEstimate
	StepEnd
	// StepEstimateWhole: the warm-up is not trusted yet, but the window
	// from the least warm-up holds Batches batches and ends one. The
	// runner estimates that whole window with EstimateWhole, and ends the
	// trial with it if every figure is precise and the transient moved none
	// of them by more than the precision.
	StepEstimateWhole
)

// Next is the step of an adaptive trial t intervals after the start of
// the load, with a window of n intervals, a least warm-up of minWarm
// intervals and a longest window of maxRows; trusted is WarmUp's verdict.
// An untrusted warm-up waits until the trial could have held its longest
// window after the least warm-up, then ends (WarmUp keeps the later half);
// meanwhile, whenever the whole window since the least warm-up holds
// Batches batches and ends one, it is estimated whole (StepEstimateWhole).
// A trusted warm-up is estimated once the window holds Batches batches and
// ends a whole batch, and ends at the longest window. Every runner takes
// its steps from here, so that they stop their trials alike.
func (s Stopping) Next(t, n, minWarm, maxRows int, trusted bool) Step {
	k0, _ := s.batches()
	switch {
	case !trusted && t < minWarm+maxRows:
		if w := t - minWarm; w >= k0 && w%s.BatchLength(w) == 0 {
			return StepEstimateWhole
		}
		return StepWait
	case !trusted || n >= maxRows:
		return StepEnd
	case n < k0 || n%s.BatchLength(n) != 0:
		return StepWait
	}
	return StepEstimate
}

// FigureKind says what a figure of a trial measures.
type FigureKind uint8

// The figures an adaptive trial is stopped on.
const (
	FigureThroughput FigureKind = iota // pages per second
	FigureGoodput                      // pages per second within an SLA threshold
	FigureCPU                          // a server's CPU utilisation
	FigureBusy                         // a pool's mean busy units
)

// Figure is one figure of a trial that has an interval.
type Figure struct {
	Kind   FigureKind
	Server string  // FigureCPU, FigureBusy
	Pool   string  // FigureBusy
	SLA    float64 // FigureGoodput: the threshold, seconds
	// Capacity is what the figure is a share of: 1 for a utilisation, the
	// pool's size for busy units, 0 for rates. See Stopping.Estimate.
	Capacity float64
}

func (f Figure) String() string {
	switch f.Kind {
	case FigureThroughput:
		return "throughput"
	case FigureGoodput:
		return "goodput at " + strconv.FormatFloat(f.SLA, 'g', -1, 64) + " s"
	case FigureBusy:
		return f.Server + " " + f.Pool + " busy"
	}
	return f.Server + " cpu"
}

// Estimates are the intervals of a window's figures.
type Estimates struct {
	// Intervals has one interval per figure, centred on the mean of its
	// series.
	Intervals []Interval
	// Batches is the number of batches of each figure's interval.
	Batches []int
	// Precise says every figure met the precision with uncorrelated batches.
	Precise bool
	// Worst is the figure furthest from its precision, and Excess its
	// half-width over what the precision allows (at most 1 when precise).
	Worst  int
	Excess float64
}

// Estimate computes every figure's interval over the window's intervals:
// series[f][i] is figure f in interval i, all series of one length. A
// figure is precise when its half-width is at most Precision x max(|mean|,
// CapacityFloor x Capacity) and its batch means pass the independence test;
// busy units of a pool whose size is unknown (Capacity 0) get an interval
// but never keep a trial running, nor do the servers' figures when
// GoodputOnly is set.
func (s Stopping) Estimate(figs []Figure, series [][]float64) Estimates {
	return s.estimate(figs, series, 0)
}

// estimate is Estimate, and with later > 0 also EstimateWhole's test of
// each figure's shift, in the same pass.
func (s Stopping) estimate(figs []Figure, series [][]float64, later int) Estimates {
	est := Estimates{Intervals: make([]Interval, len(figs)), Batches: make([]int, len(figs)), Precise: len(figs) > 0, Worst: -1}
	_, kmin := s.batches()
	throughput := 0.0
	for f, x := range series {
		if figs[f].Kind == FigureThroughput && len(x) > 0 {
			throughput = mean(x)
			break
		}
	}
	for f, x := range series {
		n := len(x)
		b := s.BatchLength(n)
		iv, k, indep := batchInterval(x, b, kmin)
		est.Intervals[f], est.Batches[f] = iv, k
		if !s.holds(figs[f]) {
			continue
		}
		whole := figs[f].Capacity
		if figs[f].Kind == FigureGoodput {
			whole = throughput
		}
		allow := s.Precision * max(math.Abs(iv.Mean), whole)
		excess := math.Inf(1)
		switch {
		case iv.HalfWidth == 0:
			excess = 0 // constant: a pool always full, a figure always 0
		case allow > 0:
			excess = iv.HalfWidth / allow
		}
		if !indep || k < kmin {
			excess = math.Inf(1)
		}
		if later > 0 && later < n && allow > 0 {
			excess = math.Max(excess, math.Abs(mean(x[later:])-iv.Mean)/allow)
		}
		if excess > 1 {
			est.Precise = false
		}
		if est.Worst < 0 || excess > est.Excess {
			est.Worst, est.Excess = f, excess
		}
	}
	return est
}

// holds says figure f can keep a trial running. With GoodputOnly only
// throughput and goodput can. Busy units of a pool of unknown size (one the
// allocation does not set, such as the database's own threads) never do:
// it is no soft resource under test, and its few busy units at low load
// would hold a trial to its longest window (on the testbed, db-1's threads
// kept every trial at 51 s).
func (s Stopping) holds(f Figure) bool {
	if s.GoodputOnly {
		return f.Kind == FigureThroughput || f.Kind == FigureGoodput
	}
	return f.Kind != FigureBusy || f.Capacity > 0
}

// EstimateWhole estimates a window whose start MSER-5 does not trust yet
// (StepEstimateWhole): series run from the least warm-up, and the trial,
// were it to end untrusted now, would keep them from later on. The whole
// window is precise when Estimate says so and, for every figure that can
// keep a trial running, its mean over the whole window and over the part
// it would keep differ by at most what the precision allows: the transient
// MSER sees then biases no figure the trial reports by more than the
// precision asked, and the time it would take to show it over buys nothing.
// On the testbed at 120 and 160 users the users inside fell for 20-30 s
// after the load began (at 120 from 6-7 to 4), so MSER-5 did not trust its
// answer and the trials ran their longest, while throughput over the whole
// window and over its later half differed by at most 1.6%.
//
// Each figure's excess (Estimates.Excess, for the worst) is then the larger
// of its half-width and its shift, each over what the precision allows.
func (s Stopping) EstimateWhole(figs []Figure, series [][]float64, later int) Estimates {
	return s.estimate(figs, series, later)
}

// batchInterval is the batch-means interval of x with batches of b
// intervals, doubled while the batch means look correlated and at least
// kmin batches would remain. indep says the last batching passed the test.
// The interval is centred on the mean of the whole series.
func batchInterval(x []float64, b, kmin int) (Interval, int, bool) {
	mean := mean(x)
	for {
		k := len(x) / b
		if k < 2 {
			return Interval{mean, math.Inf(1)}, k, false
		}
		z := make([]float64, k)
		var zm float64
		for j := range z {
			for _, v := range x[j*b : (j+1)*b] {
				z[j] += v
			}
			z[j] /= float64(b)
			zm += z[j]
		}
		zm /= float64(k)
		var ss, sd float64
		for j, v := range z {
			ss += (v - zm) * (v - zm)
			if j > 0 {
				sd += (v - z[j-1]) * (v - z[j-1])
			}
		}
		if ss <= 1e-24*(zm*zm+1) {
			// Constant but for rounding: no spread, nothing to test.
			return Interval{mean, 0}, k, true
		}
		indep := vonNeumannIndependent(ss, sd, k)
		if !indep && k/2 >= kmin {
			b *= 2
			continue
		}
		hw := tQuantile(k-1) * math.Sqrt(ss/float64(k-1)/float64(k))
		return Interval{mean, hw}, k, indep
	}
}

func mean(x []float64) float64 {
	var m float64
	for _, v := range x {
		m += v
	}
	if len(x) > 0 {
		m /= float64(len(x))
	}
	return m
}

// vonNeumannIndependent is the von Neumann ratio test of k batch means
// against positive lag-1 correlation, one sided at level 0.01: C = 1 -
// sd / (2 ss) is about N(0, (k-2)/(k²-1)) for independent normal means
// (Fishman 1978). ss is the sum of squared deviations, sd the sum of
// squared successive differences. Fishman's LBATCH tests at 0.10, for one
// series; a trial tests 20 to 70 figures at every check, and at 0.10 one
// of them fails by chance nearly every time (1 - 0.9^25 = 93%), which kept
// trials that were precise running to their longest window
// (docs/evaluation.md measures the coverage that results).
func vonNeumannIndependent(ss, sd float64, k int) bool {
	if ss == 0 {
		return true // constant batch means
	}
	c := 1 - sd/(2*ss)
	sigma := math.Sqrt(float64(k-2) / float64(k*k-1))
	const z99 = 2.3263478740408408 // the standard normal's 0.99 quantile
	return c <= z99*sigma
}

// ThroughputInterval is the throughput with its interval.
func (o Observation) ThroughputInterval() Interval {
	return Interval{o.Throughput, o.ThroughputHalfWidth}
}

// GoodputInterval is goodput at threshold sla (seconds) with its interval
// when the runner measured one at that threshold; else the histogram's
// goodput as a bare mean.
func (o Observation) GoodputInterval(sla float64) Interval {
	for _, g := range o.GoodputIntervals {
		if g.SLA == sla {
			return Interval{g.Goodput, g.HalfWidth}
		}
	}
	return Interval{Mean: o.Goodput(sla)}
}

// CPUInterval is the server's CPU utilisation with its interval.
func (s ServerObservation) CPUInterval() Interval { return Interval{s.CPU, s.CPUHalfWidth} }

// HasIntervals says the observation carries intervals.
func (o Observation) HasIntervals() bool { return o.Window != nil && o.Window.Batches > 0 }

// SetIntervals writes the estimates of figs into o: the half-widths of
// throughput, CPU and busy units, goodput at each figure's SLA; and the
// window, with its batches, precision and limit filled from est. A figure
// without a finite interval (a window of fewer than two batches) leaves
// every interval out.
func (o *Observation) SetIntervals(figs []Figure, est Estimates, w MeasuredWindow) {
	w.Batches, w.Precise = 0, false
	for f, iv := range est.Intervals {
		if math.IsInf(iv.HalfWidth, 0) || math.IsNaN(iv.HalfWidth) {
			o.Window = &w
			return
		}
		if w.Batches == 0 || est.Batches[f] < w.Batches {
			w.Batches = est.Batches[f]
		}
	}
	w.Precise = w.Precision > 0 && est.Precise
	if w.Precision > 0 && est.Worst >= 0 {
		w.Limit = figs[est.Worst].String()
		if !math.IsInf(est.Excess, 0) {
			w.Excess = est.Excess
		} // else its batch means never passed the independence test
	}
	o.Window = &w
	o.GoodputIntervals = nil
	for f, fig := range figs {
		iv := est.Intervals[f]
		switch fig.Kind {
		case FigureThroughput:
			o.ThroughputHalfWidth = iv.HalfWidth
		case FigureGoodput:
			o.GoodputIntervals = append(o.GoodputIntervals, GoodputInterval{SLA: fig.SLA, Goodput: iv.Mean, HalfWidth: iv.HalfWidth})
		case FigureCPU, FigureBusy:
			for i := range o.Servers {
				s := &o.Servers[i]
				if s.Name != fig.Server {
					continue
				}
				if fig.Kind == FigureCPU {
					s.CPUHalfWidth = iv.HalfWidth
					continue
				}
				for j := range s.Pools {
					if s.Pools[j].Name == fig.Pool {
						s.Pools[j].BusyHalfWidth = iv.HalfWidth
					}
				}
			}
		}
	}
}
