package algorithms

import (
	"errors"
	"fmt"
	"math"
)

// Station is one queueing station of a closed network solved by MVA: a server
// (or a tier of identical cores) that every page visits, with its total
// service demand per page.
type Station struct {
	Name    string
	Demand  float64 // seconds of service per page (visits x service time)
	Servers int     // cores; 1 = a single processor-sharing server; c > 1 = c cores (load-dependent rate min(n,c)/Demand)
}

// MVAPoint is the exact mean-value solution of a closed network at one
// population of users.
type MVAPoint struct {
	Users        int
	Throughput   float64   // pages/s
	ResponseTime float64   // seconds, excluding think time
	Residence    []float64 // per station, seconds per page
	QueueLength  []float64 // per station, mean jobs
	Utilization  []float64 // per station, in [0,1] (per core)
}

// ErrMVAInput is wrapped by every error MVA returns for a bad network.
var ErrMVAInput = errors.New("mva: invalid network")

// MVA solves a closed, single-class, product-form network exactly by mean
// value analysis (Reiser and Lavenberg, 1980): users cycle between a delay
// station (think time Z, infinite servers) and the queueing stations, each
// page visiting every station; it returns the solution for 1..maxUsers users,
// points[n-1] for n users.
//
// A single-server station (Servers = 1) is a processor-sharing (or FCFS
// exponential) queue with the classic recursion, per page
//
//	R_k(n) = D_k * (1 + Q_k(n-1)).
//
// A station of c > 1 cores serves at rate min(j, c)/D_k with j jobs inside.
// It uses the exact multi-server recursion (Bolch et al., "Queueing Networks
// and Markov Chains", 2nd ed., Sec. 8.2.1) with the marginal probabilities
// p_k(j|n) that j < c jobs are at the station:
//
//	R_k(n)   = D_k/c * (1 + Q_k(n-1) + sum_{j=0}^{c-2} (c-1-j) p_k(j|n-1))
//	p_k(j|n) = X(n) D_k / j * p_k(j-1|n-1),                       j = 1..c-1
//
// and for all stations X(n) = n / (Z + sum_k R_k(n)), Q_k(n) = X(n) R_k(n).
//
// Numerics. The textbook closes the recursion with
// p_k(0|n) = 1 - (X(n) D_k + sum_{j=1}^{c-1} (c-j) p_k(j|n)) / c, a
// difference of nearly equal numbers that the recursion then amplifies from
// one population to the next: it is numerically delicate near saturation,
// and plainly unstable once the station's utilisation exceeds a bound that
// falls with c (about 0.82 at 3 cores, 0.66 at 4, 0.48 at 8, 0.39 at 16).
// Clamping the negative probabilities it produces to 0 does not rescue it: a
// 16-core bottleneck came out 74% off. So p_k(0|n) is computed without any
// subtraction instead, as the product-form ratio
//
//	p_k(0|n) = G_{-k}(n) / G(n),
//
// G the normalising constant of the network and G_{-k} that of the network
// without station k. G_{-k}(n)/G(n) follows by Buzen's convolution of the
// delay and every other station, scaled at each step by X(n) = G(n-1)/G(n)
// from the recursion above: sums of non-negative terms only, so rounding
// errors stay relative and grow at most linearly in n, every value lies in
// [0,1], and nothing overflows. A c-core station joins the convolution in
// O(c) per population because its factor D^j / prod_{i<=j} min(i,c) is
// geometric beyond c jobs (multiplied by D/c per job). Values below 1e-250
// are flushed to 0 (no subnormal arithmetic); since P(station empty) never
// rises with the population in a product-form network, the convolution stops
// once p_k(0|n) has been flushed. No probability is ever negative, so no
// clamping is needed.
//
// Cost is O(maxUsers * K) with single-core stations only, and
// O(maxUsers * K * (1 + M * c_max)) with M multi-core stations of up to c_max
// cores (one complement convolution each): 100,000 users of ten stations take
// tens of milliseconds. Memory is O(maxUsers * K) for the returned points
// (one backing array per field). Errors, never panics: maxUsers < 1, a
// negative or non-finite demand or think time, Servers < 1, no station, and a
// network with neither demand nor think time.
func MVA(stations []Station, thinkTime float64, maxUsers int) ([]MVAPoint, error) {
	if err := validateNetwork(stations, thinkTime); err != nil {
		return nil, err
	}
	if maxUsers < 1 {
		return nil, fmt.Errorf("%w: maxUsers: want an integer >= 1, got %d", ErrMVAInput, maxUsers)
	}
	total := thinkTime
	for _, s := range stations {
		total += s.Demand
	}
	if total == 0 {
		return nil, fmt.Errorf("%w: every demand and the think time are 0: throughput is unbounded", ErrMVAInput)
	}

	k := len(stations)
	points := make([]MVAPoint, maxUsers)
	residence := make([]float64, maxUsers*k)
	queue := make([]float64, maxUsers*k)
	util := make([]float64, maxUsers*k)
	thr := make([]float64, maxUsers+1) // thr[n] = X(n); thr[0] unused

	q := make([]float64, k) // Q_k(n-1)
	multi := make([]*multiCore, k)
	for i, s := range stations {
		if s.Servers > 1 && s.Demand > 0 {
			multi[i] = newMultiCore(stations, i, thinkTime)
		}
	}

	for n := 1; n <= maxUsers; n++ {
		base := (n - 1) * k
		r := residence[base : base+k : base+k]
		sum := 0.0
		for i, s := range stations {
			r[i] = residenceTime(s, q[i], multi[i])
			sum += r[i]
		}
		x := float64(n) / (thinkTime + sum)
		thr[n] = x
		ql := queue[base : base+k : base+k]
		u := util[base : base+k : base+k]
		for i, s := range stations {
			ql[i] = x * r[i]
			q[i] = ql[i]
			u[i] = math.Min(x*s.Demand/float64(s.Servers), 1)
			if multi[i] != nil {
				multi[i].advance(n, thr)
			}
		}
		points[n-1] = MVAPoint{
			Users:        n,
			Throughput:   x,
			ResponseTime: sum,
			Residence:    r,
			QueueLength:  ql,
			Utilization:  u,
		}
	}
	return points, nil
}

