package algorithms

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// poolBound is a one-tier app whose CPU saturates at satUsers(threads)
// users, each user keeping 0.03 jobs inside it: its thread pool is full
// (half the window) when it holds fewer than that, and then the jobs it
// reports are its size, as a full pool clips them.
type poolBound struct {
	satUsers func(threads int) float64
	// lowCPU: with more than 3 threads the CPU reads 0.9 of what it is.
	lowCPU bool
	mu     sync.Mutex
	ran    []Experiment
}

func (p *poolBound) RunExperiment(_ context.Context, e Experiment) (Observation, error) {
	p.mu.Lock()
	p.ran = append(p.ran, e)
	p.mu.Unlock()
	n := e.Allocation["app"].Threads
	u := float64(e.Workload.Users)
	cpu := math.Min(1, u/p.satUsers(n))
	if p.lowCPU && n > 3 {
		cpu *= 0.9
	}
	x := math.Min(u, p.satUsers(n)) / 7 // pages/s: 7 s of thinking
	jobs, full := 0.03*u, 0.0
	if jobs >= float64(n) {
		jobs, full = float64(n), 0.5
	}
	o := Observation{RuntimeSeconds: 60, Throughput: x, ResponseTimes: Histogram{Buckets: []Bucket{{LE: 1, Count: int64(60 * x)}}, Sum: 60 * x * jobs / x},
		Servers: []ServerObservation{{Name: "app-1", Tier: "app", CPU: cpu, Throughput: x, ResponseTime: jobs / x,
			Pools: []PoolObservation{{Name: PoolThreads, Size: n, Busy: jobs, FullShare: full}, {Name: PoolConnections, Size: 50, Busy: 1, FullShare: 0}}}}}
	return o, o.Validate()
}

func poolBoundCase(x *poolBound) (Deployment, Critical, MinJobs, Options) {
	d := Deployment{Topology: "app", Tiers: []Tier{{Name: "app", Role: RoleApp, Replicas: 1, Cores: 1, Pools: []string{PoolThreads, PoolConnections}}}}
	opts := DefaultOptions()
	opts.Timing = Timing{Runtime: time.Minute}
	opts.Step, opts.SmallStep = 20, 5
	reserve := Allocation{"app": {Threads: 3, Connections: 50}}
	c := Critical{Tier: "app", Server: "app-1", Resource: "cpu", SaturationWorkload: 120, Reserve: reserve}
	// The first reading, at 120 users with 3 threads full half the time.
	o, _ := x.RunExperiment(context.Background(), Experiment{Deployment: d, Allocation: reserve, Workload: Workload{Users: 120}, Timing: opts.Timing})
	x.ran = nil
	m := MinJobs{Reading: string(ReadAtSaturation), WLmin: 120, MinJobs: 3,
		Trials: []Trial{{Procedure: "infer-min-jobs", Experiment: Experiment{Deployment: d, Allocation: reserve, Workload: Workload{Users: 120}, Timing: opts.Timing}, Observation: o}}}
	return d, c, m, opts
}

