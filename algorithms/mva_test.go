package algorithms

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// rubbosNetwork is the calibration of RUBBOS.md ("Calibration from Table I"):
// per-page CPU demands Apache 0.5 ms, Tomcat 2.70 ms, C-JDBC 1.18 ms, MySQL
// 0.97 ms, each tier's demand split evenly over its replicas (random load
// balancing: every replica is its own single-core station).
func rubbosNetwork(app, db int) []Station {
	st := []Station{{Name: "web-1", Demand: 0.0005, Servers: 1}}
	for i := range app {
		st = append(st, Station{Name: fmt.Sprintf("app-%d", i+1), Demand: 0.00270 / float64(app), Servers: 1})
	}
	st = append(st, Station{Name: "cluster-1", Demand: 0.00118, Servers: 1})
	for i := range db {
		st = append(st, Station{Name: fmt.Sprintf("db-%d", i+1), Demand: 0.00097 / float64(db), Servers: 1})
	}
	return st
}

func TestMVARUBBoSOracle(t *testing.T) {
	tests := []struct {
		topology   string
		app, db    int
		users      int
		throughput float64 // pages/s, RUBBOS.md
	}{
		{"1/2/1/2", 2, 2, 5800, 739.5},
		{"1/4/1/4", 4, 4, 6200, 846.2},
	}
	for _, tc := range tests {
		t.Run(tc.topology, func(t *testing.T) {
			pts, err := MVA(rubbosNetwork(tc.app, tc.db), 7, tc.users)
			require.NoError(t, err)
			require.Len(t, pts, tc.users)
			got := pts[tc.users-1]
			t.Logf("%s at %d users: X = %.2f pages/s, R = %.4f s", tc.topology, tc.users, got.Throughput, got.ResponseTime)
			assert.InEpsilon(t, tc.throughput, got.Throughput, 0.005)
			assert.InDelta(t, ResponseTimeLaw(float64(tc.users), got.Throughput, 7), got.ResponseTime, 1e-9)
		})
	}
}

// machineRepairman is the closed form of one single-server station with N
// users of think time Z: p0 = 1 / sum_{j=0}^{N} N!/(N-j)! (D/Z)^j, X = (1-p0)/D.
func machineRepairman(d, z float64, n int) (throughput float64) {
	sum, term := 1.0, 1.0
	for j := 1; j <= n; j++ {
		term *= float64(n-j+1) * d / z
		sum += term
	}
	return (1 - 1/sum) / d
}

func TestMVAMachineRepairman(t *testing.T) {
	tests := []struct {
		name     string
		demand   float64
		think    float64
		maxUsers int
	}{
		{"light", 0.1, 5, 10},
		{"balanced", 1, 1, 12},
		{"saturated", 2, 0.5, 15},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pts, err := MVA([]Station{{Name: "cpu", Demand: tc.demand, Servers: 1}}, tc.think, tc.maxUsers)
			require.NoError(t, err)
			require.Len(t, pts, tc.maxUsers)
			for n := 1; n <= tc.maxUsers; n++ {
				want := machineRepairman(tc.demand, tc.think, n)
				p := pts[n-1]
				assert.Equal(t, n, p.Users)
				assert.InEpsilon(t, want, p.Throughput, 1e-12, "n=%d", n)
				assert.InEpsilon(t, float64(n)/want-tc.think, p.ResponseTime, 1e-10, "n=%d", n)
				assert.InEpsilon(t, want*tc.demand, p.Utilization[0], 1e-12, "n=%d", n)
			}
		})
	}
}

// ctmcSolution solves the continuous-time Markov chain of N users cycling
// through a delay (think time z), a station of c cores (demand d1, rate
// min(j,c)/d1) and a single-server station (demand d2) by brute force: global
// balance over all states (n1, n2), n1+n2 <= N.
func ctmcSolution(t *testing.T, z, d1 float64, c int, d2 float64, n int) (throughput, q1, q2 float64) {
	t.Helper()
	index := map[[2]int]int{}
	var states [][2]int
	for a := 0; a <= n; a++ {
		for b := 0; a+b <= n; b++ {
			index[[2]int{a, b}] = len(states)
			states = append(states, [2]int{a, b})
		}
	}
	m := len(states)
	gen := mat.NewDense(m, m, nil) // gen[i][j]: rate from state i to j
	add := func(from [2]int, to [2]int, rate float64) {
		i, j := index[from], index[to]
		gen.Set(i, j, gen.At(i, j)+rate)
		gen.Set(i, i, gen.At(i, i)-rate)
	}
	for _, s := range states {
		a, b := s[0], s[1]
		if thinking := n - a - b; thinking > 0 {
			add(s, [2]int{a + 1, b}, float64(thinking)/z)
		}
		if a > 0 {
			add(s, [2]int{a - 1, b + 1}, float64(min(a, c))/d1)
		}
		if b > 0 {
			add(s, [2]int{a, b - 1}, 1/d2)
		}
	}
	// pi * gen = 0 with sum(pi) = 1: solve gen^T pi = 0, last equation replaced.
	lhs := mat.DenseCopyOf(gen.T())
	rhs := mat.NewVecDense(m, nil)
	for j := range m {
		lhs.Set(m-1, j, 1)
	}
	rhs.SetVec(m-1, 1)
	var pi mat.VecDense
	require.NoError(t, pi.SolveVec(lhs, rhs))
	for i, s := range states {
		if s[1] > 0 {
			throughput += pi.AtVec(i) / d2
		}
		q1 += pi.AtVec(i) * float64(s[0])
		q2 += pi.AtVec(i) * float64(s[1])
	}
	return throughput, q1, q2
}

