package sim

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/duration"
)

func TestBadExperiments(t *testing.T) {
	good := func() algorithms.Experiment {
		return experiment(t, "1/2/1/2", "400-150-60", 100, time.Second, 10*time.Second)
	}
	for _, tc := range []struct {
		name   string
		change func(e *algorithms.Experiment)
		want   []string
	}{
		{"no users", func(e *algorithms.Experiment) { e.Workload.Users = 0 }, []string{"workload.users", "got 0"}},
		{"negative users", func(e *algorithms.Experiment) { e.Workload.Users = -5 }, []string{"workload.users", "-5"}},
		{"unknown role", func(e *algorithms.Experiment) { e.Deployment.Tiers[2].Role = "cache" }, []string{`"cache"`, "unknown role"}},
		{"no web threads", func(e *algorithms.Experiment) { delete(e.Allocation, "web") }, []string{`allocation["web"].threads`, "got 0"}},
		{"no app connections", func(e *algorithms.Experiment) {
			e.Allocation["app"] = algorithms.TierPools{Threads: 10}
		}, []string{`allocation["app"].connections`, "got 0"}},
		{"nil allocation", func(e *algorithms.Experiment) { e.Allocation = nil }, []string{`allocation["web"].threads`}},
		{"no replicas", func(e *algorithms.Experiment) { e.Deployment.Tiers[1].Replicas = 0 }, []string{"replicas", "got 0"}},
		{"negative cores", func(e *algorithms.Experiment) { e.Deployment.Tiers[1].Cores = -1 }, []string{"cores", "-1"}},
		{"no db", func(e *algorithms.Experiment) { e.Deployment.Tiers = e.Deployment.Tiers[:3] }, []string{`role "db"`}},
		{"two app tiers", func(e *algorithms.Experiment) { e.Deployment.Tiers[2].Role = "app" }, []string{`second tier of role "app"`}},
		{"wrong order", func(e *algorithms.Experiment) {
			ts := e.Deployment.Tiers
			ts[0], ts[1] = ts[1], ts[0]
		}, []string{`role "web" after "app"`}},
		{"no runtime", func(e *algorithms.Experiment) { e.Timing.Runtime = 0 }, []string{"runtime"}},
		{"negative ramp-up", func(e *algorithms.Experiment) { e.Timing.RampUp = -time.Second }, []string{"rampUp", "-1s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := good()
			tc.change(&e)
			_, _, err := Simulate(context.Background(), nil, e, 1)
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
			// CheckExperiment refuses it up front with Simulate's words.
			cerr := Runner{}.CheckExperiment(e)
			require.Error(t, cerr)
			assert.Equal(t, err.Error(), "simulate: "+cerr.Error())
			_, err = Runner{}.RunExperiment(context.Background(), e)
			require.Error(t, err)
		})
	}
	require.NoError(t, Runner{}.CheckExperiment(good()))

	// A broken model is an error too, not a panic.
	m := DefaultModel()
	m.Admission.Mode = "sometimes"
	_, _, err := Simulate(context.Background(), m, good(), 1)
	require.ErrorContains(t, err, "admission.mode")
	m = DefaultModel()
	m.Mix = nil
	_, _, err = Simulate(context.Background(), m, good(), 1)
	require.ErrorContains(t, err, "mix")
}

// A command discovers Runner's check through an optional interface (it
// does not know the simulator's types) and gets RunExperiment's refusal,
// without "simulate: ", before running anything.
func TestRunnerChecksAnExperiment(t *testing.T) {
	type checker interface {
		CheckExperiment(algorithms.Experiment) error
	}
	good := experiment(t, "1/2/1/2", "400-150-60", 100, time.Second, 10*time.Second)
	noConns := experiment(t, "1/2/1/2", "400-150-60", 100, time.Second, 10*time.Second)
	noConns.Allocation["app"] = algorithms.TierPools{Threads: 10}
	for _, x := range []algorithms.Experimenter{Runner{}, &Runner{Seed: 3}} {
		c, ok := x.(checker)
		require.True(t, ok, "%T", x)
		require.NoError(t, c.CheckExperiment(good))
		cerr := c.CheckExperiment(noConns)
		require.EqualError(t, cerr, `allocation["app"].connections: want a pool size >= 1, got 0`)
		_, err := x.RunExperiment(context.Background(), noConns)
		require.EqualError(t, err, "simulate: "+cerr.Error())
	}

	// The runner's own model is checked, not the default one.
	m := DefaultModel()
	m.App.Backlog = -1
	err := Runner{Model: m}.CheckExperiment(good)
	require.EqualError(t, err, `model "rubbos-ipdps2011": app.backlog: want an integer >= 0, got -1`)
}