// residenceTime is R_k(n) from Q_k(n-1) and, for c > 1 cores, p_k(.|n-1).
func residenceTime(s Station, q float64, m *multiCore) float64 {
	switch {
	case s.Demand == 0:
		return 0
	case m == nil: // one core
		return s.Demand * (1 + q)
	}
	c := s.Servers
	idle := 0.0
	for j := 0; j <= c-2; j++ {
		idle += float64(c-1-j) * m.p[j]
	}
	return s.Demand / float64(c) * (1 + q + idle)
}

// flush is the value below which a probability is taken as 0: far below any
// effect on a result, and far above the subnormal range.
const flush = 1e-250

// multiCore holds the marginal probabilities p_k(j|n), j < c, of one station
// of c > 1 cores, and the convolution of its complement network that yields
// p_k(0|n) (see MVA, Numerics).
type multiCore struct {
	demand float64
	p      []float64 // p_k(j|n), j = 0..c-1, at the last solved population
	stages []stage   // the delay, then every other station with demand; nil once p_k(0|n) is 0
}

// stage is one station of the complement convolution. Its output at
// population n is G_part(n)/G(n), G_part the normalising constant of the
// stations up to and including this one (the first stage is the delay).
type stage struct {
	demand float64 // think time for the delay
	cores  int     // 0 for the delay (infinite servers)
	hist   []float64
	tail   float64 // terms of cores or more jobs at this station (cores > 1)
}

func newMultiCore(stations []Station, k int, thinkTime float64) *multiCore {
	m := &multiCore{demand: stations[k].Demand, p: make([]float64, stations[k].Servers)}
	m.p[0] = 1 // no user: the station is empty
	width := 2 // a stage reads its input at populations n-cores..n
	for _, s := range stations {
		width = max(width, s.Servers+1)
	}
	add := func(demand float64, cores int) {
		h := make([]float64, width) // hist[j]: output at population n-j; 0 below population 0
		h[0] = 1                    // G_part(0)/G(0) = 1
		m.stages = append(m.stages, stage{demand: demand, cores: cores, hist: h})
	}
	add(thinkTime, 0)
	for i, s := range stations {
		if i != k && s.Demand > 0 {
			add(s.Demand, s.Servers)
		}
	}
	return m
}