// A pool full where minJobs was read at saturation is doubled, only it, and
// minJobs read again at the smallest workload where the CPU saturates with
// it, never where it does not (8c10f8b: the whole procedure run again read
// 2.6 jobs at half the workload on the live Go testbed, below saturation).
func TestUnboundMinJobsReadsAgainWhereTheCPUSaturates(t *testing.T) {
	x := &poolBound{satUsers: func(int) float64 { return 120 }}
	d, c, m, opts := poolBoundCase(x)
	c2, m2, err := unboundMinJobs(context.Background(), x, d, c, m, opts)
	require.NoError(t, err)
	assert.Equal(t, Allocation{"app": {Threads: 6, Connections: 50}}, c2.Reserve, "the full threads doubled, not the connections")
	// Bisected from 100 users (a step below) to 120 with 6 threads: 110
	// reads 110/120 of the CPU, 115 reads 0.958, at the threshold.
	assert.Equal(t, 115, m2.WLmin)
	assert.InDelta(t, 0.03*115, m2.MinJobs, 1e-9, "no longer clipped at 3")
	assert.Equal(t, string(ReadAtSaturation), m2.Reading)
	require.NotEmpty(t, m2.Measurements)
	assert.Len(t, m2.Trials, 5, "the first reading's trial, and 120, 100, 110 and 115 users with 6 threads")
	assert.Contains(t, m2.Warnings[0], "full where minJobs was read (3.0 jobs at 120 users with app:threads=3,connections=50)")
	for _, e := range x.ran {
		assert.Equal(t, 6, e.Allocation["app"].Threads, "every trial with the doubled pool")
	}

	// With more threads the CPU saturates earlier: read there, where it
	// is saturated, and not below.
	x = &poolBound{satUsers: func(n int) float64 { return 120 - 5*float64(n-3) }}
	d, c, m, opts = poolBoundCase(x)
	_, m2, err = unboundMinJobs(context.Background(), x, d, c, m, opts)
	require.NoError(t, err)
	assert.Equal(t, 100, m2.WLmin, "100/105 of the CPU with 6 threads: 100 saturates, 95 does not")
	assert.GreaterOrEqual(t, m2.Points[len(m2.Points)-1].CriticalUtilization, 0.95)

	// With more threads the CPU saturates later: a step up at a time.
	x = &poolBound{satUsers: func(n int) float64 { return 120 + 10*float64(n-3) }}
	d, c, m, opts = poolBoundCase(x)
	c2, m2, err = unboundMinJobs(context.Background(), x, d, c, m, opts)
	require.NoError(t, err)
	assert.Equal(t, 145, m2.WLmin, "150 users saturate 6 threads: 140 and 120 below 0.95, 160 above, then bisected to 145 (0.967)")
	assert.GreaterOrEqual(t, m2.Points[len(m2.Points)-1].CriticalUtilization, 0.95)
	assert.Equal(t, 6, c2.Reserve["app"].Threads)

	// Paper mode and a reading that is not at saturation are left alone.
	x = &poolBound{satUsers: func(int) float64 { return 120 }}
	d, c, m, opts = poolBoundCase(x)
	opts.Mode = ModePaper
	c2, m2, err = unboundMinJobs(context.Background(), x, d, c, m, opts)
	require.NoError(t, err)
	assert.Equal(t, c.Reserve, c2.Reserve)
	assert.Equal(t, m.MinJobs, m2.MinJobs)
	assert.Empty(t, x.ran)
}

// A CPU that never saturates with the doubled pool while throughput stops
// growing fails naming the workloads, rather than reading minJobs where
// the resource is not saturated.
func TestUnboundMinJobsRefusesAReadingBelowSaturation(t *testing.T) {
	x := &poolBound{satUsers: func(n int) float64 {
		if n > 3 {
			return 1e9 // never
		}
		return 120
	}}
	d, c, m, opts := poolBoundCase(x)
	_, _, err := unboundMinJobs(context.Background(), x, d, c, m, opts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cpu below 0.95")
	assert.Contains(t, err.Error(), "full where minJobs was read at 120 users")
}

// A doubled pool that serves no more than the reserve did, where the CPU
// reads below the threshold and throughput stops growing, did not bound the
// reading, which stands with a warning: on WordPress a pool read full from
// a listen queue behind idle children was doubled from 40 to 80 children,
// which served less than 40 had, with the CPU below 0.95, and recommend
// failed.
func TestUnboundMinJobsKeepsTheReadingWhenTheDoubledPoolServesNoMore(t *testing.T) {
	x := &poolBound{satUsers: func(int) float64 { return 120 }, lowCPU: true}
	d, c, m, opts := poolBoundCase(x)
	c2, m2, err := unboundMinJobs(context.Background(), x, d, c, m, opts)
	require.NoError(t, err)
	assert.Equal(t, c.Reserve, c2.Reserve, "the pool stays as it was")
	assert.Equal(t, m.MinJobs, m2.MinJobs)
	assert.Equal(t, m.WLmin, m2.WLmin)
	require.NotEmpty(t, m2.Warnings)
	assert.Contains(t, m2.Warnings[len(m2.Warnings)-1], "app-1/threads full where minJobs was read at 120 users, but doubled (app:threads=6,connections=50) it served no more")
	assert.Contains(t, m2.Warnings[len(m2.Warnings)-1], "the pool did not bound the reading, which stands")
	assert.Len(t, x.ran, 2, "120 and 140 users with 6 threads")
	assert.Equal(t, m2.Experiments, len(m2.Trials))

	// Where the doubled pool serves more (its CPU saturates at 130 users,
	// not 120), the CPU reading below the threshold stays an error: the
	// pool did bound the reading.
	x = &poolBound{satUsers: func(n int) float64 { return 120 + 10*float64(min(n, 4)-3) }, lowCPU: true}
	d, c, m, opts = poolBoundCase(x)
	_, _, err = unboundMinJobs(context.Background(), x, d, c, m, opts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "and throughput stopped growing")
}