// TestObservation checks the observation's definitions on a light load,
// where the operational laws give the figures.
func TestObservation(t *testing.T) {
	m := DefaultModel()
	o, st := trial(t, m, "1/2/1/2", "400-150-60", 1500, 20*time.Second, 120*time.Second, 7)
	require.NoError(t, o.Validate())
	names := []string{"web-1", "app-1", "app-2", "cluster-1", "db-1", "db-2"}
	require.Len(t, o.Servers, len(names))
	for i, s := range o.Servers {
		assert.Equal(t, names[i], s.Name)
	}
	assert.Equal(t, 120.0, o.RuntimeSeconds)
	assert.Equal(t, st.Pages, o.ResponseTimes.Count())
	assert.InDelta(t, float64(st.Pages)/120, o.Throughput, 1e-9)
	// Closed loop, light load: X = N / (Z + R).
	assert.InDelta(t, 1500/(7+o.ResponseTimes.Mean()), o.Throughput, 0.05*o.Throughput)
	assert.Zero(t, o.Drops)
	assert.InDelta(t, 3.22, st.QueriesPerServletPage, 0.1)

	servlet := 1 - m.Mix.shares[1] // Browse is the static page
	web := server(t, o, "web-1")
	// Every HTTP request counts at the web server: pages plus one logo per servlet page.
	assert.InDelta(t, o.Throughput*(1+servlet), web.Throughput, 0.03*web.Throughput)
	appX, appR, n := o.TierTotals("app")
	assert.Equal(t, 2, n)
	assert.InDelta(t, o.Throughput*servlet, appX, 0.03*appX)
	cl := server(t, o, "cluster-1")
	assert.InDelta(t, appX*3.22, cl.Throughput, 0.05*cl.Throughput)
	dbX, _, _ := o.TierTotals("db")
	assert.InDelta(t, cl.Throughput, dbX, 1e-6*dbX)

	// Utilisation law: U = X * D, GC included as busy.
	app1 := server(t, o, "app-1")
	gc := m.App.GC.share(150 + 60)
	assert.InDelta(t, app1.Throughput*float64(m.App.ServletDemand)*(1+gc), app1.CPU, 0.03*app1.CPU)
	assert.InDelta(t, app1.CPU*gc/(1+gc), app1.GCShare, 0.2*app1.GCShare)
	assert.InDelta(t, cl.Throughput*float64(m.Cluster.QueryDemand)*(1+m.Cluster.GC.share(120)), cl.CPU, 0.03*cl.CPU)
	assert.Zero(t, web.GCShare, "Apache has no JVM")

	// Response times: a Tomcat answers after its servlet (CPU and queries);
	// the web server's includes the Tomcat's; Little's law ties busy units.
	assert.Greater(t, appR, float64(m.App.ServletDemand)+3.22*float64(m.App.QueryDelay))
	assert.Greater(t, web.ResponseTime*web.Throughput, appR*appX)
	for _, s := range o.Servers {
		for _, p := range s.Pools {
			if p.Name == algorithms.PoolThreads && s.Tier != "web" {
				assert.InDelta(t, s.Throughput*s.ResponseTime, p.Busy, 0.02*p.Busy+1e-3, s.Name)
			}
			assert.Less(t, p.FullShare, 0.01, "%s %s: nothing binds at 1,500 users", s.Name, p.Name)
		}
	}
	// The web pool holds workers through FIN waits too.
	assert.Greater(t, web.Pools[0].Busy, web.Throughput*web.ResponseTime)
}

func TestDeterminism(t *testing.T) {
	m := DefaultModel()
	a, sa := trial(t, m, "1/4/1/4", "30-6-100", 3000, 10*time.Second, 30*time.Second, 42)
	b, sb := trial(t, m, "1/4/1/4", "30-6-100", 3000, 10*time.Second, 30*time.Second, 42)
	require.Equal(t, a, b)
	require.Equal(t, sa, sb)
	c, _ := trial(t, m, "1/4/1/4", "30-6-100", 3000, 10*time.Second, 30*time.Second, 43)
	assert.NotEqual(t, a.ResponseTimes, c.ResponseTimes)
	// Runner gives the same observation as Simulate.
	r, err := Runner{Model: m, Seed: 42}.RunExperiment(context.Background(),
		experiment(t, "1/4/1/4", "30-6-100", 3000, 10*time.Second, 30*time.Second))
	require.NoError(t, err)
	assert.Equal(t, a, r)
}

// TestStreamIndependence: each user draws its think times, pages and query
// counts from its own stream, so changing a pool (which reorders every
// event) leaves every user's sequence unchanged.
func TestStreamIndependence(t *testing.T) {
	type step struct {
		state uint8
		think float64
	}
	record := func(alloc string, webDemand duration.Seconds) map[int32][]step {
		m := DefaultModel()
		m.Web.PageDemand = webDemand
		c, err := newChain(m, experiment(t, "1/2/1/2", alloc, 2000, 5*time.Second, 40*time.Second), 5)
		require.NoError(t, err)
		seq := map[int32][]step{}
		c.onPage = func(u int32, s uint8, z float64) {
			if u%97 == 0 {
				seq[u] = append(seq[u], step{s, z})
			}
		}
		require.NoError(t, c.run(context.Background()))
		return seq
	}
	base := record("400-150-60", DefaultModel().Web.PageDemand)
	for _, other := range []map[int32][]step{record("400-6-6", DefaultModel().Web.PageDemand), record("400-150-60", duration.Seconds(1e-3))} {
		compared := 0
		for u, s := range base {
			n := min(len(s), len(other[u]))
			assert.Equal(t, s[:n], other[u][:n], "user %d", u)
			compared += n
		}
		require.Greater(t, compared, 80)
	}
}

