package algorithms_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
)

// fakeRamp runs a ramp on an Experimenter: each level one experiment, as a
// runner without a ramp of its own would stand in for one.
type fakeRamp struct {
	x      algorithms.Experimenter
	ramps  int
	levels []int
	// precisions are the levels' windows' (the ramp's, or a step's).
	precisions []float64
	// goodputOnly are the levels' Timing.GoodputOnly.
	goodputOnly []bool
}

func (f *fakeRamp) RunRamp(ctx context.Context, r algorithms.Ramp, next func(algorithms.RampWindow) (algorithms.RampStep, error)) error {
	f.ramps++
	users, timing := r.From, r.Timing
	for i := 0; ; i++ {
		o, err := f.x.RunExperiment(ctx, algorithms.Experiment{Deployment: r.Deployment, Allocation: r.Allocation, Workload: algorithms.Workload{Users: users}, Timing: timing})
		if err != nil {
			return err
		}
		f.levels = append(f.levels, users)
		f.precisions = append(f.precisions, timing.Precision)
		f.goodputOnly = append(f.goodputOnly, timing.GoodputOnly)
		step, err := next(algorithms.RampWindow{Index: i, Users: users, Elapsed: 30, Observation: o})
		if err != nil || step.Users == 0 {
			return err
		}
		users, timing.Precision = step.Users, r.Timing.Precision
		if step.Precision > 0 {
			timing.Precision = step.Precision
		}
	}
}

func rampOptions() algorithms.Options {
	o := shortOptions()
	o.Timing.Precision = 0.02
	return o
}

func TestFindCriticalRampReadsTheCriticalResourceFromItsWindows(t *testing.T) {
	for _, tc := range []struct{ topology, tier string }{{"1/2/1/2", "app"}, {"1/4/1/4", "cluster"}} {
		t.Run(tc.topology, func(t *testing.T) {
			d := deployment(t, tc.topology)
			opts := rampOptions()
			stair, err := algorithms.FindCriticalResource(context.Background(), rubbosFake(), d, allocation(t, "400-150-60"), opts)
			require.NoError(t, err)
			rp := &fakeRamp{x: rubbosFake()}
			c, camp, err := algorithms.FindCriticalRamp(context.Background(), rp, d, allocation(t, "400-150-60"), opts)
			require.NoError(t, err)
			assert.Equal(t, tc.tier, c.Tier)
			assert.Equal(t, stair.Tier+"/"+stair.Resource, c.Tier+"/"+c.Resource)
			assert.Equal(t, 1, rp.ramps)
			// Small steps after the warm start's jump: the saturation
			// workload within a step of the staircase's, at most.
			assert.InDelta(t, stair.SaturationWorkload, c.SaturationWorkload, float64(opts.Step))
			require.Len(t, camp.Answer, 2)
			below, at := camp.Windows[camp.Answer[0]], camp.Windows[camp.Answer[1]]
			assert.Equal(t, c.SaturationWorkload, at.Users)
			assert.Equal(t, opts.SmallStep, at.Users-below.Users, "the answer rests on the last window below saturation and the first at it")
			assert.Len(t, c.Trials, len(camp.Windows))
			assert.Equal(t, 30*float64(len(camp.Windows)), camp.Seconds)
		})
	}
}

func TestFindCriticalRampRefusesFixedTrials(t *testing.T) {
	_, _, err := algorithms.FindCriticalRamp(context.Background(), &fakeRamp{x: rubbosFake()}, deployment(t, "1/2/1/2"), allocation(t, "400-150-60"), shortOptions())
	require.ErrorContains(t, err, "want adaptive timing")
}

