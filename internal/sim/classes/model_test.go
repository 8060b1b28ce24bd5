package classes

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func simulate(t *testing.T, w *Workload, seed uint64) Result {
	t.Helper()
	r, err := simulateWorkload(context.Background(), w, seed)
	require.NoError(t, err)
	return r
}

// single is a one-class workload on one pool, to build tests from.
func single(cores int, policy string, demand float64, load Load) *Workload {
	w := &Workload{
		Name:    "single",
		Server:  Server{Cores: cores, Policy: policy, Pools: []Pool{{Name: "p", Size: 1000}}},
		Classes: []Class{{Name: "a", Demand: Duration(demand), Load: load}},
		Run:     Run{WarmUp: 10, Duration: 200},
	}
	w.defaults()
	return w
}

func TestSimulateIsDeterministicPerSeed(t *testing.T) {
	w := Seed000()
	w.Run.Duration = 20
	a := simulate(t, w, 7)
	b := simulate(t, w, 7)
	assert.Equal(t, a, b)
	c := simulate(t, w, 8)
	assert.NotEqual(t, a.Class("heavy").Throughput, c.Class("heavy").Throughput)
}

// An open M/M/1 processor-sharing queue has mean response D/(1-rho).
func TestProcessorSharingMatchesMM1(t *testing.T) {
	w := single(1, policyPS, 0.01, Load{Arrivals: &Arrivals{Rate: 50}})
	w.Run.Duration = 2000
	r := simulate(t, w, 1)
	c := r.Classes[0]
	assert.InDelta(t, 0.02, c.ResponseTime, 0.02*0.05)
	assert.InDelta(t, 0.5, r.CPU, 0.02)
	assert.InDelta(t, 50, c.Throughput, 1.5)
}

// Closed CPU-bound users with no think time keep every core busy: the light
// service alone does cores/demand.
func TestClosedUsersSaturateTheCores(t *testing.T) {
	w := Seed000()
	w.Class("heavy").Load.Users = 0
	w.Run.Duration = 20
	r := simulate(t, w, 1)
	assert.InDelta(t, 4/0.0039, r.Class("light").Throughput, 4/0.0039*0.005)
	assert.InDelta(t, 1, r.CPU, 1e-6)
}

// Round robin with a quantum far below every demand shares the CPU as
// processor sharing does.
func TestRoundRobinWithSmallQuantumIsProcessorSharing(t *testing.T) {
	w := Seed000()
	w.Class("heavy").Load.Users = 10
	w.Run.Duration = 10
	ps := simulate(t, w, 1)
	w.Server.Policy, w.Server.Quantum = policyRR, 0.0005
	rr := simulate(t, w, 1)
	assert.InEpsilon(t, ps.Class("light").Throughput, rr.Class("light").Throughput, 0.03)
}

func TestSelector(t *testing.T) {
	s := newSelector(&Selector{TimeLimit: 0.8, Reactivation: 0.4, Window: 3}, 3)
	assert.Equal(t, 0, s.pick())
	s.report(0, 0.9) // past the limit: deactivated
	assert.Equal(t, 1, s.pick())
	s.report(1, 0.5)
	s.report(1, 0.95)
	assert.Equal(t, 2, s.pick())
	s.report(2, 5) // the cheapest stays active whatever it costs
	assert.Equal(t, 2, s.pick())
	s.report(2, 0.1)
	s.report(2, 0.1)
	assert.Equal(t, 2, s.pick(), "the worst of the last 3 is still 5 s")
	s.report(2, 0.1) // the 5 s call leaves the window: cost 0.1 reactivates 1
	assert.Equal(t, 1, s.pick())
	s.report(1, 0.3) // 1's history was reset, so its cost is 0.3: 0 comes back
	assert.Equal(t, 0, s.pick())
	assert.Equal(t, int64(4), s.switches)
}

