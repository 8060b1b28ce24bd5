package algorithms_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
)

// smallFake is a deployment that saturates near 30 users (1 s think time,
// app at 35 ms a page), the size of issue 40's PHP stack.
func smallFake() *mvaExperimenter {
	return &mvaExperimenter{think: 1, web: 0.002, app: 0.035, cluster: 0.001, db: 0.004, queries: 2}
}

// Issue 40: with the simulator's steps (500 users) find-critical's first
// trial on a stack that saturates near 30 users is already saturated, and
// 500 is taken for its saturation workload. Derived steps find it to a step.
func TestDerivedStepsFindASmallDeploymentsSaturation(t *testing.T) {
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

	fixed, err := algorithms.FindCriticalResource(context.Background(), smallFake(), d, allocation(t, "400-150-60"), shortOptions())
	require.NoError(t, err)
	assert.Equal(t, 500, fixed.SaturationWorkload, "the fixed step jumps straight past it")
	assert.Nil(t, fixed.Steps, "nothing derived unless asked")

	o := shortOptions()
	o.DeriveSteps = algorithms.StepsToDerive{Step: true, SmallStep: true, ScanSpan: true}
	var told []algorithms.Steps
	o.OnSteps = func(s algorithms.Steps) { told = append(told, s) }
	c, err := algorithms.FindCriticalResource(context.Background(), x, d, allocation(t, "400-150-60"), o)
	require.NoError(t, err)
	require.NotNil(t, c.Steps)
	require.Len(t, told, 1)
	assert.Equal(t, *c.Steps, told[0])
	st := *c.Steps
	assert.Equal(t, []int{1, st.PredictedSaturation / 5}, st.FirstTrials, "one user, then a fifth of the first prediction")
	assert.InDelta(t, truth, st.PredictedSaturation, 0.1*float64(truth), "MVA predicts the saturation of an MVA network")
	assert.Equal(t, max(1, (st.PredictedSaturation+5)/11), st.Step)
	assert.Equal(t, max(1, (st.Step+2)/5), st.SmallStep)
	assert.Equal(t, 3*st.Step, st.ScanSpan)
	assert.Contains(t, st.From, "derived from a first trial at 1 user and one at ")
	assert.GreaterOrEqual(t, c.SaturationWorkload, truth)
	assert.LessOrEqual(t, c.SaturationWorkload, truth+st.Step, "within a step of where the CPU reaches the threshold")
	assert.LessOrEqual(t, c.Experiments, 15)
	assert.Equal(t, int(x.calls.Load()), c.Experiments, "the first trials are counted")
	assert.Equal(t, "derive-steps", c.Trials[0].Procedure)

	// Recommend scans with the derived small step, and counts every trial once.
	x = smallFake()
	rec, err := algorithms.Recommend(context.Background(), x, d, allocation(t, "400-150-60"), o)
	require.NoError(t, err)
	require.NotNil(t, rec.Critical.Steps)
	assert.Equal(t, st, *rec.Critical.Steps)
	assert.Equal(t, int(x.calls.Load()), rec.Experiments)
	for _, p := range rec.MinJobs.Points {
		assert.Zero(t, (p.Workload-rec.MinJobs.Points[0].Workload)%st.SmallStep, "the scan moves by the small step")
	}
	assert.LessOrEqual(t, rec.MinJobs.WLmin, c.SaturationWorkload)
}

// A step given is kept, with no trial; the others follow it; a step that
// cannot be derived is an error that says so.
func TestDeriveStepsKeepsWhatIsGiven(t *testing.T) {
	d := deployment(t, "1/1/1/1")
	o := shortOptions()
	o.Step = 8
	o.MaxWorkload = 200 // below the default scan span: derived, it is no error
	o.DeriveSteps = algorithms.StepsToDerive{SmallStep: true, ScanSpan: true}
	x := smallFake()
	c, err := algorithms.FindCriticalResource(context.Background(), x, d, allocation(t, "400-150-60"), o)
	require.NoError(t, err)
	require.NotNil(t, c.Steps)
	assert.Equal(t, algorithms.Steps{Step: 8, SmallStep: 2, ScanSpan: 24,
		From: "--step given; the small step 1/5 of the step and the scan span 3 steps (the simulator's ratios)"}, *c.Steps)
	assert.NotEqual(t, "derive-steps", c.Trials[0].Procedure)

	// A default step above the bound is no error when it is derived.
	o = shortOptions()
	o.MaxWorkload = 100
	o.DeriveSteps = algorithms.StepsToDerive{Step: true, SmallStep: true, ScanSpan: true}
	_, err = algorithms.FindCriticalResource(context.Background(), smallFake(), d, allocation(t, "400-150-60"), o)
	require.NoError(t, err)

	// No CPU reading: nothing to predict from.
	_, err = algorithms.FindCriticalResource(context.Background(), noCPU{smallFake()}, d, allocation(t, "400-150-60"), o)
	require.ErrorIs(t, err, algorithms.ErrStepsNotDerived)
	assert.ErrorContains(t, err, "from a trial at 1 user: no server reported CPU use at 1 users")
}

func TestFirstTrialUsers(t *testing.T) {
	for _, tc := range []struct {
		tiers []algorithms.Tier
		want  int
	}{
		{[]algorithms.Tier{{Name: "web", Replicas: 1, Cores: 1}, {Name: "db", Replicas: 1, Cores: 1}}, 1},
		{[]algorithms.Tier{{Name: "web", Replicas: 1, Cores: 8}, {Name: "app", Replicas: 2, Cores: 4}, {Name: "db", Replicas: 1, Cores: 4}}, 2},
		{[]algorithms.Tier{{Name: "web", Replicas: 2, Cores: 16}, {Name: "db", Replicas: 4, Cores: 16}}, 16},
		{[]algorithms.Tier{{Name: "web"}}, 1}, // no cores said: one each
	} {
		assert.Equal(t, tc.want, algorithms.FirstTrialUsers(algorithms.Deployment{Tiers: tc.tiers}), "%+v", tc.tiers)
	}
}

// noCPU reports no CPU use.
type noCPU struct{ x algorithms.Experimenter }

func (n noCPU) RunExperiment(ctx context.Context, e algorithms.Experiment) (algorithms.Observation, error) {
	o, err := n.x.RunExperiment(ctx, e)
	for i := range o.Servers {
		o.Servers[i].CPU = 0
	}
	return o, err
}