// advance moves the probabilities from population n-1 to n, given the
// throughputs thr[1..n] of the whole network.
func (m *multiCore) advance(n int, thr []float64) {
	x := thr[n]
	for j := len(m.p) - 1; j >= 1; j-- {
		m.p[j] = x * m.demand / float64(j) * m.p[j-1]
	}
	if m.stages == nil {
		m.p[0] = 0
		return
	}
	var in []float64 // the previous stage's history
	for i := range m.stages {
		st := &m.stages[i]
		var out float64
		switch st.cores {
		case 0: // delay: (Z^n / n!) / G(n)
			out = st.hist[0] * st.demand * x / float64(n)
		case 1: // sum_j D^j G_in(n-j) = G_in(n) + D G_out(n-1)
			out = in[0] + st.demand*x*st.hist[0]
		default:
			out = st.convolveMultiCore(n, thr, in)
		}
		if out < flush {
			out = 0
		}
		copy(st.hist[1:], st.hist[:len(st.hist)-1])
		st.hist[0] = out
		in = st.hist
	}
	m.p[0] = in[0]
	if m.p[0] == 0 {
		m.stages = nil // P(station empty) never rises again
	}
}

// convolveMultiCore is the output at population n of a stage of c > 1 cores,
// demand D: sum_j f(j) G_in(n-j), f(j) = D^j / prod_{i<=j} min(i,c), all
// scaled by G(n). Terms j < c are summed directly; the rest, geometric in j,
// are carried in tail: tail(n) = (D/c) X(n) tail(n-1) + f(c)-term of j = c.
func (st *stage) convolveMultiCore(n int, thr, in []float64) float64 {
	c := st.cores
	out := in[0]
	w := 1.0 // f(j) X(n) X(n-1) ... X(n-j+1)
	for j := 1; j <= min(c-1, n); j++ {
		w *= st.demand * thr[n-j+1] / float64(j)
		out += w * in[j]
	}
	st.tail *= st.demand / float64(c) * thr[n]
	if n >= c {
		w *= st.demand * thr[n-c+1] / float64(c)
		st.tail += w * in[c]
	}
	if st.tail < flush {
		st.tail = 0
	}
	return out + st.tail
}

// MVASaturation gives the asymptotic bounds of the closed network: the
// maximum throughput X_max = 1 / max_k(D_k / c_k), set by the station with
// the largest demand per core, and the population N* = (D + Z) * X_max,
// D = sum_k D_k, at which the two asymptotes X = N/(D+Z) (no queueing) and
// X = X_max cross: the knee of the throughput curve, where saturation starts.
// With no positive demand both are +Inf; an invalid network (see MVA) gives
// NaN for both.
func MVASaturation(stations []Station, thinkTime float64) (users float64, maxThroughput float64) {
	if validateNetwork(stations, thinkTime) != nil {
		return math.NaN(), math.NaN()
	}
	total, perCore := thinkTime, 0.0
	for _, s := range stations {
		total += s.Demand
		perCore = math.Max(perCore, s.Demand/float64(s.Servers))
	}
	if perCore == 0 {
		return math.Inf(1), math.Inf(1)
	}
	maxThroughput = 1 / perCore
	return total * maxThroughput, maxThroughput
}

// validateNetwork checks the stations and the think time.
func validateNetwork(stations []Station, thinkTime float64) error {
	if len(stations) == 0 {
		return fmt.Errorf("%w: want at least one station", ErrMVAInput)
	}
	if !(thinkTime >= 0) || math.IsInf(thinkTime, 0) {
		return fmt.Errorf("%w: thinkTime: want a finite number of seconds >= 0, got %g", ErrMVAInput, thinkTime)
	}
	for i, s := range stations {
		if !(s.Demand >= 0) || math.IsInf(s.Demand, 0) {
			return fmt.Errorf("%w: stations[%d] %q: demand: want a finite number of seconds >= 0, got %g",
				ErrMVAInput, i, s.Name, s.Demand)
		}
		if s.Servers < 1 {
			return fmt.Errorf("%w: stations[%d] %q: servers: want an integer >= 1, got %d",
				ErrMVAInput, i, s.Name, s.Servers)
		}
	}
	return nil
}