func TestMVAMultiCoreMatchesCTMC(t *testing.T) {
	tests := []struct {
		name   string
		think  float64
		d1     float64
		cores  int
		d2     float64
		maxPop int
	}{
		{"two cores, light", 4, 0.4, 2, 0.2, 10},
		{"four cores, bottleneck", 1, 0.8, 4, 0.1, 14},
		{"eight cores, saturated", 0.2, 1.6, 8, 0.15, 16},
		{"more cores than users", 2, 0.5, 24, 0.3, 8},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			net := []Station{{Name: "multi", Demand: tc.d1, Servers: tc.cores}, {Name: "single", Demand: tc.d2, Servers: 1}}
			pts, err := MVA(net, tc.think, tc.maxPop)
			require.NoError(t, err)
			for n := 1; n <= tc.maxPop; n++ {
				x, q1, q2 := ctmcSolution(t, tc.think, tc.d1, tc.cores, tc.d2, n)
				p := pts[n-1]
				assert.InEpsilon(t, x, p.Throughput, 1e-9, "n=%d throughput", n)
				assert.InEpsilon(t, q1, p.QueueLength[0], 1e-8, "n=%d multi-core queue", n)
				assert.InEpsilon(t, q2, p.QueueLength[1], 1e-8, "n=%d single-core queue", n)
				assert.InEpsilon(t, x*tc.d1/float64(tc.cores), p.Utilization[0], 1e-9, "n=%d utilization", n)
			}
		})
	}
}

// logSumExp is log(exp(a) + exp(b)) without overflow.
func logSumExp(a, b float64) float64 {
	if math.IsInf(a, -1) {
		return b
	}
	if math.IsInf(b, -1) {
		return a
	}
	if a < b {
		a, b = b, a
	}
	return a + math.Log1p(math.Exp(b-a))
}

// convolutionReference solves the same network by Buzen's convolution
// algorithm for load-dependent stations in log space: every term is positive,
// so unlike the MVA marginal recursion it has no cancellation at all. It
// returns X(n) for n = 1..maxUsers and the mean queue of station 0 at maxUsers.
func convolutionReference(stations []Station, z float64, maxUsers int) (throughput []float64, queue0 float64) {
	logF := func(s Station) []float64 { // log f(j) = log(D^j / prod_{i<=j} min(i,c))
		f := make([]float64, maxUsers+1)
		for j := 1; j <= maxUsers; j++ {
			f[j] = f[j-1] + math.Log(s.Demand) - math.Log(float64(min(j, s.Servers)))
		}
		return f
	}
	conv := func(g, f []float64) []float64 {
		out := make([]float64, len(g))
		for n := range out {
			acc := math.Inf(-1)
			for j := 0; j <= n; j++ {
				acc = logSumExp(acc, f[j]+g[n-j])
			}
			out[n] = acc
		}
		return out
	}
	// G without station 0: the delay (f(j) = Z^j/j!) and stations 1..K-1.
	rest := make([]float64, maxUsers+1)
	for j := 1; j <= maxUsers; j++ {
		rest[j] = rest[j-1] + math.Log(z) - math.Log(float64(j))
	}
	for _, s := range stations[1:] {
		rest = conv(rest, logF(s))
	}
	f0 := logF(stations[0])
	all := conv(rest, f0)
	throughput = make([]float64, maxUsers)
	for n := 1; n <= maxUsers; n++ {
		throughput[n-1] = math.Exp(all[n-1] - all[n])
	}
	for j := 1; j <= maxUsers; j++ {
		queue0 += float64(j) * math.Exp(f0[j]+rest[maxUsers-j]-all[maxUsers])
	}
	return throughput, queue0
}

