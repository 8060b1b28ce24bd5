package algorithms_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/topology"
)

func deployment(t *testing.T, s string) algorithms.Deployment {
	t.Helper()
	d, err := topology.ParseTopology(s)
	require.NoError(t, err)
	return d
}

func allocation(t *testing.T, s string) algorithms.Allocation {
	t.Helper()
	a, err := topology.ParseAllocation(s)
	require.NoError(t, err)
	return a
}

// Table I of the paper: measured rows at saturation -> pool sizes.
func TestCalculateMinAllocationTableI(t *testing.T) {
	cases := []struct {
		topology, critical string
		measured           []algorithms.TierMeasurement
		threadsPerServer   map[string]int
		totalThreads       map[string]int
		appConnections     int
	}{
		{
			topology: "1/2/1/2", critical: "app",
			measured: []algorithms.TierMeasurement{
				{Tier: "web", Throughput: 740, ResponseTime: 0.137},
				{Tier: "app", Throughput: 740, ResponseTime: 0.0351},
			},
			threadsPerServer: map[string]int{"web": 101, "app": 13, "cluster": 26, "db": 13},
			totalThreads:     map[string]int{"web": 101, "app": 26, "cluster": 26, "db": 26},
			appConnections:   13,
		},
		{
			topology: "1/4/1/4", critical: "cluster",
			measured: []algorithms.TierMeasurement{
				{Tier: "web", Throughput: 847, ResponseTime: 0.147},
				{Tier: "app", Throughput: 847, ResponseTime: 0.0378},
				{Tier: "cluster", Throughput: 2728, ResponseTime: 0.0082},
			},
			threadsPerServer: map[string]int{"web": 125, "app": 8, "cluster": 22, "db": 6},
			totalThreads:     map[string]int{"web": 125, "app": 32, "cluster": 22, "db": 22},
			appConnections:   8,
		},
	}
	for _, tc := range cases {
		t.Run(tc.topology, func(t *testing.T) {
			d := deployment(t, tc.topology)
			sz, err := algorithms.CalculateMinAllocation(d, tc.critical, 0, tc.measured)
			require.NoError(t, err)
			_, tiers := algorithms.RecommendAllocation(d, sz, nil)
			for _, tr := range tiers {
				assert.Equal(t, tc.threadsPerServer[tr.Name], tr.ThreadsPerServer, "threads per server of %s", tr.Name)
				assert.Equal(t, tc.totalThreads[tr.Name], tr.TotalThreads, "total threads of %s", tr.Name)
				assert.Nil(t, tr.Minimum, "size prints the formula alone")
				if tr.Name == "app" {
					require.NotNil(t, tr.ConnectionsPerServer)
					assert.Equal(t, tc.appConnections, *tr.ConnectionsPerServer)
				} else {
					assert.Nil(t, tr.ConnectionsPerServer, "%s has no connection pool", tr.Name)
				}
			}
		})
	}
}

func TestCalculateMinAllocationFormula3(t *testing.T) {
	d := deployment(t, "1/4/1/4")
	sz, err := algorithms.CalculateMinAllocation(d, "cluster", 0, []algorithms.TierMeasurement{
		{Tier: "web", Throughput: 847, ResponseTime: 0.147},
		{Tier: "app", Throughput: 847, ResponseTime: 0.0378},
		{Tier: "cluster", Throughput: 2728, ResponseTime: 0.0082},
	})
	require.NoError(t, err)
	app := sz.Tiers[1]
	assert.InDelta(t, 2728.0/847, app.ReqRatio, 1e-9, "Reqratio is the forced-flow ratio")
	assert.InDelta(t, 0.0378/0.0082, app.RTTRatio, 1e-9)
	// L_tomcat = L_cjdbc * RTTratio / Reqratio = TP_tomcat * RTT_tomcat.
	assert.InDelta(t, 847*0.0378, app.Jobs, 1e-9)
	assert.InDelta(t, 2728*0.0082, sz.MinJobs, 1e-9)
	assert.Equal(t, "front", sz.Tiers[0].Position)
	assert.Equal(t, "critical", sz.Tiers[2].Position)
	assert.Equal(t, "behind", sz.Tiers[3].Position)
}

