package algorithms_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
)

// fakeWindows runs the analytic fake at each workload and labels the
// observations as windows; users says whether they carry their users.
func fakeWindows(t *testing.T, x algorithms.Experimenter, d algorithms.Deployment, alloc string, users bool, workloads ...int) []algorithms.Window {
	t.Helper()
	var ws []algorithms.Window
	for _, u := range workloads {
		o, err := x.RunExperiment(context.Background(), algorithms.Experiment{Deployment: d, Allocation: allocation(t, alloc),
			Workload: algorithms.Workload{Users: u}, Timing: shortOptions().Timing})
		require.NoError(t, err)
		w := algorithms.Window{Label: fmt.Sprintf("%d users", u), Observation: o}
		if users {
			w.Users = float64(u)
		}
		ws = append(ws, w)
	}
	return ws
}

// On the analytic fake the utilisation law holds exactly, so advise must
// find recommend's critical resource and nearly its minJobs from windows
// at 10-60% of the saturation workload alone.
func TestAdviseMatchesRecommendOnTheAnalyticModel(t *testing.T) {
	for _, tc := range []struct{ topology, tier string }{{"1/2/1/2", "app"}, {"1/4/1/4", "cluster"}} {
		t.Run(tc.topology, func(t *testing.T) {
			d := deployment(t, tc.topology)
			x := rubbosFake()
			rec, err := algorithms.Recommend(context.Background(), x, d, allocation(t, "400-150-60"), shortOptions())
			require.NoError(t, err)
			require.Equal(t, tc.tier, rec.Critical.Tier)
			sat := rec.Critical.SaturationWorkload
			var wl []int
			for pct := 10; pct <= 60; pct += 10 {
				wl = append(wl, sat*pct/100)
			}
			for _, users := range []bool{true, false} {
				adv, err := algorithms.Advise(d, fakeWindows(t, x, d, "400-150-60", users, wl...), algorithms.AdviseOptions{})
				require.NoError(t, err)
				assert.Equal(t, rec.Critical.Tier, adv.Critical.Tier)
				assert.Equal(t, "cpu", adv.Critical.Resource)
				assert.Equal(t, 0, adv.Experiments, "no experiment run")
				assert.Equal(t, 6, adv.Used)
				for _, f := range adv.Fits {
					assert.Greater(t, f.RSquared, 0.999, "%s: the fake's utilisation is linear in the load", f.Server)
					assert.InDelta(t, 0, f.Idle, 1e-9, "%s: the fake has no idle cost", f.Server)
				}
				if users {
					assert.Equal(t, "closed", adv.Model)
					assert.InDelta(t, x.think, adv.ThinkTime, 0.05, "the response time law gives the think time back")
					assert.InEpsilon(t, float64(sat), float64(adv.Critical.SaturationWorkload), 0.1)
				} else {
					assert.Equal(t, "open", adv.Model)
					assert.Zero(t, adv.Critical.SaturationWorkload, "an open model knows no users")
				}
				assert.InEpsilon(t, rec.MinJobs.MinJobs, adv.MinJobs.MinJobs, 0.25, "minJobs: recommend %.1f, advise %.1f", rec.MinJobs.MinJobs, adv.MinJobs.MinJobs)
				assert.NotEmpty(t, adv.Allocation)
			}
		})
	}
}

func TestAdviseFitsTheUtilisationLawWithIdleCost(t *testing.T) {
	d := deployment(t, "1/2/1/2")
	x := rubbosFake()
	ws := fakeWindows(t, x, d, "400-150-60", true, 500, 1000, 1500, 2000, 2500, 3000)
	// A background job keeps app-1 and app-2 5% busy whatever the traffic.
	for i := range ws {
		for j := range ws[i].Observation.Servers {
			if s := &ws[i].Observation.Servers[j]; s.Tier == "app" {
				s.CPU += 0.05
			}
		}
	}
	adv, err := algorithms.Advise(d, ws, algorithms.AdviseOptions{})
	require.NoError(t, err)
	var app algorithms.DemandFit
	for _, f := range adv.Fits {
		if f.Server == "app-1" {
			app = f
		}
	}
	assert.InDelta(t, 0.05, app.Idle, 1e-9)
	assert.InEpsilon(t, x.app/2, app.Demand, 1e-6, "each of two app servers takes half the pages")
	assert.InEpsilon(t, (0.95-0.05)/app.PerPage, app.SaturationThroughput, 1e-9)
	assert.InEpsilon(t, app.SaturationThroughput, adv.SaturationThroughput, 1e-3, "the app reaches 95% where its fit says")
}