// A scarce pool is doubled alone, and the ramp goes on from the workload
// where it filled; the answer is the generous start's.
func TestRampDoublesOnlyTheFullPool(t *testing.T) {
	d := deployment(t, "1/2/1/2")
	rp := &fakeRamp{x: rubbosFake()}
	c, camp, err := algorithms.FindCriticalRamp(context.Background(), rp, d, allocation(t, "400-2-2"), rampOptions())
	require.NoError(t, err)
	assert.Equal(t, "app", c.Tier)
	assert.Equal(t, 400, c.Reserve["web"].Threads, "the web threads were never full")
	assert.Greater(t, c.Reserve["app"].Threads, 2)
	assert.Greater(t, camp.Ramps, 1)
	for i := 1; i < len(camp.Windows); i++ {
		if camp.Windows[i].Allocation != camp.Windows[i-1].Allocation {
			assert.LessOrEqual(t, camp.Windows[i].Users, camp.Windows[i-1].Users, "a new ramp goes on from where the pool filled, not from the start")
		}
	}
	generous, _, err := algorithms.FindCriticalRamp(context.Background(), &fakeRamp{x: rubbosFake()}, d, allocation(t, "400-150-60"), rampOptions())
	require.NoError(t, err)
	assert.Equal(t, generous.Tier+"/"+generous.Resource, c.Tier+"/"+c.Resource)
}

// Issue 39: the ramp rose by the simulator's 100 users a level from the
// simulator's 500, on any deployment: on a stack that saturates near 30
// users its first window was already saturated and it answered 500, past
// the runner's maximum. Its steps come from where the staircase's do: its
// own first low-load windows predict the saturation, the rise per level is
// the small step (a fifth of a step of an eleventh of the prediction), and
// no level passes the maximum workload.
func TestRampDerivesItsStepsOnASmallDeployment(t *testing.T) {
	d := deployment(t, "1/1/1/1")
	x := smallFake()
	truth := 0
	pts, err := algorithms.MVA(x.stations(d, 0), x.think, 200)
	require.NoError(t, err)
	for _, p := range pts {
		if p.Utilization[1] >= 0.95 {
			truth = p.Users
			break
		}
	}
	require.Positive(t, truth)

	opts := rampOptions()
	opts.MaxWorkload = 2 * truth // a runner's maxUsers of tens of users
	opts.DeriveSteps = algorithms.StepsToDerive{Step: true, SmallStep: true, ScanSpan: true}
	var told []algorithms.Steps
	opts.OnSteps = func(s algorithms.Steps) { told = append(told, s) }
	stair, err := algorithms.FindCriticalResource(context.Background(), smallFake(), d, allocation(t, "400-150-60"), opts)
	require.NoError(t, err)
	require.NotNil(t, stair.Steps)
	told = nil

	rp := &fakeRamp{x: smallFake()}
	c, camp, err := algorithms.FindCriticalRamp(context.Background(), rp, d, allocation(t, "400-150-60"), opts)
	require.NoError(t, err)
	require.NotNil(t, c.Steps, "the ramp says which steps it used")
	require.Len(t, told, 1)
	st := *c.Steps
	assert.Equal(t, st, told[0])
	assert.Equal(t, stair.Steps.PredictedSaturation, st.PredictedSaturation, "the same prediction from the same low loads")
	assert.Equal(t, stair.Steps.FirstTrials, st.FirstTrials)
	assert.Equal(t, stair.Steps.Step, st.Step)
	assert.Equal(t, stair.Steps.SmallStep, st.SmallStep)
	assert.Contains(t, st.From, "derived from the ramp's first windows at 1 user and one at ")
	assert.Equal(t, 1, camp.Windows[0].Users, "the first window is the low-load one")
	for _, w := range camp.Windows {
		assert.LessOrEqual(t, w.Users, opts.MaxWorkload, "no level past the maximum workload")
	}
	assert.Equal(t, "app/cpu", c.Tier+"/"+c.Resource)
	assert.GreaterOrEqual(t, c.SaturationWorkload, truth)
	assert.LessOrEqual(t, c.SaturationWorkload, truth+st.SmallStep, "within a small step of where the CPU reaches the threshold, not a 100-user level past it")
	require.Len(t, camp.Answer, 2)
	below, at := camp.Windows[camp.Answer[0]], camp.Windows[camp.Answer[1]]
	assert.Equal(t, st.SmallStep, at.Users-below.Users, "the ramp rises by the small step")
	assert.LessOrEqual(t, len(camp.Windows), 15)

	// A step given is kept and the small step follows it, without a first window at one user.
	given := opts
	given.Step, given.DeriveSteps = 10, algorithms.StepsToDerive{SmallStep: true, ScanSpan: true}
	c, camp, err = algorithms.FindCriticalRamp(context.Background(), &fakeRamp{x: smallFake()}, d, allocation(t, "400-150-60"), given)
	require.NoError(t, err)
	require.NotNil(t, c.Steps)
	assert.Equal(t, algorithms.Steps{Step: 10, SmallStep: 2, ScanSpan: 30,
		From: "--step given; the small step 1/5 of the step and the scan span 3 steps (the simulator's ratios)"}, *c.Steps)
	assert.Equal(t, 10, camp.Windows[0].Users)
	assert.LessOrEqual(t, c.SaturationWorkload, truth+2)

	// No CPU reading: nothing to predict from, as for the staircase.
	_, _, err = algorithms.FindCriticalRamp(context.Background(), &fakeRamp{x: noCPU{smallFake()}}, d, allocation(t, "400-150-60"), opts)
	require.ErrorIs(t, err, algorithms.ErrStepsNotDerived)
	assert.ErrorContains(t, err, "from a window at 1 user: no server reported CPU use at 1 users")
}