func TestCalculateMinAllocationErrors(t *testing.T) {
	d := deployment(t, "1/4/1/4")
	_, err := algorithms.CalculateMinAllocation(d, "cache", 0, nil)
	assert.ErrorContains(t, err, `critical tier "cache" is not in the deployment (tiers: web, app, cluster, db)`)
	_, err = algorithms.CalculateMinAllocation(d, "cluster", 0, []algorithms.TierMeasurement{{Tier: "cluster", Throughput: 2728, ResponseTime: 0.0082}})
	assert.ErrorContains(t, err, `front tier "web": throughput and response time are needed`)
	_, err = algorithms.CalculateMinAllocation(d, "cluster", 0, nil)
	assert.ErrorContains(t, err, "no throughput and response time measured, and no minJobs given")
	_, err = algorithms.CalculateMinAllocation(d, "db", 0, []algorithms.TierMeasurement{{Tier: "db", Throughput: -1, ResponseTime: 1}})
	assert.ErrorContains(t, err, `tier "db": throughput: want a finite number > 0, got -1`)
	// Behind tiers need nothing measured when minJobs is given.
	sz, err := algorithms.CalculateMinAllocation(d, "web", 40, nil)
	require.NoError(t, err)
	for _, ts := range sz.Tiers {
		assert.Equal(t, 40, ts.TotalThreads)
	}
}

func TestCalculateMinAllocationRefusesBadInput(t *testing.T) {
	d := deployment(t, "1/4/1/4")
	table1 := func() []algorithms.TierMeasurement {
		return []algorithms.TierMeasurement{
			{Tier: "web", Throughput: 847, ResponseTime: 0.147},
			{Tier: "app", Throughput: 847, ResponseTime: 0.0378},
			{Tier: "cluster", Throughput: 2728, ResponseTime: 0.0082},
		}
	}
	for _, tc := range []struct {
		name    string
		minJobs float64
		edit    func([]algorithms.TierMeasurement) []algorithms.TierMeasurement
		want    string
	}{
		{"duplicate tier", 0, func(m []algorithms.TierMeasurement) []algorithms.TierMeasurement {
			return append(m, algorithms.TierMeasurement{Tier: "web", Throughput: 1, ResponseTime: 1})
		}, `tiers[0] and tiers[3] are both named "web": want one measurement per tier`},
		{"negative minJobs", -5, nil, "minJobs: want > 0, got -5"},
		{"NaN minJobs", math.NaN(), nil, "minJobs: want > 0, got NaN"},
		{"infinite minJobs", math.Inf(1), nil, "minJobs: want a finite number, got +Inf"},
		{"minJobs past int32", 3e9, nil, "minJobs = 3e+09 jobs: want a pool size of at most 2147483647"},
		{"infinite throughput", 0, func(m []algorithms.TierMeasurement) []algorithms.TierMeasurement {
			m[1].Throughput = math.Inf(1)
			return m
		}, `tier "app": throughput: want a finite number > 0, got +Inf`},
		{"NaN response time", 0, func(m []algorithms.TierMeasurement) []algorithms.TierMeasurement {
			m[0].ResponseTime = math.NaN()
			return m
		}, `tier "web": responseTime: want a finite number > 0, got NaN`},
		{"huge throughput", 0, func(m []algorithms.TierMeasurement) []algorithms.TierMeasurement {
			m[2].Throughput = 1e300
			return m
		}, `critical tier "cluster": throughput x responseTime = 8.2e+297 jobs: want a pool size of at most 2147483647`},
		{"overflowing ratio", 0, func(m []algorithms.TierMeasurement) []algorithms.TierMeasurement {
			m[2].Throughput, m[2].ResponseTime = 1e300, 1e-300
			m[0].Throughput = 1e-10
			return m
		}, `front tier "web": Reqratio to the critical tier is +Inf: want a finite ratio; check the tiers' throughput and responseTime`},
		{"front tier past int32", 0, func(m []algorithms.TierMeasurement) []algorithms.TierMeasurement {
			m[0].ResponseTime = 1e12
			return m
		}, `front tier "web": minJobs x RTTratio / Reqratio = 8.47e+14 jobs: want a pool size of at most 2147483647`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := table1()
			if tc.edit != nil {
				m = tc.edit(m)
			}
			_, err := algorithms.CalculateMinAllocation(d, "cluster", tc.minJobs, m)
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
		})
	}
}