// Bounded admission refuses what the backlog cannot hold; unbounded queues it.
func TestAdmission(t *testing.T) {
	w := single(1, policyPS, 0.01, Load{Arrivals: &Arrivals{Rate: 200}})
	w.Server.Pools[0] = Pool{Name: "p", Size: 5, Backlog: 10}
	w.Server.Admission = admissionBounded
	w.Run.Duration = 200
	r := simulate(t, w, 1)
	assert.InDelta(t, 100, r.HitsPerSecond, 3, "the CPU serves its capacity")
	assert.InDelta(t, 100, r.ErrorsPerSecond, 3, "the rest is refused")
	assert.Less(t, r.Classes[0].ResponseTime, 15*0.01+0.01, "at most 15 requests ahead")
	w.Server.Admission = admissionUnbounded
	r = simulate(t, w, 1)
	assert.Zero(t, r.ErrorsPerSecond)
	assert.Greater(t, r.Classes[0].ResponseTime, 5.0, "the queue grows through the run")
}

// Bursty arrivals come only in the on-part of each period.
func TestBurstsArriveOnlyWhenOn(t *testing.T) {
	w := single(1, policyPS, 0.001, Load{Arrivals: &Arrivals{Rate: 10, On: 10, Period: 70}})
	w.Run = Run{Duration: 700, Interval: 10}
	r := simulate(t, w, 1)
	assert.InEpsilon(t, 10*10*10, r.Classes[0].Sent, 0.1)
	for i, b := range r.Series {
		if i%7 != 0 {
			assert.Zero(t, b.HitsPerSecond, "bin %d is in an off-part", i)
		} else {
			assert.Positive(t, b.HitsPerSecond, "bin %d is in a burst", i)
		}
	}
}

// A slump runs the CPU at its speed: saturated throughput follows it.
func TestSlumpSlowsTheCPU(t *testing.T) {
	for _, policy := range []string{policyPS, policyRR} {
		t.Run(policy, func(t *testing.T) {
			w := single(2, policy, 0.01, Load{Users: 20})
			w.Server.Quantum = 0.005
			w.Server.Slumps = []Slump{{From: 10, To: 20, Speed: 0.25}}
			w.Run = Run{Duration: 30, Interval: 5}
			r := simulate(t, w, 1)
			assert.InEpsilon(t, 200, r.Series[1].HitsPerSecond, 0.1)
			assert.InEpsilon(t, 50, r.Series[3].HitsPerSecond, 0.1)
			assert.InEpsilon(t, 200, r.Series[5].HitsPerSecond, 0.1)
		})
	}
}

// Ramps add users every step up to the cap.
func TestRampAddsUsers(t *testing.T) {
	w := single(1, policyPS, 0.001, Load{Users: 30, ThinkTime: 1, Ramp: &Ramp{From: 10, By: 5, Every: 10}})
	w.Run = Run{Duration: 60, Interval: 10}
	r := simulate(t, w, 1)
	var users []int
	for _, b := range r.Series {
		users = append(users, b.Users)
	}
	assert.Equal(t, []int{10, 15, 20, 25, 30, 30}, users)
	assert.InEpsilon(t, 30, r.Series[5].HitsPerSecond, 0.15)
}

func TestTestdataWorkloadsRun(t *testing.T) {
	files, err := filepath.Glob("testdata/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			w, err := LoadWorkload(f)
			require.NoError(t, err)
			w.Run = Run{Duration: 5}
			r := simulate(t, w, 1)
			assert.Positive(t, r.HitsPerSecond)
		})
	}
}