func TestAdviseSaysWhatDataItNeeds(t *testing.T) {
	d := deployment(t, "1/2/1/2")
	x := rubbosFake()
	good := func() []algorithms.Window {
		return fakeWindows(t, x, d, "400-150-60", true, 500, 1000, 1500, 2000, 2500, 3000)
	}
	cases := []struct {
		name  string
		edit  func([]algorithms.Window) []algorithms.Window
		wants []string
	}{
		{"too few windows", func(ws []algorithms.Window) []algorithms.Window { return ws[:4] },
			[]string{"4 of 4 windows are usable", "want at least 5"}},
		{"windows dropped", func(ws []algorithms.Window) []algorithms.Window {
			ws[0].Problem = "a gap in node_cpu_seconds_total{instance=\"app-1\"}"
			ws[1].Observation.Servers = ws[1].Observation.Servers[:3]
			return ws
		}, []string{"4 of 6 windows are usable", "2 dropped, the first 500 users: a gap in node_cpu_seconds_total"}},
		{"no load variation", func([]algorithms.Window) []algorithms.Window {
			return fakeWindows(t, x, d, "400-150-60", true, 2000, 2050, 2100, 2150, 2200)
		}, []string{"no load variation", "want the busiest at least 1.5 times the quietest"}},
		{"too little load", func([]algorithms.Window) []algorithms.Window {
			return fakeWindows(t, x, d, "400-150-60", true, 100, 200, 300, 400, 500)
		}, []string{"load the critical resource, app-1 cpu, to at most 1", "want a window at 30% or more"}},
		{"idle window", func(ws []algorithms.Window) []algorithms.Window {
			ws[2].Observation.Throughput = 0
			return ws[1:]
		}, []string{"4 of 5 windows are usable", "no pages served"}},
		{"NaN", func(ws []algorithms.Window) []algorithms.Window {
			ws[3].Observation.Servers[0].CPU = math.NaN()
			return ws[2:]
		}, []string{"3 of 4 windows are usable", "observation.servers[0].cpu: want a number in [0,1], got NaN"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := algorithms.Advise(d, tc.edit(good()), algorithms.AdviseOptions{})
			require.ErrorIs(t, err, algorithms.ErrNotEnoughData)
			for _, w := range tc.wants {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestAdviseNamesFullPoolsAndFallingDemand(t *testing.T) {
	d := deployment(t, "1/2/1/2")
	x := rubbosFake()
	ws := fakeWindows(t, x, d, "400-150-60", true, 500, 1000, 1500, 2000, 2500, 3000)
	// app-1's connections were full in the busiest window; its CPU per page
	// falls with the load in the busier half.
	last := &ws[len(ws)-1].Observation
	for j := range last.Servers {
		s := &last.Servers[j]
		if s.Name != "app-1" {
			continue
		}
		for k := range s.Pools {
			if s.Pools[k].Name == "connections" {
				s.Pools[k].FullShare = 0.8
			}
		}
	}
	for i := 3; i < len(ws); i++ {
		for j := range ws[i].Observation.Servers {
			if s := &ws[i].Observation.Servers[j]; s.Name == "app-2" {
				s.CPU *= 1 - 0.12*float64(i-2)
			}
		}
	}
	adv, err := algorithms.Advise(d, ws, algorithms.AdviseOptions{})
	require.NoError(t, err)
	require.Len(t, adv.SaturatedPools, 1)
	assert.Equal(t, algorithms.SaturatedPool{Server: "app-1", Pool: "connections", Size: 60, Windows: 1, First: "3000 users"}, adv.SaturatedPools[0])
	assert.Contains(t, fmt.Sprint(adv.Critical.Warnings), "app-1 connections (size 60) was full in 1 of 6 windows, first in 3000 users")
	assert.Contains(t, fmt.Sprint(adv.Critical.Warnings), "app-2: CPU per page fell")
}

// TestAdviseTakesNoFallFromACPUAtItsCap replays WordPress's advise: the
// busier half of the windows had the php-fpm tier at its cap, where its CPU
// stays flat whatever the pages, and the drift check fitted -2.37 ms a page,
// "a fall of 102%". Windows at the threshold are left out of the slope.
func TestAdviseTakesNoFallFromACPUAtItsCap(t *testing.T) {
	d := deployment(t, "1/2/1/2")
	x := rubbosFake()
	ws := fakeWindows(t, x, d, "400-150-60", true, 500, 1000, 1500, 2000, 2500, 3000)
	for i := 3; i < len(ws); i++ {
		for j := range ws[i].Observation.Servers {
			if s := &ws[i].Observation.Servers[j]; s.Name == "app-1" {
				s.CPU = 0.995 - 0.002*float64(i) // at the cap, a little lower as pages rise
			}
		}
	}
	adv, err := algorithms.Advise(d, ws, algorithms.AdviseOptions{})
	require.NoError(t, err)
	assert.NotContains(t, fmt.Sprint(adv.Critical.Warnings), "app-1: CPU per page fell")
}

func TestAdviseOptionsAreChecked(t *testing.T) {
	d := deployment(t, "1/2/1/2")
	for _, tc := range []struct {
		opts algorithms.AdviseOptions
		want string
	}{
		{algorithms.AdviseOptions{HardwareThreshold: 1.5}, "hardware threshold 1.5"},
		{algorithms.AdviseOptions{MinUtilization: 0.96}, "minimum utilisation 0.96"},
		{algorithms.AdviseOptions{MinWindows: 2}, "minimum windows 2"},
		{algorithms.AdviseOptions{MinLoadSpread: math.Inf(1)}, "minimum load spread +Inf"},
		{algorithms.AdviseOptions{ThinkTime: math.NaN()}, "think time NaN"},
	} {
		_, err := algorithms.Advise(d, nil, tc.opts)
		require.Error(t, err)
		assert.Contains(t, err.Error(), tc.want)
	}
}

// Windows from a monitoring system without pool-size queries report sizes
// of 0: the front buffer then comes from the deployment's configured pools,
// and without those advise says the buffer is unknown.
func TestAdviseFrontBufferWithoutObservedSizes(t *testing.T) {
	d := deployment(t, "1/4/1/4")
	x := rubbosFake()
	ws := fakeWindows(t, x, d, "400-150-60", true, 650, 1300, 1950, 2600, 3250, 3900)
	for i := range ws {
		for j := range ws[i].Observation.Servers {
			s := &ws[i].Observation.Servers[j]
			for k := range s.Pools {
				s.Pools[k].Size = 0
			}
		}
	}
	adv, err := algorithms.Advise(d, ws, algorithms.AdviseOptions{Configured: allocation(t, "300-100-60")})
	require.NoError(t, err)
	require.Equal(t, "cluster", adv.Critical.Tier)
	assert.Equal(t, 300, adv.Allocation["web"].Threads, "the configured web pool is the buffer")
	assert.Equal(t, 100, adv.Allocation["app"].Threads, "and the configured app threads, in front of the connections")

	adv, err = algorithms.Advise(d, ws, algorithms.AdviseOptions{})
	require.NoError(t, err)
	assert.Less(t, adv.Allocation["web"].Threads, 300, "no buffer known: the formula")
	assert.Contains(t, fmt.Sprint(adv.Critical.Warnings), "web threads: its current size is unknown")
}

// Issue 35, item 1: windows of 1/4/1/4 advised as 1/2/1/2 answered, the
// servers the deployment lacks ignored. A window with a server that is not
// the deployment's is left out, naming it.
func TestAdviseLeavesOutWindowsOfOtherServers(t *testing.T) {
	x := rubbosFake()
	ws := fakeWindows(t, x, deployment(t, "1/4/1/4"), "400-150-60", true, 650, 1300, 1950, 2600, 3250, 3900)
	_, err := algorithms.Advise(deployment(t, "1/2/1/2"), ws, algorithms.AdviseOptions{})
	require.ErrorIs(t, err, algorithms.ErrNotEnoughData)
	assert.Contains(t, err.Error(), "0 of 6 windows are usable")
	assert.Contains(t, err.Error(), "servers app-3, app-4, db-3, db-4 are not the deployment's (1/2/1/2 has web-1, app-1, app-2, cluster-1, db-1, db-2)")

	// A server of the deployment's name in another tier is not its server.
	ws = fakeWindows(t, x, deployment(t, "1/2/1/2"), "400-150-60", true, 500, 1000, 1500, 2000, 2500, 3000)
	for i := range ws {
		ws[i].Observation.Servers[1].Tier = "db"
	}
	_, err = algorithms.Advise(deployment(t, "1/2/1/2"), ws, algorithms.AdviseOptions{})
	require.ErrorIs(t, err, algorithms.ErrNotEnoughData)
	assert.Contains(t, err.Error(), "server app-1 is in tier db, not app")
}

// Issue 35, item 3: a server whose CPU is the same in every window was
// fitted a demand of 0 and another server named critical (400-16-16 for
// 400-25-25). At or above the threshold throughout it is saturated; at 0%
// while pages are served its metric is missing or wrong. Advise says so.
func TestAdviseNamesAServerWhoseCPUDoesNotMove(t *testing.T) {
	d := deployment(t, "1/2/1/2")
	x := rubbosFake()
	for _, tc := range []struct {
		name   string
		server string
		cpu    func(i int) float64
		wants  []string
	}{
		{"saturated throughout", "db-1", func(int) float64 { return 1 },
			[]string{"db-1 cpu is at or above the hardware threshold 95% in every window (100%-100%)", "it is saturated throughout"}},
		{"saturated in every window, not constant", "app-2", func(i int) float64 { return 0.96 + 0.005*float64(i) },
			[]string{"app-2 cpu is at or above the hardware threshold 95% in every window (96%-98.5%)"}},
		{"no CPU while serving pages", "web-1", func(int) float64 { return 0 },
			[]string{"web-1 cpu reads 0% in every window while the deployment served", "its CPU metric is missing or wrong"}},
		{"a stuck CPU", "cluster-1", func(int) float64 { return 0.4 },
			[]string{"cluster-1 cpu reads 40% in every window while the deployment served", "a stuck or wrong metric"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := fakeWindows(t, x, d, "400-150-60", true, 500, 1000, 1500, 2000, 2500, 3000)
			for i := range ws {
				for j := range ws[i].Observation.Servers {
					if s := &ws[i].Observation.Servers[j]; s.Name == tc.server {
						s.CPU = tc.cpu(i)
					}
				}
			}
			adv, err := algorithms.Advise(d, ws, algorithms.AdviseOptions{})
			require.ErrorIs(t, err, algorithms.ErrNotEnoughData, "advised %s", adv.Allocation)
			for _, w := range tc.wants {
				assert.Contains(t, err.Error(), w)
			}
		})
	}

	// A resource other than CPU that a deployment never uses reads 0 throughout: no finding.
	ws := fakeWindows(t, x, d, "400-150-60", true, 500, 1000, 1500, 2000, 2500, 3000)
	for i := range ws {
		for j := range ws[i].Observation.Servers {
			ws[i].Observation.Servers[j].Resources = map[string]float64{"disk": 0}
		}
	}
	_, err := algorithms.Advise(d, ws, algorithms.AdviseOptions{})
	require.NoError(t, err)
}

// Issue 40, item 5: `advise --step 5s` refused, saying the windows had no
// throughput and response time for a tier, while its queries were there: a
// sampled busy gauge (response time = busy / throughput) read 0 in 3 of 27
// windows, and one such window disabled the tier. A tier is usable when
// enough windows have its readings; the others are left out of its time
// per page, each named with its reason.
func TestAdviseKeepsATierWhenSomeWindowsLackItsReadings(t *testing.T) {
	d := deployment(t, "1/2/1/2")
	x := rubbosFake()
	var wl []int
	for i := 0; i < 27; i++ {
		wl = append(wl, 300+100*i)
	}
	whole, err := algorithms.Advise(d, fakeWindows(t, x, d, "400-150-60", true, wl...), algorithms.AdviseOptions{})
	require.NoError(t, err)
	require.Equal(t, "app", whole.Critical.Tier)
	require.Empty(t, whole.TierGaps)

	// zero reads server's response time as 0 in window i (its busy gauge sampled 0).
	zero := func(ws []algorithms.Window, i int, servers ...string) {
		for j := range ws[i].Observation.Servers {
			if s := &ws[i].Observation.Servers[j]; slices.Contains(servers, s.Name) {
				s.ResponseTime = 0
			}
		}
	}
	ws := fakeWindows(t, x, d, "400-150-60", true, wl...)
	zero(ws, 4, "app-1", "app-2")
	zero(ws, 11, "app-1", "app-2")
	zero(ws, 19, "app-2") // one replica's reading alone: its jobs would be missed
	adv, err := algorithms.Advise(d, ws, algorithms.AdviseOptions{})
	require.NoError(t, err)
	assert.Equal(t, "app", adv.Critical.Tier)
	assert.Equal(t, 27, adv.Used, "the windows still serve every demand fit")
	assert.Empty(t, adv.Dropped)
	assert.InEpsilon(t, whole.MinJobs.MinJobs, adv.MinJobs.MinJobs, 0.02, "minJobs from the other 24 windows")
	require.Len(t, adv.TierGaps, 3)
	for k, i := range []int{4, 11, 19} {
		g := adv.TierGaps[k]
		assert.Equal(t, "app", g.Tier)
		assert.Equal(t, ws[i].Label, g.Label)
		assert.Contains(t, g.Problem, "app-2: response time 0 while its throughput is")
	}
	assert.NotContains(t, adv.TierGaps[2].Problem, "app-1")
	assert.Contains(t, fmt.Sprint(adv.Critical.Warnings), "tier app: 3 of 27 windows lack its response time and are left out of its time per page (the other 24 give it): 700 users, 1400 users, 2200 users")

	// Too few windows with the readings: the message says how many had them.
	ws = fakeWindows(t, x, d, "400-150-60", true, wl...)
	for i := 4; i < len(ws); i++ {
		zero(ws, i, "app-1", "app-2")
	}
	_, err = algorithms.Advise(d, ws, algorithms.AdviseOptions{})
	require.ErrorIs(t, err, algorithms.ErrNotEnoughData)
	assert.Contains(t, err.Error(), `tier "app": 4 of 27 windows have its throughput and response time (want at least 14: half the windows, and at least 5)`)
	assert.Contains(t, err.Error(), "(the first 700 users: app-1: response time 0 while its throughput is")

	// None: its queries are missing.
	ws = fakeWindows(t, x, d, "400-150-60", true, wl...)
	for i := range ws {
		zero(ws, i, "app-1", "app-2")
	}
	_, err = algorithms.Advise(d, ws, algorithms.AdviseOptions{})
	require.ErrorIs(t, err, algorithms.ErrNotEnoughData)
	assert.Contains(t, err.Error(), `tier "app": none of the 27 windows has a throughput and response time for it`)
	assert.Contains(t, err.Error(), "add its throughput and responseTime queries")
}