// TestMVAMultiCoreDeepSaturation runs a multi-core bottleneck hundreds of
// users past its knee, where the p_k(0|n) recursion is numerically delicate,
// and compares it with the cancellation-free convolution algorithm.
func TestMVAMultiCoreDeepSaturation(t *testing.T) {
	for _, cores := range []int{2, 3, 4, 8, 16} {
		t.Run(fmt.Sprintf("%d cores", cores), func(t *testing.T) {
			net := []Station{
				{Name: "bottleneck", Demand: 0.01 * float64(cores), Servers: cores}, // X_max = 100/s
				{Name: "second", Demand: 0.006, Servers: 1},
				{Name: "multi", Demand: 0.016, Servers: 4},
			}
			const users = 600 // N* is about 110
			pts, err := MVA(net, 1, users)
			require.NoError(t, err)
			want, q0 := convolutionReference(net, 1, users)
			for n := 1; n <= users; n++ {
				require.InEpsilon(t, want[n-1], pts[n-1].Throughput, 1e-9, "n=%d", n)
			}
			assert.InEpsilon(t, q0, pts[users-1].QueueLength[0], 1e-9)
		})
	}
}

// TestMVAMultiCoreLimits checks the two regimes of a c-core station by their
// closed forms: with up to c users each job has a core (R = D, like a
// delay), and far past saturation it behaves as one core of demand D/c
// (X -> c/D, R -> N D/c - Z).
func TestMVAMultiCoreLimits(t *testing.T) {
	tests := []struct {
		cores  int
		demand float64
	}{{2, 0.02}, {4, 0.04}, {8, 0.08}, {32, 0.32}}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%d cores", tc.cores), func(t *testing.T) {
			const think, users = 1.0, 2000 // N* = (D+Z) c/D, about 100
			multi, err := MVA([]Station{{Name: "multi", Demand: tc.demand, Servers: tc.cores}}, think, users)
			require.NoError(t, err)
			single, err := MVA([]Station{{Name: "single", Demand: tc.demand / float64(tc.cores), Servers: 1}}, think, users)
			require.NoError(t, err)

			for n := 1; n <= tc.cores; n++ { // up to c users, every job has a core of its own
				assert.InEpsilon(t, tc.demand, multi[n-1].ResponseTime, 1e-12, "n=%d", n)
			}
			hi, ref := multi[users-1], single[users-1]
			assert.InEpsilon(t, float64(tc.cores)/tc.demand, hi.Throughput, 1e-9)
			assert.InEpsilon(t, ref.ResponseTime, hi.ResponseTime, 1e-9)
			assert.InEpsilon(t, 1, hi.Utilization[0], 1e-9)
		})
	}
}

func TestMVALittlesLawEveryPoint(t *testing.T) {
	nets := map[string][]Station{
		"1/2/1/2": rubbosNetwork(2, 2),
		"mixed cores": {
			{Name: "web", Demand: 0.002, Servers: 2},
			{Name: "app", Demand: 0.012, Servers: 4},
			{Name: "db", Demand: 0.003, Servers: 1},
			{Name: "idle", Demand: 0, Servers: 8},
		},
	}
	for name, net := range nets {
		t.Run(name, func(t *testing.T) {
			pts, err := MVA(net, 7, 8000)
			require.NoError(t, err)
			prev := 0.0
			for _, p := range pts {
				sumQ, sumR := 0.0, 0.0
				for i := range net {
					sumQ += p.QueueLength[i]
					sumR += p.Residence[i]
					require.InDelta(t, LittlesLaw(p.Throughput, p.Residence[i]), p.QueueLength[i], 1e-9)
					require.True(t, p.Utilization[i] >= 0 && p.Utilization[i] <= 1, "utilization %g", p.Utilization[i])
				}
				require.InEpsilon(t, LittlesLaw(p.Throughput, p.ResponseTime), sumQ+1e-300, 1e-12, "n=%d", p.Users)
				require.InDelta(t, sumR, p.ResponseTime, 1e-12)
				require.InEpsilon(t, float64(p.Users), LittlesLaw(p.Throughput, p.ResponseTime+7), 1e-12, "n=%d: N = X (R+Z)", p.Users)
				require.GreaterOrEqual(t, p.Throughput, prev*(1-1e-12), "throughput never falls as users are added")
				prev = p.Throughput
			}
		})
	}
}

// TestMVALargePopulation runs 100,000 users through ten stations, multi-core
// ones among them: every value finite, throughput rising to X_max.
func TestMVALargePopulation(t *testing.T) {
	net := benchNetwork()
	pts, err := MVA(net, 7, 100_000)
	require.NoError(t, err)
	_, xmax := MVASaturation(net, 7)
	prev := 0.0
	for _, p := range pts {
		require.False(t, math.IsNaN(p.Throughput) || math.IsInf(p.ResponseTime, 0), "n=%d", p.Users)
		require.GreaterOrEqual(t, p.Throughput, prev*(1-1e-12), "n=%d", p.Users)
		require.LessOrEqual(t, p.Throughput, xmax*(1+1e-12), "n=%d", p.Users)
		prev = p.Throughput
	}
	assert.InEpsilon(t, xmax, pts[len(pts)-1].Throughput, 1e-9)
}