func TestRecommendAllocationKeepsTheFrontBuffer(t *testing.T) {
	d := deployment(t, "1/4/1/4")
	sz, err := algorithms.CalculateMinAllocation(d, "cluster", 0, []algorithms.TierMeasurement{
		{Tier: "web", Throughput: 847, ResponseTime: 0.147},
		{Tier: "app", Throughput: 847, ResponseTime: 0.0378},
		{Tier: "cluster", Throughput: 2728, ResponseTime: 0.0082},
	})
	require.NoError(t, err)
	alloc, tiers := algorithms.RecommendAllocation(d, sz, allocation(t, "400-150-60"))
	got, err := topology.FormatAllocation(alloc)
	require.NoError(t, err)
	// C-JDBC's jobs are bounded by the app tier's DB connections: the pools
	// in front of them (the web pool, Tomcat's threads) keep their reserved
	// 400 and 150 (formula: 125 and 8); the connections take the formula.
	assert.Equal(t, "400-150-8", got)
	require.NotNil(t, tiers[0].Minimum)
	assert.Equal(t, 125, tiers[0].Minimum.ThreadsPerServer)
	assert.Equal(t, 400, tiers[0].TotalThreads)
	require.NotNil(t, tiers[1].Minimum)
	assert.Equal(t, 8, tiers[1].Minimum.ThreadsPerServer)
	assert.Equal(t, 600, tiers[1].TotalThreads)
	assert.Equal(t, 32, *tiers[1].TotalConnections)

	// With Tomcat's CPU critical, its threads bound the jobs: only the web
	// pool is in front.
	alloc, _ = algorithms.RecommendAllocation(d, algorithms.Sizing{Critical: "app", MinJobs: 52, Tiers: sz.Tiers}, allocation(t, "400-150-60"))
	got, err = topology.FormatAllocation(alloc)
	require.NoError(t, err)
	assert.Equal(t, "400-8-8", got)

	for _, tc := range []struct {
		critical string
		tier     int
		pool     string
	}{{"cluster", 1, "connections"}, {"db", 1, "connections"}, {"app", 1, "threads"}, {"web", 0, "threads"}} {
		i, p := algorithms.BoundingPool(d, tc.critical)
		assert.Equal(t, tc.tier, i, tc.critical)
		assert.Equal(t, tc.pool, p, tc.critical)
	}
}

func shortOptions() algorithms.Options {
	o := algorithms.DefaultOptions()
	o.Timing = algorithms.Timing{Runtime: 10 * time.Minute}
	return o
}

func TestFindCriticalResourceOnAnalyticModel(t *testing.T) {
	for _, tc := range []struct{ topology, tier string }{{"1/2/1/2", "app"}, {"1/4/1/4", "cluster"}} {
		t.Run(tc.topology, func(t *testing.T) {
			d := deployment(t, tc.topology)
			x := rubbosFake()
			c, err := algorithms.FindCriticalResource(context.Background(), x, d, allocation(t, "400-150-60"), shortOptions())
			require.NoError(t, err)
			assert.Equal(t, tc.tier, c.Tier)
			assert.Equal(t, "cpu", c.Resource)
			assert.GreaterOrEqual(t, c.Utilization, 0.95)
			assert.Equal(t, int(x.calls.Load()), c.Experiments, "every experiment is counted")
			assert.Len(t, c.Trials, c.Experiments)
			// The bound from MVA: the first step at or past saturation.
			users, _ := algorithms.MVASaturation(x.stations(d, 0), x.think)
			assert.InDelta(t, users, float64(c.SaturationWorkload), 1000)
		})
	}
}

func TestFindCriticalResourceDoublesAScarcePool(t *testing.T) {
	d := deployment(t, "1/2/1/2")
	start := allocation(t, "400-2-2")
	efficient, err := algorithms.FindCriticalResource(context.Background(), rubbosFake(), d, start, shortOptions())
	require.NoError(t, err)
	assert.Equal(t, "app", efficient.Tier)
	assert.Greater(t, efficient.Reserve["app"].Threads, 2, "the scarce pool was doubled")
	assert.Equal(t, 0, efficient.Reserve["app"].Threads%2)
	// Only the full pools (issue 39): the web tier's threads, never full, stay.
	assert.Equal(t, start["web"], efficient.Reserve["web"], "a pool that is not full is not doubled")

	// The paper doubles the whole allocation, restarting from the first step.
	paper := shortOptions()
	paper.Mode = algorithms.ModePaper
	exact, err := algorithms.FindCriticalResource(context.Background(), rubbosFake(), d, start, paper)
	require.NoError(t, err)
	assert.Equal(t, exact.Tier, efficient.Tier)
	k := exact.Reserve["app"].Threads / start["app"].Threads
	assert.Greater(t, k, 1)
	assert.Equal(t, start.Scaled(k), exact.Reserve, "the paper's doubling: every pool")
	assert.Less(t, efficient.Experiments, exact.Experiments, "fewer experiments without restarting from the first step")
}