func TestParseRejects(t *testing.T) {
	base := `
server: {cores: 1, pools: [{name: p, size: 1}]}
classes: [{name: a, demand: 1ms, load: {users: 1}}]
run: {duration: 1s}
`
	_, err := parse([]byte(base), "ok")
	require.NoError(t, err)
	for name, tc := range map[string]struct{ yaml, want string }{
		"unknown field": {`{server: {cores: 1, cors: 2}}`, "cors"},
		"policy":        {replace(base, "cores: 1,", "cores: 1, policy: fifo,"), "server.policy"},
		"quantum":       {replace(base, "cores: 1,", "cores: 1, policy: rr,"), "server.quantum"},
		"pool":          {replace(base, "demand: 1ms,", "demand: 1ms, pool: q,"), "classes.a.pool"},
		"demand":        {replace(base, "demand: 1ms", "demand: 0"), "classes.a.demand"},
		"costs":         {replace(base, "demand: 1ms,", "demand: 1ms, approaches: [{name: x, cost: 1}, {name: y, cost: 2}],"), "most costly to the cheapest"},
		"selector":      {replace(base, "demand: 1ms,", "demand: 1ms, selector: {timeLimit: 1s, reactivation: 2s, window: 20},"), "selector"},
		"both loads":    {replace(base, "users: 1", "users: 1, arrivals: {rate: 1}"), "not both"},
		"duration":      {replace(base, "duration: 1s", "duration: 0"), "run"},
		"slump":         {replace(base, "cores: 1,", "cores: 1, slumps: [{from: 2s, to: 1s, speed: 0.5}],"), "server.slumps[0]"},
		"adequacy":      {replace(base, "demand: 1ms,", "demand: 1ms, objective: {adequacy: 2},"), "objective.adequacy"},
		"memory alone":  {replace(base, "demand: 1ms,", "demand: 1ms, memory: 1MB,"), "needs server.memory"},
		"size":          {replace(base, "cores: 1,", "cores: 1, memory: {heap: 1TX},"), "want a size like 512MB"},
		"heap":          {replace(base, "cores: 1,", "cores: 1, memory: {heap: 0},"), "server.memory.heap"},
		"base":          {replace(base, "cores: 1,", "cores: 1, memory: {heap: 1GB, base: 2GB},"), "server.memory.base"},
		"too big":       {replace(replace(base, "cores: 1,", "cores: 1, memory: {heap: 1GB, base: 512MB},"), "demand: 1ms,", "demand: 1ms, memory: 600MB,"), "classes.a.memory"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := parse([]byte(tc.yaml), "bad.yaml")
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), "bad.yaml")
		})
	}
	_, err = LoadWorkload(filepath.Join(t.TempDir(), "missing.yaml"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func replace(s, old, new string) string { return strings.Replace(s, old, new, 1) }

// With every request always in the server (no think time), the heap holds
// base + N x memory, and the collector leaves the cores 1 / (1 + c L/(H-L)).
func TestMemorySlowsTheCPUByTheCollectorsShare(t *testing.T) {
	w := single(4, policyPS, 0.01, Load{Users: 20})
	w.Classes[0].Distribution = deterministic
	w.Classes[0].Memory = 20 << 20
	w.Server.Memory = &Memory{Heap: 1 << 30, Base: 100 << 20, GCCost: 0.2}
	require.NoError(t, w.Validate())
	r := simulate(t, w, 1)
	live := float64(100<<20 + 20*20<<20)
	speed := 1 / (1 + 0.2*live/(float64(1<<30)-live))
	assert.InEpsilon(t, 4*speed/0.01, r.Classes[0].Throughput, 0.005)
	assert.InDelta(t, 1-speed, r.GCShare, 1e-9)
	assert.Equal(t, live, r.HeapPeak)
	assert.Zero(t, r.Classes[0].OutOfMemory)

	// Without the heap section the same load runs at full speed.
	w.Server.Memory, w.Classes[0].Memory = nil, 0
	assert.InEpsilon(t, 4/0.01, simulate(t, w, 1).Classes[0].Throughput, 0.005)
}

// A request the heap cannot hold fails at once, counted as an error and as
// out of memory; the client retries after a pause, and the thread serves
// the next request.
func TestOutOfMemoryFailsTheRequest(t *testing.T) {
	w := single(1, policyPS, 0.01, Load{Users: 10})
	w.Classes[0].Memory = 300 << 20
	w.Server.Memory = &Memory{Heap: 1 << 30}
	r := simulate(t, w, 1)
	c := r.Classes[0]
	assert.Positive(t, c.OutOfMemory)
	assert.Equal(t, c.Refused, c.OutOfMemory)
	assert.Positive(t, c.Throughput)
	assert.LessOrEqual(t, r.HeapPeak, float64(1<<30))
	assert.Equal(t, float64(3*300<<20), r.HeapPeak, "three requests fit")
}
