package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/softalloc/softalloc/internal/syncbuf"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/runner"
)

// Commands parse into their options; runF receives them instead of a run.
func TestFlagsReachTheOptions(t *testing.T) {
	var got *recommendOptions
	cmd := newCmdRecommend(newFactory(Streams{}), func(o *recommendOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--topology", "1/4/1/4", "--mode", "paper", "--step", "250", "-o", "json", "--format", "tomcat", "--seed", "7"})
	require.NoError(t, cmd.Execute())
	require.NotNil(t, got)
	assert.Equal(t, "1/4/1/4", got.deployment.topology)
	assert.Equal(t, "paper", got.algorithm.mode)
	assert.Equal(t, 250, got.algorithm.step)
	assert.Equal(t, "json", got.output)
	assert.Equal(t, "tomcat", got.format)
	assert.Equal(t, uint64(7), got.runner.seed)

	var sim *simulateOptions
	cmd = newCmdSimulate(newFactory(Streams{}), func(o *simulateOptions) error { sim = o; return nil })
	cmd.SetArgs([]string{"-t", "1/2/1/2", "--alloc", "400-6-6", "--alloc", "400-150-60", "--users", "5000:6000:500"})
	require.NoError(t, cmd.Execute())
	assert.Equal(t, []string{"400-6-6", "400-150-60"}, sim.deployment.allocs)
	assert.Equal(t, "5000:6000:500", sim.users)
}

// bottleneck is a fake deployment: a closed loop (7 s think time) whose app
// CPU saturates at 800 pages/s; the other servers idle along.
type bottleneck struct{ calls int }

func (b *bottleneck) RunExperiment(ctx context.Context, e algorithms.Experiment) (algorithms.Observation, error) {
	b.calls++
	n := float64(e.Workload.Users)
	x := math.Min(n/7.01, 800)
	r := n/x - 7
	o := algorithms.Observation{RuntimeSeconds: e.Timing.Runtime.Seconds(), Throughput: x,
		ResponseTimes: algorithms.Histogram{Sum: r * x * e.Timing.Runtime.Seconds(),
			Buckets: []algorithms.Bucket{{LE: 2 * r, Count: int64(x * e.Timing.Runtime.Seconds())}}}}
	for _, t := range e.Deployment.Tiers {
		for i := 0; i < t.Replicas; i++ {
			cpu := x / 4000
			if t.Name == "app" {
				cpu = x / 800 // each app server takes half the pages at half the speed
			}
			o.Servers = append(o.Servers, algorithms.ServerObservation{Name: t.ServerName(i), Tier: t.Name, CPU: math.Min(cpu, 1),
				Throughput: x / float64(t.Replicas), ResponseTime: r / 2})
		}
	}
	return o, ctx.Err()
}

// A command runs on whatever runner the factory builds: here a fake one,
// with no simulator behind it.
func TestCommandsRunOnTheFactorysRunner(t *testing.T) {
	fake := &bottleneck{}
	var out, errb bytes.Buffer
	f := newFactory(Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
	f.NewRunner = func(cfg runner.Config) (runner.Runner, error) {
		return runner.Runner{Experimenter: fake, Name: "fake", DefaultTiming: algorithms.PaperTiming,
			Settings: map[string]string{"model": "bottleneck"}}, nil
	}
	code := runWith(context.Background(), []string{"find-critical", "--topology", "1/2/1/2", "--no-journal", "-o", "json"}, f)
	require.Equal(t, ExitOK, code, errb.String())
	var doc struct {
		Critical struct {
			Tier, Resource     string
			SaturationWorkload int
		}
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc), out.String())
	assert.Equal(t, "app", doc.Critical.Tier)
	assert.Equal(t, "cpu", doc.Critical.Resource)
	// 0.95 of 800 pages/s at 7 s think time is reached near 5,300 users.
	assert.InDelta(t, 5500, doc.Critical.SaturationWorkload, 500)
	assert.Positive(t, fake.calls)
}

// Issue 24: a character device was taken for a terminal, so progress was
// drawn into /dev/null's place in a CI log.
func TestDevNullIsNoTerminal(t *testing.T) {
	f, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer f.Close()
	assert.False(t, isTerminal(f))
}

// held runs the bottleneck, but holds each experiment until released.
type held struct {
	bottleneck
	release chan struct{}
}

func (h *held) RunExperiment(ctx context.Context, e algorithms.Experiment) (algorithms.Observation, error) {
	<-h.release
	return h.bottleneck.RunExperiment(ctx, e)
}

// Issue 24: off a terminal a campaign was silent on stderr for hours.
func TestPlainProgressForCILogs(t *testing.T) {
	old := heartbeat
	heartbeat = 40 * time.Millisecond
	t.Cleanup(func() { heartbeat = old })
	x := &held{release: make(chan struct{})}
	var out bytes.Buffer
	errb := &syncbuf.Buffer{}
	f := newFactory(Streams{In: strings.NewReader(""), Out: &out, Err: errb})
	f.NewRunner = func(cfg runner.Config) (runner.Runner, error) {
		return runner.Runner{Experimenter: x, Name: "fake", DefaultTiming: algorithms.PaperTiming}, nil
	}
	code := make(chan int)
	go func() {
		code <- runWith(context.Background(), []string{"find-critical", "--topology", "1/2/1/2", "--no-journal", "-o", "json"}, f)
	}()
	// Nothing finishes while the experiment is held: the heartbeat says what runs.
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(errb.String(), "running 400-150-60 at 500 users for") {
		require.True(t, time.Now().Before(deadline), "no heartbeat: %q", errb.String())
		time.Sleep(5 * time.Millisecond)
	}
	assert.Regexp(t, `^softalloc: find-critical: running 400-150-60 at 500 users for [0-9]+s \| 0 done \| `, errb.String())
	close(x.release)
	require.Equal(t, ExitOK, <-code, errb.String())
	assert.Regexp(t, `softalloc:   1 find-critical 400-150-60 at 500 users: [0-9.]+ pages/s, saturated: none \(`, errb.String())
	assert.Regexp(t, `saturated: app-1/cpu app-2/cpu`, errb.String())

	// --progress none and -q say nothing; a bad mode is a usage error.
	for _, args := range [][]string{{"--progress", "none"}, {"-q"}} {
		errb = &syncbuf.Buffer{}
		f.Streams.Err = errb
		code := runWith(context.Background(), append([]string{"find-critical", "--topology", "1/2/1/2", "--no-journal", "-o", "json"}, args...), f)
		require.Equal(t, ExitOK, code)
		assert.Empty(t, errb.String(), args)
	}
	errb = &syncbuf.Buffer{}
	f.Streams.Err = errb
	assert.Equal(t, ExitUsage, runWith(context.Background(), []string{"simulate", "-t", "1/2/1/2", "--users", "100", "--progress", "loud"}, f))
	assert.Contains(t, errb.String(), `--progress "loud": want auto, plain or none`)
}

// A finished adaptive trial's line gives throughput's interval and how long
// it measured; one that ran to its longest window names what held it there.
func TestProgressSaysHowLongAnAdaptiveTrialMeasured(t *testing.T) {
	o := algorithms.Observation{Throughput: 884.6, ThroughputHalfWidth: 10.4, RuntimeSeconds: 35,
		Window: &algorithms.MeasuredWindow{WarmUpSeconds: 25, IntervalSeconds: 1, Batches: 20, Precision: 0.02, Precise: true}}
	assert.Equal(t, "884.6 ± 10.4 pages/s", throughputText(o))
	assert.Equal(t, "; 2% in 35 s after 25 s of warm-up", windowText(o))

	o.RuntimeSeconds = 720
	o.Window.Precision, o.Window.Precise, o.Window.Limit, o.Window.Excess = 0.005, false, "app-4 connections busy", 1.43
	assert.Equal(t, "; short of 0.5% at 720 s after 25 s of warm-up (app-4 connections busy: half-width 1.43x what 0.5% allows)", windowText(o))
	o.Window.Excess = 0
	assert.Equal(t, "; short of 0.5% at 720 s after 25 s of warm-up (app-4 connections busy: its batch means stayed correlated)", windowText(o))

	// A fixed trial: its bare mean, nothing about a window.
	fixed := algorithms.Observation{Throughput: 71.4, RuntimeSeconds: 720}
	assert.Equal(t, "71.4 pages/s", throughputText(fixed))
	assert.Empty(t, windowText(fixed))
}