func TestFindCriticalResourceWithoutASaturatedResource(t *testing.T) {
	d := deployment(t, "1/2/1/2")
	x := rubbosFake()
	x.hidden = 0.004 // an unmonitored bottleneck
	_, err := algorithms.FindCriticalResource(context.Background(), x, d, allocation(t, "400-150-60"), shortOptions())
	require.Error(t, err)
	assert.True(t, errors.Is(err, algorithms.ErrNoCriticalResource))
	assert.Contains(t, err.Error(), "throughput did not grow")

	// With pools that never fill, throughput simply stops growing.
	_, err = algorithms.FindCriticalResource(context.Background(), x, d, allocation(t, "100000-100000-100000"), shortOptions())
	require.Error(t, err)
	assert.True(t, errors.Is(err, algorithms.ErrNoCriticalResource))
	assert.Contains(t, err.Error(), "throughput stopped growing")
}

// A CPU-capped tier can be saturated while its mean usage stays below its
// quota (issue 25: a DB capped at 0.2 cores never read 0.95); the share of
// quota periods in which it was throttled shows the saturation.
func TestFindCriticalResourceCountsCPUThrottling(t *testing.T) {
	d := deployment(t, "1/2/1/2")
	x := rubbosFake()
	x.app, x.capped, x.quotaLoss = 0.0008, "cluster", 0.12 // the cluster is the bottleneck
	_, err := algorithms.FindCriticalResource(context.Background(), x, d, allocation(t, "400-150-60"), shortOptions())
	require.ErrorIs(t, err, algorithms.ErrNoCriticalResource, "usage alone never reaches 0.95")
	assert.Regexp(t, `busiest: cluster-1 cpu 0\.8[0-9]`, err.Error(), "the answer names what was seen")

	x.reportThrottled = true
	c, err := algorithms.FindCriticalResource(context.Background(), x, d, allocation(t, "400-150-60"), shortOptions())
	require.NoError(t, err)
	assert.Equal(t, "cluster", c.Tier)
	assert.Equal(t, "cpu", c.Resource)
	assert.GreaterOrEqual(t, c.Utilization, 0.95, "the throttled share, not the usage")
	assert.True(t, c.Throttled)
	require.NotEmpty(t, c.Warnings)
	assert.Contains(t, c.Warnings[len(c.Warnings)-1], "cluster-1 was throttled in")
	srv, ok := c.Trials[len(c.Trials)-1].Observation.Server("cluster-1")
	require.True(t, ok)
	assert.Less(t, srv.CPU, 0.95)
	// minJobs is read where the same signal crosses the threshold.
	m, err := algorithms.InferMinConcurrentJobs(context.Background(), x, d, c, shortOptions())
	require.NoError(t, err)
	assert.Equal(t, string(algorithms.ReadAtSaturation), m.Reading)
	at := m.Points[len(m.Points)-1]
	for _, p := range m.Points {
		if p.Workload == m.WLmin {
			at = p
		}
	}
	assert.GreaterOrEqual(t, at.CriticalUtilization, 0.95, "read where the throttled share crosses")
	assert.Greater(t, m.MinJobs, 1.0)

	// Without a critical resource, the throttling seen is named.
	x.hidden = 0.01
	_, err = algorithms.FindCriticalResource(context.Background(), x, d, allocation(t, "100000-100000-100000"), shortOptions())
	require.ErrorIs(t, err, algorithms.ErrNoCriticalResource)
	assert.Regexp(t, `busiest: cluster-1 cpu 0\.[0-9]+ \(throttled in 0\.[0-9]+ of its quota periods\)`, err.Error())
}

// A capped server that is the bottleneck but reads below the threshold both
// in usage and in throttling (issue 36: php-fpm at 0.94 of its quota,
// throttled in 0.90 of its periods) gets no answer at the default threshold;
// the error says which threshold would name it, and that threshold does.
func TestNoCriticalResourceNamesTheThresholdThatWouldNameIt(t *testing.T) {
	d := deployment(t, "1/2/1/2")
	x := rubbosFake()
	x.app, x.capped, x.quotaLoss, x.reportThrottled, x.throttleLoss = 0.0008, "cluster", 0.06, true, 0.10
	_, err := algorithms.FindCriticalResource(context.Background(), x, d, allocation(t, "400-150-60"), shortOptions())
	require.ErrorIs(t, err, algorithms.ErrNoCriticalResource)
	m := regexp.MustCompile(`cluster-1's cpu read ([0-9.]+) at most: if it is the bottleneck, --hw-threshold ([0-9.]+) names it`).FindStringSubmatch(err.Error())
	require.NotNil(t, m, err.Error())
	hint, err := strconv.ParseFloat(m[2], 64)
	require.NoError(t, err)
	assert.InDelta(t, 0.93, hint, 0.011, "the usage under a quota that loses 6%")

	opts := shortOptions()
	opts.HardwareThreshold = hint
	c, err := algorithms.FindCriticalResource(context.Background(), x, d, allocation(t, "400-150-60"), opts)
	require.NoError(t, err)
	assert.Equal(t, "cluster", c.Tier)

	// A busiest reading far from the threshold is no bottleneck to suggest.
	x = rubbosFake()
	x.hidden = 0.004
	_, err = algorithms.FindCriticalResource(context.Background(), x, d, allocation(t, "100000-100000-100000"), shortOptions())
	require.ErrorIs(t, err, algorithms.ErrNoCriticalResource)
	assert.NotContains(t, err.Error(), "--hw-threshold")
}