func TestCancel(t *testing.T) {
	e := experiment(t, "1/4/1/4", "400-150-60", 7000, time.Minute, time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := Simulate(ctx, nil, e, 1)
	require.ErrorIs(t, err, context.Canceled)

	ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err = Simulate(ctx, nil, e, 1)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 2*time.Second, "a one-hour trial stops soon after cancellation")
}

// TestMemoryBoundedByUsers: a trial ten times longer allocates no more,
// but for its one-second series (series.go): 8 bytes per figure and second,
// at most twice that while its slices grow.
func TestMemoryBoundedByUsers(t *testing.T) {
	alloc := func(run time.Duration) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		trial(t, nil, "1/2/1/2", "30-6-10", 2000, 10*time.Second, run, 3)
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	alloc(10 * time.Second) // the default model, once
	short, long := alloc(60*time.Second), alloc(600*time.Second)
	t.Logf("allocated %d B for 60 s, %d B for 600 s", short, long)
	const figures = 1 + 2*2 + 2*3 + 2 + 2*2 // throughput; web, app, cluster, db servers' cpu and pools
	assert.Less(t, float64(long), 1.25*float64(short)+64<<10+2*8*figures*540)
}

func TestThreeTierAndCores(t *testing.T) {
	m := DefaultModel()
	e := experiment(t, "1/2/2", "100-20-10", 1000, 10*time.Second, 60*time.Second)
	e.Deployment.Tiers[1].Cores = 2
	o, st, err := Simulate(context.Background(), m, e, 1)
	require.NoError(t, err)
	require.NoError(t, o.Validate())
	require.Len(t, o.Servers, 5)
	assert.Equal(t, "db-2", o.Servers[4].Name)
	appX, _, _ := o.TierTotals("app")
	dbX, _, _ := o.TierTotals("db")
	assert.InDelta(t, 3.22*appX, dbX, 0.05*dbX, "the app tier queries the db directly")
	// Two cores: utilisation is per core, half of the one-core figure.
	app1 := server(t, o, "app-1")
	assert.InDelta(t, app1.Throughput*float64(m.App.ServletDemand)/2, app1.CPU, 0.05*app1.CPU)
	assert.Greater(t, st.Events, int64(0))
}

func TestAdmission(t *testing.T) {
	// A tiny web pool under heavy load: bounded admission drops and retries,
	// unbounded queues everyone.
	m := DefaultModel()
	b, sb := trial(t, m, "1/2/1/2", "10-150-60", 4000, 20*time.Second, 60*time.Second, 1)
	assert.Greater(t, b.Drops, int64(0))
	assert.Greater(t, b.Retries, int64(0))
	assert.Equal(t, b.Drops, sb.WebDrops+sb.AppDrops)
	// Retried pages wait 3 s or more.
	assert.Less(t, b.SLOSatisfaction(2.9), 1.0)

	m.Admission.Mode = AdmissionUnbounded
	u, su := trial(t, m, "1/2/1/2", "10-150-60", 4000, 20*time.Second, 60*time.Second, 1)
	assert.Zero(t, u.Drops)
	assert.Zero(t, u.Retries)
	assert.Greater(t, su.WebQueue, 0)
}

// TestFullQueryPoolIsNoBusierThanItsSize: a saturated C-JDBC's answered
// queries include time before the window; the pool's mean busy threads must
// still not pass its size (1/6/2/6 at 13,520 users once reported 180.4 of 180,
// which no journal could read back).
func TestFullQueryPoolIsNoBusierThanItsSize(t *testing.T) {
	o, _ := trial(t, DefaultModel(), "1/6/2/6", "400-150-60", 13520, time.Minute, 2*time.Minute, 1)
	require.NoError(t, o.Validate())
	for _, s := range o.Servers {
		for _, p := range s.Pools {
			assert.LessOrEqual(t, p.Busy, float64(p.Size), "%s %s", s.Name, p.Name)
		}
	}
}

// A pool full for the whole window had its share of full time summed to
// 1.0000000000000002 by rounding, which Validate refuses: validate's grid
// failed on it (1/4/1/4, 400-150-4 at 8,000 users, seed 1).
func TestFullShareIsAShare(t *testing.T) {
	e := experiment(t, "1/4/1/4", "400-150-4", 8000, 10*time.Second, 2*time.Minute)
	e.Timing.Precision, e.Timing.SLAs = 0.02, []float64{2}
	o, _, err := Simulate(t.Context(), nil, e, 1)
	require.NoError(t, err)
	require.NoError(t, o.Validate())
	for _, s := range o.Servers {
		for _, p := range s.Pools {
			assert.LessOrEqual(t, p.FullShare, 1.0, "%s %s", s.Name, p.Name)
		}
	}
}
