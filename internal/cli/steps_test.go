package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/runner"
)

// smallStack is a fake deployment of the size issue 40's user had: a
// closed loop (1 s think time) over web, app and db, one core each, whose
// app CPU saturates near 30 users. Exact MVA gives every figure.
type smallStack struct {
	calls int
	noCPU bool // reports no CPU use
}

func (s *smallStack) RunExperiment(ctx context.Context, e algorithms.Experiment) (algorithms.Observation, error) {
	s.calls++
	n := e.Workload.Users
	demand := map[string]float64{"web": 0.002, "app": 0.035, "db": 0.004}
	var st []algorithms.Station
	for _, t := range e.Deployment.Tiers {
		for i := 0; i < t.Replicas; i++ {
			st = append(st, algorithms.Station{Name: t.ServerName(i), Demand: demand[t.Name] / float64(t.Replicas), Servers: 1})
		}
	}
	pts, err := algorithms.MVA(st, 1, n)
	if err != nil {
		return algorithms.Observation{}, err
	}
	p := pts[n-1]
	run := e.Timing.Runtime.Seconds()
	pages := int64(p.Throughput * run)
	o := algorithms.Observation{RuntimeSeconds: run, Throughput: p.Throughput,
		ResponseTimes: algorithms.Histogram{Sum: p.ResponseTime * float64(pages),
			Buckets: []algorithms.Bucket{{LE: 4 * p.ResponseTime, Count: pages}}}}
	k := 0
	for _, t := range e.Deployment.Tiers {
		for i := 0; i < t.Replicas; i++ {
			cpu := p.Utilization[k]
			if s.noCPU {
				cpu = 0
			}
			o.Servers = append(o.Servers, algorithms.ServerObservation{Name: t.ServerName(i), Tier: t.Name, CPU: cpu,
				Throughput: p.Throughput / float64(t.Replicas), ResponseTime: p.Residence[k]})
			k++
		}
	}
	return o, ctx.Err()
}

// runSmallStack runs a command on the small stack behind a runner of the
// given name, and returns its JSON document, stderr and the fake.
func runSmallStack(t *testing.T, name string, args ...string) (map[string]any, string, *smallStack) {
	t.Helper()
	fake := &smallStack{}
	var out, errb bytes.Buffer
	f := newFactory(Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
	f.NewRunner = func(cfg runner.Config) (runner.Runner, error) {
		return runner.Runner{Experimenter: fake, Name: name, DefaultTiming: algorithms.PaperTiming}, nil
	}
	args = append(args, "--topology", "1/1/1", "--no-journal", "-o", "json", "--progress", "plain")
	code := runWith(context.Background(), args, f)
	require.Equal(t, ExitOK, code, errb.String())
	var doc map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc), out.String())
	return doc, errb.String(), fake
}