func TestFindCriticalResourceSaysTheWorkloadBoundStoppedIt(t *testing.T) {
	d := deployment(t, "1/2/1/2")
	x := rubbosFake() // saturates near 5,000 users
	opts := shortOptions()
	opts.MaxWorkload = 3000
	_, err := algorithms.FindCriticalResource(context.Background(), x, d, allocation(t, "400-150-60"), opts)
	require.Error(t, err)
	var bound *algorithms.WorkloadBoundError
	require.ErrorAs(t, err, &bound)
	assert.Equal(t, 3000, bound.MaxWorkload)
	assert.Equal(t, 3000, bound.Users, "the last step measured")
	assert.Greater(t, bound.Throughput, 400.0)
	assert.NotErrorIs(t, err, algorithms.ErrNoCriticalResource, "throughput did not stop growing")
	assert.Regexp(t, `^find-critical: reached the maximum workload of 3000 users with throughput still growing \([0-9.]+ pages/s at 3000 users\); no hardware resource saturated: raise the maximum workload$`, err.Error())
}

func TestOptionsRefuseAStepPastTheWorkloadBound(t *testing.T) {
	d := deployment(t, "1/2/1/2")
	for _, tc := range []struct {
		name string
		set  func(*algorithms.Options)
		want string
	}{
		{"step", func(o *algorithms.Options) { o.Step = 99999999999 },
			"step 99999999999 users is larger than the maximum workload 100000: want a step of at most 100000 users"},
		{"small step", func(o *algorithms.Options) { o.MaxWorkload, o.Step, o.SmallStep = 400, 100, 500 },
			"small step 500 users is larger than the maximum workload 400: want a small step of at most 400 users"},
		{"negative bound", func(o *algorithms.Options) { o.MaxWorkload = -1 },
			"maximum workload -1: want a positive number of users"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := shortOptions()
			tc.set(&opts)
			x := rubbosFake()
			_, err := algorithms.Recommend(context.Background(), x, d, allocation(t, "400-150-60"), opts)
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
			assert.Zero(t, x.calls.Load(), "refused before any experiment")
		})
	}
}

// A resource find-critical saw saturated that reads below the threshold
// when measured again, while throughput stops growing, is read where
// throughput stops growing, with a warning, and not refused (the same
// re-measurement on WordPress, in unboundMinJobs, left recommend with no
// answer: 80 php-fpm children served 14.9 pages/s at 20 and at 22 users
// with the CPU below 0.95).
func TestInferMinConcurrentJobsReadsThePeakWhenTheSaturationDoesNotHold(t *testing.T) {
	d := deployment(t, "1/2/1/2")
	opts := shortOptions()
	c, err := algorithms.FindCriticalResource(context.Background(), rubbosFake(), d, allocation(t, "400-150-60"), opts)
	require.NoError(t, err)
	require.Equal(t, "app", c.Tier)
	// Measured again, an unmonitored station caps throughput at 1/0.0015
	// pages/s, where each app server's CPU reads 0.9 (0.00135 s a page).
	x := rubbosFake()
	x.hidden = 0.0015
	c.Trials = nil
	m, err := algorithms.InferMinConcurrentJobs(context.Background(), x, d, c, opts)
	require.NoError(t, err)
	assert.Equal(t, "throughput-peak", m.Reading)
	warnings := strings.Join(m.Warnings, "\n")
	assert.Contains(t, warnings, fmt.Sprintf("where find-critical saw it saturated at %d users, and throughput stopped growing", c.SaturationWorkload))
	assert.Contains(t, warnings, "minJobs read where throughput stops growing instead")
	assert.Positive(t, m.MinJobs)
	assert.Equal(t, int(x.calls.Load()), m.Experiments, "every experiment is counted")
}