// Issue 39: "the answer must not depend on where the campaign starts". From
// an under-allocated start (two app threads and two connections, full long
// before the CPU saturates) and a generous one, the ramp names the same
// critical resource at saturation workloads no further apart than the
// staircase's, or its small step. On the small stack the staircase from two
// threads gives up (the threads stay full after a doubling and throughput
// does not grow past the step), where the ramp doubles them at the level
// they filled and goes on.
func TestRampAnswerDoesNotDependOnTheStart(t *testing.T) {
	for _, tc := range []struct {
		name   string
		x      func() *mvaExperimenter
		topo   string
		derive bool
	}{{"small stack, derived steps", smallFake, "1/1/1/1", true}, {"RUBBoS, the simulator's steps", rubbosFake, "1/2/1/2", false}} {
		t.Run(tc.name, func(t *testing.T) {
			d := deployment(t, tc.topo)
			opts := rampOptions()
			if tc.derive {
				opts.DeriveSteps = algorithms.StepsToDerive{Step: true, SmallStep: true, ScanSpan: true}
			}
			stair, ramp := map[string]int{}, map[string]int{}
			small, stairOK := opts.SmallStep, true
			for _, start := range []string{"400-2-2", "400-150-60"} {
				c, _, err := algorithms.FindCriticalRamp(context.Background(), &fakeRamp{x: tc.x()}, d, allocation(t, start), opts)
				require.NoError(t, err, start)
				ramp[start] = c.SaturationWorkload
				assert.Equal(t, "app/cpu", c.Tier+"/"+c.Resource, start)
				if c.Steps != nil {
					small = c.Steps.SmallStep
				}
				s, err := algorithms.FindCriticalResource(context.Background(), tc.x(), d, allocation(t, start), opts)
				if err != nil {
					stairOK = false
					continue
				}
				assert.Equal(t, s.Tier+"/"+s.Resource, c.Tier+"/"+c.Resource, start)
				stair[start] = s.SaturationWorkload
			}
			bound := small
			if stairOK {
				bound = max(bound, abs(stair["400-2-2"]-stair["400-150-60"]))
			}
			assert.LessOrEqual(t, abs(ramp["400-2-2"]-ramp["400-150-60"]), bound, "ramp %v, staircase %v", ramp, stair)
		})
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// Issue 39: on the simulator's 1/6/2/6 seed 2 the ramp's small steps read
// no rise within the noise for three windows while cluster-2's CPU was
// still at 0.93, and the ramp ended with "no saturated hardware resource"
// where both staircases answered. As find-critical does (plateauProbe),
// the plateau is confirmed well past it: a resource saturated there sends
// a new ramp up from the flat level, which does not stop below the probe.
func TestRampConfirmsAPlateauBelowTheThreshold(t *testing.T) {
	d := deployment(t, "1/2/1/2")
	start := allocation(t, "400-150-60")
	opts := rampOptions()
	clean, cleanCamp, err := algorithms.FindCriticalRamp(context.Background(), &fakeRamp{x: rubbosFake()}, d, start, opts)
	require.NoError(t, err)
	ss := opts.SmallStep
	// The three levels below saturation read the throughput of the level
	// before them: flat, with the busiest CPU under 0.95.
	flatFrom := clean.SaturationWorkload - 3*ss
	levels := map[int]bool{}
	for _, w := range cleanCamp.Windows {
		levels[w.Users] = true
	}
	require.True(t, levels[flatFrom-ss], "the clean ramp has a level before the flat ones: %v", cleanCamp.Windows)
	x := rubbosFake()
	var before float64
	var probed []int
	flat := experimenterFunc(func(ctx context.Context, e algorithms.Experiment) (algorithms.Observation, error) {
		o, err := x.RunExperiment(ctx, e)
		if err != nil {
			return o, err
		}
		switch u := e.Workload.Users; {
		case u == flatFrom-ss:
			before = o.Throughput
		case u >= flatFrom && u < clean.SaturationWorkload:
			require.Positive(t, before)
			o.Throughput = 0.99 * before
		case u > clean.SaturationWorkload:
			probed = append(probed, u)
		}
		return o, nil
	})
	rp := &fakeRamp{x: flat}
	c, camp, err := algorithms.FindCriticalRamp(context.Background(), rp, d, start, opts)
	require.NoError(t, err, "a plateau below the threshold is confirmed past it before giving up")
	assert.Equal(t, clean.Tier+"/"+clean.Resource, c.Tier+"/"+c.Resource)
	assert.Equal(t, clean.SaturationWorkload, c.SaturationWorkload, "the first saturating level, ramped to again from the flat one")
	require.NotEmpty(t, probed)
	assert.GreaterOrEqual(t, probed[0], clean.SaturationWorkload+clean.SaturationWorkload/4-ss, "the probe is well past the plateau")
	assert.Equal(t, 2, camp.Ramps, "one more ramp after the probe")
	for i, u := range rp.levels {
		if u == probed[0] {
			assert.Equal(t, 2.5*opts.Timing.Precision, rp.precisions[i], "the probe decides a rise of a quarter more load: measured looser")
		}
	}
	require.Len(t, camp.Answer, 2)
	assert.Equal(t, ss, camp.Windows[camp.Answer[1]].Users-camp.Windows[camp.Answer[0]].Users)
	require.NotEmpty(t, c.Warnings)
	assert.Contains(t, c.Warnings[0], "did not rise")

	// A plateau that the probe confirms still ends the ramp: throughput
	// that no level grows past, nothing saturated.
	hidden := rubbosFake()
	hidden.hidden = 0.003
	_, _, err = algorithms.FindCriticalRamp(context.Background(), &fakeRamp{x: hidden}, d, start, opts)
	require.ErrorIs(t, err, algorithms.ErrNoCriticalResource)
}

// Issue 39: on the simulator's 1/1/1/1 the ramp read minJobs 34-37 where
// the staircases read 24-25. Not a late read (a trial of its own at the
// ramp's 2,800 users reads 34 too) but the level: the first window at the
// threshold can lie a small step past where the CPU reaches it, and near
// a small stack's saturation the critical tier's jobs climb steeply over
// that step (100 users there: 0.944 -> 0.974 of the CPU, 20 -> 37 jobs).
// minJobs is read where the critical resource reaches the threshold,
// between the last window below it and the first at it.
func TestRecommendRampReadsMinJobsAtTheThreshold(t *testing.T) {
	d := deployment(t, "1/1/1/1")
	opts := rampOptions()
	x := rubbosFake()
	x.think = 7.1 // the threshold a fifth of a small step past a level
	rec, camp, err := algorithms.RecommendRamp(context.Background(), &fakeRamp{x: x}, x, d, allocation(t, "400-150-60"), opts)
	require.NoError(t, err)
	require.Len(t, camp.Answer, 2)
	below, at := camp.Windows[camp.Answer[0]], camp.Windows[camp.Answer[1]]
	require.Equal(t, opts.SmallStep, at.Users-below.Users)

	// The truth, user by user between the two windows: the critical tier's
	// jobs at the first workload whose CPU reaches the threshold.
	jobs := func(users int) (float64, float64) {
		o, err := x.RunExperiment(context.Background(), algorithms.Experiment{Deployment: d, Allocation: rec.Critical.Reserve,
			Workload: algorithms.Workload{Users: users}, Timing: opts.Timing})
		require.NoError(t, err)
		tp, rt, _ := o.TierTotals("app")
		return o.Servers[1].CPU, tp * rt
	}
	truth := 0.0
	for u := below.Users; u <= at.Users; u++ {
		if cpu, l := jobs(u); cpu >= opts.HardwareThreshold {
			truth = l
			break
		}
	}
	require.Positive(t, truth)
	_, past := jobs(at.Users)
	require.Greater(t, past, 1.4*truth, "the setting: the window at the threshold reads far more jobs than the threshold holds")

	assert.InDelta(t, truth, rec.MinJobs.MinJobs, 0.1*truth, "minJobs where the CPU reaches %.2f, not a small step past it (%.1f)", opts.HardwareThreshold, past)
	assert.InDelta(t, past, camp.RampMinJobs, 1e-9, "the saturating window's own reading is kept beside it")
	assert.Greater(t, rec.MinJobs.WLmin, below.Users)
	assert.LessOrEqual(t, rec.MinJobs.WLmin, at.Users)
	var crit algorithms.TierMeasurement
	for _, m := range rec.MinJobs.Measurements {
		if m.Tier == "app" {
			crit = m
		}
	}
	assert.InDelta(t, rec.MinJobs.MinJobs, crit.Throughput*crit.ResponseTime, 1e-9, "the printed X x R is minJobs")
	require.NotNil(t, camp.RecommendedGoodput, "the confirming trial ran, at the saturating window's workload")
}

// Issue 39: a pool full in a twentieth of the window where the critical
// CPU saturates bounds what minJobs can read, and the ramp doubles it and
// ramps again; but minJobs is read where the CPU reaches the threshold,
// and the pool is judged there too, its full share taken as minJobs is,
// between the window below and the one at the threshold. On the
// simulator's 1/1/1/1 the 60 connections were full in 0.11-0.12 of the
// window a small step past the threshold and 0.006-0.014 of the one below
// it: the doubling and the second ramp (about 1,000 simulated seconds)
// moved minJobs from 23.1 to 24.1 and from 22.9 to 22.6.
func TestRampJudgesABoundingPoolWhereMinJobsIsRead(t *testing.T) {
	d := deployment(t, "1/1/1/1")
	opts := rampOptions()
	run := func(belowShare, atShare float64) (algorithms.Critical, algorithms.RampCampaign) {
		x := rubbosFake()
		x.think = 7.1 // the threshold a fifth of a small step past a level
		clean, _, err := algorithms.FindCriticalRamp(context.Background(), &fakeRamp{x: x}, d, allocation(t, "400-150-60"), opts)
		require.NoError(t, err)
		full := experimenterFunc(func(ctx context.Context, e algorithms.Experiment) (algorithms.Observation, error) {
			o, err := x.RunExperiment(ctx, e)
			if err != nil || e.Allocation["app"].Connections != 60 {
				return o, err
			}
			share := 0.0
			switch u := e.Workload.Users; {
			case u >= clean.SaturationWorkload:
				share = atShare
			case u == clean.SaturationWorkload-opts.SmallStep:
				share = belowShare
			}
			for i := range o.Servers {
				for j := range o.Servers[i].Pools {
					if o.Servers[i].Tier == "app" && o.Servers[i].Pools[j].Name == algorithms.PoolConnections {
						o.Servers[i].Pools[j].FullShare = share
					}
				}
			}
			return o, nil
		})
		c, camp, err := algorithms.FindCriticalRamp(context.Background(), &fakeRamp{x: full}, d, allocation(t, "400-150-60"), opts)
		require.NoError(t, err)
		return c, camp
	}
	// Full in GC pauses a small step past the threshold, hardly below it.
	c, camp := run(0.01, 0.12)
	assert.Equal(t, 1, camp.Ramps, "not full where the CPU reaches the threshold: no doubling, no second ramp")
	assert.Equal(t, 60, c.Reserve["app"].Connections)
	assert.Equal(t, "app/cpu", c.Tier+"/"+c.Resource)

	// Full where the threshold lies: doubled, and ramped again.
	c, camp = run(0.1, 0.3)
	assert.Equal(t, 2, camp.Ramps)
	assert.Equal(t, 120, c.Reserve["app"].Connections)
}

// The windows that decide nothing to the campaign's precision are measured
// looser (2.5 times it): the low-load window that only predicts where the
// ramp jumps; every other window, a new ramp's first too, to the
// campaign's. On the simulator the window at 500 users took 100-330 s of
// a ramp's 400-1,700.
func TestRampMeasuresItsPredictingWindowLooser(t *testing.T) {
	opts := rampOptions()
	for _, tc := range []struct {
		name, topo, start string
		derive            bool
	}{{"warm start", "1/2/1/2", "400-150-60", false}, {"derived steps", "1/1/1/1", "400-150-60", true}, {"a doubling", "1/2/1/2", "400-2-2", false}} {
		t.Run(tc.name, func(t *testing.T) {
			o := opts
			x := rubbosFake()
			if tc.derive {
				x = smallFake()
				o.MaxWorkload = 200
				o.DeriveSteps = algorithms.StepsToDerive{Step: true, SmallStep: true, ScanSpan: true}
			}
			rp := &fakeRamp{x: x}
			c, camp, err := algorithms.FindCriticalRamp(context.Background(), rp, deployment(t, tc.topo), allocation(t, tc.start), o)
			require.NoError(t, err)
			require.Len(t, rp.precisions, len(camp.Windows))
			predicting := 1
			if c.Steps != nil {
				predicting = len(c.Steps.FirstTrials)
			}
			for i, p := range rp.precisions {
				want := o.Timing.Precision
				if i < predicting {
					want = 2.5 * o.Timing.Precision
				}
				assert.Equal(t, want, p, "window %d at %d users on %s", i, camp.Windows[i].Users, camp.Windows[i].Allocation)
			}
		})
	}
}

// Issue 39 on the live Go testbed: the app's CPU per page falls as load
// rises, so its CPU crosses 0.95 well before throughput stops growing; the
// ramp read minJobs 3.8 there (100-4-4, 0.22-0.73 of the staircases'
// 100-20-20, which read the throughput peak). The ramp checks the
// utilisation law as the staircase does and, when the CPU per request
// fell, ramps on past saturation and reads minJobs at the throughput peak,
// naming those windows.
func TestRecommendRampReadsThePeakWhenTheDemandFalls(t *testing.T) {
	d := deployment(t, "1/2/1/2")
	ctx := context.Background()
	opts := rampOptions()
	x := batching{rubbosFake(), "app"}

	off := opts
	off.DemandDrift = -1
	trusting, trustingCamp, err := algorithms.RecommendRamp(ctx, &fakeRamp{x: x}, x, d, allocation(t, "400-150-60"), off)
	require.NoError(t, err)
	require.Equal(t, "saturation", trusting.MinJobs.Reading, "without the check: read where the CPU crosses the threshold")
	assert.Empty(t, trustingCamp.Peak)

	fr := &fakeRamp{x: x}
	rec, camp, err := algorithms.RecommendRamp(ctx, fr, x, d, allocation(t, "400-150-60"), opts)
	require.NoError(t, err)
	assert.Equal(t, "throughput-peak", rec.MinJobs.Reading)
	assert.Contains(t, strings.Join(rec.MinJobs.Warnings, "\n"), "app-1: CPU per request fell")
	require.NotEmpty(t, camp.Peak, "the windows past saturation are named")
	// Read at the highest throughput of the reserve's windows, past the
	// crossing, and more jobs than there.
	top := 0.0
	for _, p := range rec.MinJobs.Points {
		top = math.Max(top, p.Throughput)
	}
	var read algorithms.ScanPoint
	for _, p := range rec.MinJobs.Points {
		if p.Workload == rec.MinJobs.WLmin {
			read = p
		}
	}
	assert.Equal(t, top, read.Throughput, "read at the windows' peak")
	assert.Greater(t, rec.MinJobs.WLmin, trusting.MinJobs.WLmin)
	assert.Greater(t, rec.MinJobs.MinJobs, 1.2*trusting.MinJobs.MinJobs)
	assert.InDelta(t, rec.MinJobs.MinJobs, camp.RampMinJobs, 1e-9)
	// The scan ended on rampFlatWindows windows that did not grow.
	last := camp.Windows[camp.Peak[len(camp.Peak)-1]]
	assert.Greater(t, last.Users, rec.MinJobs.WLmin)
	require.Len(t, fr.goodputOnly, len(camp.Windows))
	// Every pool of the fake fills past saturation, so those full at the
	// peak are doubled and ramped again from there; the peak does not move,
	// and the reading stays on the reserve.
	peak := map[int]bool{}
	doubled := 0
	for _, i := range camp.Peak {
		peak[i] = true
		if camp.Windows[i].Allocation != rec.Critical.Reserve.String() {
			doubled++
			assert.GreaterOrEqual(t, camp.Windows[i].Users, rec.MinJobs.WLmin, "the doubled pools ramp from the peak")
		}
	}
	assert.Equal(t, 3, doubled, "the doubled pools' ramp ends after three windows that do not rise past the peak")
	assert.Contains(t, strings.Join(rec.MinJobs.Warnings, "\n"), "the peak rose no more than the noise")
	assert.Equal(t, camp.Ramps+1, rec.Experiments, "every ramp, and the confirming trial")
	for i, only := range fr.goodputOnly {
		// Held by throughput and goodput alone past saturation only.
		assert.Equal(t, peak[i], only, "window %d at %d users", i, camp.Windows[i].Users)
	}
	// The staircase on the same fake reads its peak in the same place,
	// within its scan's small step.
	c, err := algorithms.FindCriticalResource(ctx, x, d, allocation(t, "400-150-60"), shortOptions())
	require.NoError(t, err)
	m, err := algorithms.InferMinConcurrentJobs(ctx, x, d, c, shortOptions())
	require.NoError(t, err)
	require.Equal(t, "throughput-peak", m.Reading)
	t.Logf("minJobs: ramp at the crossing %.1f (%d users), ramp at the peak %.1f (%d users, %d windows past saturation), staircase %.1f (%d users)",
		trusting.MinJobs.MinJobs, trusting.MinJobs.WLmin, rec.MinJobs.MinJobs, rec.MinJobs.WLmin, len(camp.Peak), m.MinJobs, m.WLmin)
	assert.InDelta(t, m.MinJobs, rec.MinJobs.MinJobs, 0.15*m.MinJobs, "staircase %d users, ramp %d", m.WLmin, rec.MinJobs.WLmin)
}

// poolBound caps an experimenter's throughput at perConn pages/s for each of
// the app tier's connections, those connections full where it binds: a pool
// that ends the growth past the CPU's crossing, as the live Go testbed's 10
// connections did.
type poolBound struct {
	algorithms.Experimenter
	perConn float64
}

func (p poolBound) RunExperiment(ctx context.Context, e algorithms.Experiment) (algorithms.Observation, error) {
	o, err := p.Experimenter.RunExperiment(ctx, e)
	if err != nil {
		return o, err
	}
	tier, _ := e.Deployment.Tier("app")
	limit := p.perConn * float64(e.Allocation["app"].Connections*tier.Replicas)
	if o.Throughput <= limit {
		return o, nil
	}
	f := limit / o.Throughput
	o.Throughput = limit
	for i := range o.Servers {
		s := &o.Servers[i]
		s.Throughput, s.CPU = f*s.Throughput, f*s.CPU
		for j := range s.Pools {
			if s.Tier == "app" && s.Pools[j].Name == algorithms.PoolConnections {
				s.Pools[j].Busy, s.Pools[j].FullShare = float64(s.Pools[j].Size), 1
			}
		}
	}
	return o, nil
}

func TestRecommendRampDoublesAPoolFullAtThePeak(t *testing.T) {
	d := deployment(t, "1/2/1/2")
	ctx := context.Background()
	opts := rampOptions()
	x := batching{rubbosFake(), "app"}
	free, _, err := algorithms.RecommendRamp(ctx, &fakeRamp{x: x}, x, d, allocation(t, "400-150-60"), opts)
	require.NoError(t, err)
	require.Equal(t, "throughput-peak", free.MinJobs.Reading)
	top := 0.0
	for _, p := range free.MinJobs.Points {
		top = math.Max(top, p.Throughput)
	}
	// The 120 connections (60 on each of two servers) bind at 0.93 of the
	// peak: past the CPU's crossing, at 0.89 of it, so find-critical does
	// not double them.
	bound := poolBound{x, 0.93 * top / 120}
	rec, camp, err := algorithms.RecommendRamp(ctx, &fakeRamp{x: bound}, bound, d, allocation(t, "400-150-60"), opts)
	require.NoError(t, err)
	assert.Equal(t, "throughput-peak", rec.MinJobs.Reading)
	assert.Equal(t, 120, rec.Critical.Reserve["app"].Connections, "doubled, and kept: the peak rose")
	assert.Equal(t, 150, rec.Critical.Reserve["app"].Threads, "only the full pool")
	warnings := strings.Join(rec.MinJobs.Warnings, "\n")
	assert.Contains(t, warnings, "app-1/connections")
	assert.Contains(t, warnings, "the peak rose to")
	assert.Empty(t, rec.Critical.Warnings, "find-critical doubled nothing")
	t.Logf("minJobs %.1f at %d users on %s (%d windows past saturation); unbounded %.1f at %d users", rec.MinJobs.MinJobs, rec.MinJobs.WLmin,
		rec.Critical.Reserve, len(camp.Peak), free.MinJobs.MinJobs, free.MinJobs.WLmin)
	assert.InDelta(t, free.MinJobs.MinJobs, rec.MinJobs.MinJobs, 0.15*free.MinJobs.MinJobs, "read at the peak the pool no longer bounds")
}

// The utilisation law's check does not depend on where the campaign
// started. From an under-allocated start every doubling ramps again from
// two small steps below where the pool filled, so the reserve's own windows
// can start just below saturation, too close to it to show the CPU per
// request falling: on the live Go testbed from 100-4-2 the reserve's
// windows at 60-80 users read no fall and minJobs 3.4 at the crossing
// (100-3-3), where the default start's, from 40 users, read a 27% fall and
// 19 jobs at the peak. The check's low window is the campaign's lowest,
// whatever its allocation, as the staircase's (lowest).
func TestRecommendRampChecksTheDemandFromAnyStart(t *testing.T) {
	d := deployment(t, "1/2/1/2")
	opts := rampOptions()
	x := batching{rubbosFake(), "app"}
	jobs := map[string]float64{}
	for _, start := range []string{"400-2-2", "400-150-60"} {
		rec, _, err := algorithms.RecommendRamp(context.Background(), &fakeRamp{x: x}, x, d, allocation(t, start), opts)
		require.NoError(t, err, start)
		assert.Equal(t, "throughput-peak", rec.MinJobs.Reading, start)
		jobs[start] = rec.MinJobs.MinJobs
	}
	assert.InDelta(t, jobs["400-150-60"], jobs["400-2-2"], 0.15*jobs["400-150-60"], "minJobs by start: %v", jobs)
}