// Issue 40: the campaign's steps were the simulator's (500, 100 and 1,500
// users) on every runner; on a stack that saturates near 30 users the first
// trial at 500 users was already saturated, and find-critical answered 500.
// On the exec and live runners the steps not given are derived from a first
// low-load trial's prediction of the saturation workload.
func TestCampaignStepsScaleWithTheDeployment(t *testing.T) {
	// Where app's CPU reaches 0.95 in the model itself.
	st := []algorithms.Station{{Name: "web-1", Demand: 0.002, Servers: 1}, {Name: "app-1", Demand: 0.035, Servers: 1}, {Name: "db-1", Demand: 0.004, Servers: 1}}
	pts, err := algorithms.MVA(st, 1, 200)
	require.NoError(t, err)
	saturation := 0
	for _, p := range pts {
		if p.Utilization[1] >= 0.95 {
			saturation = p.Users
			break
		}
	}
	require.Positive(t, saturation)

	for _, name := range []string{"exec", "live"} {
		t.Run("find-critical on "+name, func(t *testing.T) {
			doc, stderr, fake := runSmallStack(t, name, "find-critical")
			critical := doc["critical"].(map[string]any)
			sat := int(critical["saturationWorkload"].(float64))
			assert.GreaterOrEqual(t, sat, saturation, "saturation is read where the CPU reaches the threshold")
			assert.LessOrEqual(t, sat, 2*saturation, "not a step of the simulator's past it")
			require.IsType(t, map[string]any{}, doc["steps"], "the document says which steps were used")
			steps := doc["steps"].(map[string]any)
			step := int(steps["step"].(float64))
			assert.LessOrEqual(t, sat, saturation+step, "within a step of it")
			assert.Less(t, step, saturation/5, "a step of a tenth of the saturation or so")
			assert.LessOrEqual(t, fake.calls, 15, "reached in a reasonable number of experiments")
			assert.Equal(t, float64(fake.calls), doc["experiments"], "the first trials are counted")
			assert.Contains(t, steps["from"], "derived from a first trial at ")
			assert.Contains(t, stderr, fmt.Sprintf("softalloc: workload steps: step %d users, ", step))
		})
	}

	t.Run("recommend", func(t *testing.T) {
		doc, _, fake := runSmallStack(t, "exec", "recommend")
		steps := doc["steps"].(map[string]any)
		step, small, span := int(steps["step"].(float64)), int(steps["smallStep"].(float64)), int(steps["scanSpan"].(float64))
		assert.Equal(t, max(1, (step+2)/5), small, "the simulator's ratio: a fifth of the step")
		assert.Equal(t, 3*step, span, "the simulator's ratio: three steps")
		assert.Equal(t, float64(fake.calls), doc["experiments"])
		sat := int(doc["critical"].(map[string]any)["saturationWorkload"].(float64))
		assert.LessOrEqual(t, sat, saturation+step)
		wlMin := int(doc["evidence"].(map[string]any)["wlMin"].(float64))
		assert.LessOrEqual(t, wlMin, sat, "minJobs is read at or below the saturation workload, to the small step")
	})

	t.Run("a flag given wins", func(t *testing.T) {
		doc, stderr, _ := runSmallStack(t, "exec", "recommend", "--step", "8", "--scan-span", "8")
		steps := doc["steps"].(map[string]any)
		assert.Equal(t, 8.0, steps["step"])
		assert.Equal(t, 8.0, steps["scanSpan"])
		assert.Equal(t, 2.0, steps["smallStep"], "the small step follows the step given")
		assert.NotContains(t, steps["from"], "first trial", "no trial is needed to derive from a step given")
		assert.Contains(t, steps["from"], "--step and --scan-span given")
		assert.Contains(t, stderr, "softalloc: workload steps: step 8 users, small step 2, scan span 8: ")
	})

	t.Run("the simulator keeps its defaults", func(t *testing.T) {
		doc, stderr, _ := runSmallStack(t, "sim", "find-critical")
		steps := doc["steps"].(map[string]any)
		assert.Equal(t, 500.0, steps["step"])
		assert.Equal(t, "the defaults", steps["from"])
		assert.NotContains(t, stderr, "workload steps")
	})
}

// A deployment whose first trial predicts nothing fails naming the flags
// that give the steps.
func TestStepsThatCannotBeDerivedNameTheFlags(t *testing.T) {
	var out, errb bytes.Buffer
	f := newFactory(Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
	f.NewRunner = func(cfg runner.Config) (runner.Runner, error) {
		return runner.Runner{Experimenter: &smallStack{noCPU: true}, Name: "live", DefaultTiming: algorithms.PaperTiming}, nil
	}
	code := runWith(context.Background(), []string{"recommend", "--topology", "1/1/1", "--no-journal", "--progress", "none"}, f)
	assert.Equal(t, ExitFailure, code)
	assert.Equal(t, "softalloc: find-critical: cannot derive the workload steps from a trial at 1 user: no server reported CPU use at 1 users; "+
		"give --step (and for recommend --small-step and --scan-span)\n", errb.String())
}