func TestInferMinConcurrentJobsAtTheWorkloadBound(t *testing.T) {
	d := deployment(t, "1/2/1/2")
	x := rubbosFake()
	opts := shortOptions()
	opts.MinJobsAt = algorithms.ReadAtKnee
	c, err := algorithms.FindCriticalResource(context.Background(), x, d, allocation(t, "400-150-60"), opts)
	require.NoError(t, err)

	// A bound inside the scan: throughput still grows where it stops.
	opts.MaxWorkload = c.SaturationWorkload - 500
	m, err := algorithms.InferMinConcurrentJobs(context.Background(), x, d, c, opts)
	require.NoError(t, err)
	assert.Contains(t, strings.Join(m.Warnings, "\n"), fmt.Sprintf("the scan reached the maximum workload of %d users with throughput still growing", opts.MaxWorkload))
	require.NotEmpty(t, m.Points)
	assert.LessOrEqual(t, m.Points[len(m.Points)-1].Workload, opts.MaxWorkload)

	// A bound below the scan's start: an error, not an empty reading.
	opts.MaxWorkload = 1000
	_, err = algorithms.InferMinConcurrentJobs(context.Background(), x, d, c, opts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "above the maximum workload of 1000 users")
}

func TestFindCriticalResourceStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	x := &cancelling{}
	_, err := algorithms.FindCriticalResource(ctx, x, deployment(t, "1/2/1/2"), allocation(t, "400-150-60"), shortOptions())
	assert.ErrorIs(t, err, context.Canceled)
}

type cancelling struct{}

func (cancelling) RunExperiment(ctx context.Context, _ algorithms.Experiment) (algorithms.Observation, error) {
	return algorithms.Observation{}, ctx.Err()
}

func TestInferMinConcurrentJobsOnAnalyticModel(t *testing.T) {
	for _, tc := range []struct {
		topology string
		reading  algorithms.MinJobsReading
	}{{"1/2/1/2", algorithms.ReadAtKnee}, {"1/4/1/4", algorithms.ReadAtKnee}, {"1/2/1/2", algorithms.ReadAtSaturation}} {
		t.Run(tc.topology+"/"+string(tc.reading), func(t *testing.T) {
			d := deployment(t, tc.topology)
			x := rubbosFake()
			opts := shortOptions()
			opts.MinJobsAt = tc.reading
			c, err := algorithms.FindCriticalResource(context.Background(), x, d, allocation(t, "400-150-60"), opts)
			require.NoError(t, err)
			m, err := algorithms.InferMinConcurrentJobs(context.Background(), x, d, c, opts)
			require.NoError(t, err)
			assert.Equal(t, string(tc.reading), m.Reading)
			users, _ := algorithms.MVASaturation(x.stations(d, 0), x.think)
			// The knee lies near the MVA saturation point N*, not deep in overload.
			// (MVA's curve bends smoothly, so the knee comes somewhat before N*.)
			assert.GreaterOrEqual(t, float64(m.WLmin), 0.7*users, "WLmin")
			assert.LessOrEqual(t, float64(m.WLmin), 1.15*users, "WLmin")
			var crit algorithms.TierMeasurement
			for _, mm := range m.Measurements {
				if mm.Tier == c.Tier {
					crit = mm
				}
			}
			if tc.reading == algorithms.ReadAtKnee {
				assert.InDelta(t, crit.Throughput*crit.ResponseTime, m.MinJobs, 1e-9, "minJobs = TP x RTT at WLmin")
			}
			// Jobs in the critical tier at the knee: more than one per server,
			// far fewer than the 150-thread pools.
			assert.Greater(t, m.MinJobs, 2.0)
			assert.Less(t, m.MinJobs, 100.0)
			assert.Equal(t, m.Experiments, len(m.Trials))
			assert.Greater(t, m.KneeThreshold, 0.0)
		})
	}
}

func TestInferMinConcurrentJobsPaperModeStartsAtOneSmallStep(t *testing.T) {
	d := deployment(t, "1/4/1/4")
	x := rubbosFake()
	opts := shortOptions()
	opts.Mode = algorithms.ModePaper
	opts.SmallStep = 250
	c, err := algorithms.FindCriticalResource(context.Background(), x, d, allocation(t, "400-150-60"), opts)
	require.NoError(t, err)
	m, err := algorithms.InferMinConcurrentJobs(context.Background(), x, d, c, opts)
	require.NoError(t, err)
	assert.Equal(t, 250, m.Points[0].Workload)
	assert.InDelta(t, opts.SLA, m.KneeThreshold, 1e-12, "paper mode measures SLO satisfaction at the SLA")
}