func TestMVAErrors(t *testing.T) {
	ok := []Station{{Name: "cpu", Demand: 0.01, Servers: 1}}
	tests := []struct {
		name     string
		stations []Station
		think    float64
		users    int
		want     string
	}{
		{"no users", ok, 7, 0, "maxUsers"},
		{"negative users", ok, 7, -5, "maxUsers"},
		{"negative demand", []Station{{Name: "cpu", Demand: -1, Servers: 1}}, 7, 10, "demand"},
		{"NaN demand", []Station{{Name: "cpu", Demand: math.NaN(), Servers: 1}}, 7, 10, "demand"},
		{"no cores", []Station{{Name: "cpu", Demand: 0.01, Servers: 0}}, 7, 10, "servers"},
		{"negative think time", ok, -1, 10, "thinkTime"},
		{"infinite think time", ok, math.Inf(1), 10, "thinkTime"},
		{"no stations", nil, 7, 10, "at least one station"},
		{"nothing takes time", []Station{{Name: "cpu", Servers: 1}}, 0, 10, "unbounded"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pts, err := MVA(tc.stations, tc.think, tc.users)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrMVAInput)
			assert.Contains(t, err.Error(), tc.want)
			assert.Nil(t, pts)
		})
	}
}

func TestMVASaturation(t *testing.T) {
	tests := []struct {
		name      string
		stations  []Station
		think     float64
		wantUsers float64
		wantX     float64
	}{
		// Tomcat per server 1.35 ms is the largest demand: X_max = 740.7/s,
		// N* = (0.5+2.7+1.18+0.97 ms + 7 s) * 740.7 = 5,189 users.
		{"1/2/1/2", rubbosNetwork(2, 2), 7, (0.00535 + 7) / 0.00135, 1 / 0.00135},
		// C-JDBC 1.18 ms: X_max = 847.5/s, N* = 5,937 users.
		{"1/4/1/4", rubbosNetwork(4, 4), 7, (0.00535 + 7) / 0.00118, 1 / 0.00118},
		{"per core", []Station{{Demand: 0.04, Servers: 4}, {Demand: 0.02, Servers: 1}}, 1, 1.06 / 0.02, 50},
		{"no demand", []Station{{Demand: 0, Servers: 1}}, 1, math.Inf(1), math.Inf(1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			users, x := MVASaturation(tc.stations, tc.think)
			if math.IsInf(tc.wantX, 1) {
				assert.True(t, math.IsInf(users, 1) && math.IsInf(x, 1))
				return
			}
			assert.InEpsilon(t, tc.wantUsers, users, 1e-12)
			assert.InEpsilon(t, tc.wantX, x, 1e-12)
		})
	}
	users, x := MVASaturation([]Station{{Demand: -1, Servers: 1}}, 7)
	assert.True(t, math.IsNaN(users) && math.IsNaN(x), "an invalid network has no bounds")
}

// benchNetwork is ten stations of a larger chain, three of them multi-core.
func benchNetwork() []Station {
	return []Station{
		{Name: "lb", Demand: 0.0002, Servers: 1},
		{Name: "web-1", Demand: 0.0005, Servers: 2},
		{Name: "web-2", Demand: 0.0005, Servers: 2},
		{Name: "app-1", Demand: 0.0027, Servers: 4},
		{Name: "app-2", Demand: 0.0027, Servers: 4},
		{Name: "cache", Demand: 0.0003, Servers: 1},
		{Name: "cluster-1", Demand: 0.00118, Servers: 1},
		{Name: "db-1", Demand: 0.0005, Servers: 1},
		{Name: "db-2", Demand: 0.0005, Servers: 1},
		{Name: "disk", Demand: 0.0009, Servers: 1},
	}
}

// BenchmarkMVA100k solves 1..100,000 users of ten stations: all single-core,
// and with three multi-core stations (each adds a complement convolution).
func BenchmarkMVA100k(b *testing.B) {
	mixed := benchNetwork()
	var single []Station
	for _, s := range mixed {
		single = append(single, Station{Name: s.Name, Demand: s.Demand / float64(s.Servers), Servers: 1})
	}
	for _, bc := range []struct {
		name string
		net  []Station
	}{{"single-core", single}, {"mixed-cores", mixed}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := MVA(bc.net, 7, 100_000); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