func TestRecommendOnAnalyticModel(t *testing.T) {
	d := deployment(t, "1/4/1/4")
	x := rubbosFake()
	rec, err := algorithms.Recommend(context.Background(), x, d, allocation(t, "400-150-60"), shortOptions())
	require.NoError(t, err)
	assert.Equal(t, "cluster", rec.Critical.Tier)
	assert.Equal(t, int(x.calls.Load()), rec.Experiments, "distinct experiments")
	assert.LessOrEqual(t, rec.Experiments, 10, "warm start and bisection")

	// The knee reading scans again over find-critical's workloads: those
	// repeats are answered from memory and not counted twice.
	knee := shortOptions()
	knee.MinJobsAt = algorithms.ReadAtKnee
	y := rubbosFake()
	rec, err = algorithms.Recommend(context.Background(), y, d, allocation(t, "400-150-60"), knee)
	require.NoError(t, err)
	assert.Equal(t, int(y.calls.Load()), rec.Experiments)
	assert.Less(t, rec.Experiments, rec.Critical.Experiments+rec.MinJobs.Experiments)
	assert.Equal(t, 400, rec.Allocation["web"].Threads, "the front buffer is kept")
	app := rec.Allocation["app"]
	assert.Equal(t, 150, app.Threads, "Tomcat's threads queue in front of the DB connections")
	assert.Less(t, app.Connections, 60, "the connections bound C-JDBC's jobs")
}

// The warm start predicts the saturation workload from one low-load trial
// and skips the steps below it, with the same answer as the plain scan.
func TestWarmStartSavesExperimentsForTheSameAnswer(t *testing.T) {
	for _, topo := range []string{"1/2/1/2", "1/4/1/4", "1/1/1/1", "2/8/1/8"} {
		t.Run(topo, func(t *testing.T) {
			d := deployment(t, topo)
			cold := shortOptions()
			cold.NoWarmStart = true
			plain, err := algorithms.FindCriticalResource(context.Background(), rubbosFake(), d, allocation(t, "400-150-60"), cold)
			require.NoError(t, err)
			warm, err := algorithms.FindCriticalResource(context.Background(), rubbosFake(), d, allocation(t, "400-150-60"), shortOptions())
			require.NoError(t, err)
			assert.Equal(t, plain.Tier, warm.Tier)
			assert.Equal(t, plain.SaturationWorkload, warm.SaturationWorkload)
			assert.Less(t, warm.Experiments, plain.Experiments)
			assert.LessOrEqual(t, warm.Experiments, 4)
			// On the analytic model the prediction is close to exact.
			assert.InDelta(t, float64(plain.SaturationWorkload), float64(warm.PredictedSaturation), float64(shortOptions().Step)*1.01)
		})
	}
}

// A prediction that overshoots walks back to the first saturating step.
func TestWarmStartOvershootWalksBack(t *testing.T) {
	d := deployment(t, "1/2/1/2")
	x := &overshooting{mvaExperimenter: rubbosFake()}
	cold := shortOptions()
	cold.NoWarmStart = true
	plain, err := algorithms.FindCriticalResource(context.Background(), &overshooting{mvaExperimenter: rubbosFake()}, d, allocation(t, "400-150-60"), cold)
	require.NoError(t, err)
	warm, err := algorithms.FindCriticalResource(context.Background(), x, d, allocation(t, "400-150-60"), shortOptions())
	require.NoError(t, err)
	assert.Greater(t, warm.PredictedSaturation, plain.SaturationWorkload+1000, "the low-load trial misleads the prediction")
	assert.Equal(t, plain.SaturationWorkload, warm.SaturationWorkload)
	// Back by bisection between the last unsaturated trial and the jump,
	// not a step at a time: on WordPress a prediction of 23 users against
	// saturation at 14 walked down nine one-user trials (153 s of a 205 s
	// walk in make test).
	steps := (warm.PredictedSaturation - plain.SaturationWorkload) / cold.Step
	walked := 0
	for _, tr := range warm.Trials {
		if u := tr.Experiment.Workload.Users; u > plain.SaturationWorkload-cold.Step && u < warm.PredictedSaturation-cold.Step {
			walked++
		}
	}
	t.Logf("prediction %d, saturation %d: %d trials between (%d steps)", warm.PredictedSaturation, warm.SaturationWorkload, walked, steps)
	assert.LessOrEqual(t, walked, bits.Len(uint(steps))+1, "a bisection's trials")
}

// overshooting under-reports CPU at low load (a cache warming up, say), so
// the prediction lands far beyond the true saturation.
type overshooting struct{ *mvaExperimenter }

func (o *overshooting) RunExperiment(ctx context.Context, e algorithms.Experiment) (algorithms.Observation, error) {
	ob, err := o.mvaExperimenter.RunExperiment(ctx, e)
	if e.Workload.Users <= 500 {
		for i := range ob.Servers {
			ob.Servers[i].CPU *= 0.6
		}
	}
	return ob, err
}

// Bisecting find-critical's bracket reads minJobs where a full small-step
// scan would, with a handful of experiments.
func TestBisectionMatchesTheFullScan(t *testing.T) {
	for _, topo := range []string{"1/2/1/2", "1/4/1/4", "1/1/1/1"} {
		t.Run(topo, func(t *testing.T) {
			d := deployment(t, topo)
			opts := shortOptions() // efficient, saturation reading
			c, err := algorithms.FindCriticalResource(context.Background(), rubbosFake(), d, allocation(t, "400-150-60"), opts)
			require.NoError(t, err)
			bis, err := algorithms.InferMinConcurrentJobs(context.Background(), rubbosFake(), d, c, opts)
			require.NoError(t, err)
			assert.Equal(t, "saturation", bis.Reading)
			assert.LessOrEqual(t, bis.Experiments, 4)

			full := opts
			full.Mode = algorithms.ModePaper // scans every small step from the first
			scan, err := algorithms.InferMinConcurrentJobs(context.Background(), rubbosFake(), d, c, full)
			require.NoError(t, err)
			assert.Equal(t, "saturation", scan.Reading)
			assert.InDelta(t, scan.WLmin, bis.WLmin, float64(opts.SmallStep))
			assert.InEpsilon(t, scan.MinJobs, bis.MinJobs, 0.15)
			assert.Greater(t, scan.Experiments, 3*bis.Experiments)
		})
	}
}

// batching reports a critical tier whose CPU per request is highest at low
// load (wake-ups, idle transitions) and falls towards the work itself as the
// server fills: measured utilisation U(1 + 0.6(1-U)) for a true U. It reads
// 0.95 at a true 0.89, before throughput stops growing.
type batching struct {
	*mvaExperimenter
	tier string
}

func (b batching) RunExperiment(ctx context.Context, e algorithms.Experiment) (algorithms.Observation, error) {
	o, err := b.mvaExperimenter.RunExperiment(ctx, e)
	for i := range o.Servers {
		if s := &o.Servers[i]; s.Tier == b.tier {
			s.CPU = math.Min(1, s.CPU*(1+0.6*(1-s.CPU)))
		}
	}
	return o, err
}

func TestSaturationReadingFallsBackToTheThroughputPeakWhenDemandFalls(t *testing.T) {
	d := deployment(t, "1/2/1/2")
	opts := shortOptions()
	ctx := context.Background()
	x := batching{rubbosFake(), "app"}
	c, err := algorithms.FindCriticalResource(ctx, x, d, allocation(t, "400-150-60"), opts)
	require.NoError(t, err)
	require.Equal(t, "app", c.Tier)

	m, err := algorithms.InferMinConcurrentJobs(ctx, x, d, c, opts)
	require.NoError(t, err)
	assert.Equal(t, "throughput-peak", m.Reading)
	assert.Contains(t, strings.Join(m.Warnings, "\n"), "app-1: CPU per request fell")
	// Read where throughput stopped growing: no scan point served more,
	// the scan went on past it, and the jobs there exceed those at the
	// early utilisation crossing.
	top := 0.0
	for _, p := range m.Points {
		top = math.Max(top, p.Throughput)
	}
	var at algorithms.ScanPoint
	for _, p := range m.Points {
		if p.Workload == m.WLmin {
			at = p
		}
	}
	assert.Equal(t, top, at.Throughput)
	assert.Greater(t, m.Points[len(m.Points)-1].Workload, m.WLmin)

	off := opts
	off.DemandDrift = -1
	trusting, err := algorithms.InferMinConcurrentJobs(ctx, x, d, c, off)
	require.NoError(t, err)
	assert.Equal(t, "saturation", trusting.Reading)
	assert.Empty(t, trusting.Warnings)
	assert.Greater(t, m.WLmin, trusting.WLmin)
	assert.Greater(t, m.MinJobs, trusting.MinJobs)

	// A server whose demand holds (the plain model) keeps the saturation reading.
	c, err = algorithms.FindCriticalResource(ctx, rubbosFake(), d, allocation(t, "400-150-60"), opts)
	require.NoError(t, err)
	plain, err := algorithms.InferMinConcurrentJobs(ctx, rubbosFake(), d, c, opts)
	require.NoError(t, err)
	assert.Equal(t, "saturation", plain.Reading)
	assert.Empty(t, plain.Warnings)
}
