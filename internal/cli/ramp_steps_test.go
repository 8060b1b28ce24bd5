package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/runner"
)

// smallRamp runs a ramp on the small stack, one experiment a level, and
// refuses a level past maxUsers as the live runner and the Locust adapter do.
type smallRamp struct {
	smallStack
	maxUsers int
	levels   []int
}

func (s *smallRamp) RunRamp(ctx context.Context, r algorithms.Ramp, next func(algorithms.RampWindow) (algorithms.RampStep, error)) error {
	users := r.From
	for i := 0; ; i++ {
		if s.maxUsers > 0 && users > s.maxUsers {
			return fmt.Errorf("%d users: want at most %d (the runner section's maxUsers)", users, s.maxUsers)
		}
		s.levels = append(s.levels, users)
		o, err := s.RunExperiment(ctx, algorithms.Experiment{Deployment: r.Deployment, Allocation: r.Allocation, Workload: algorithms.Workload{Users: users}, Timing: r.Timing})
		if err != nil {
			return err
		}
		step, err := next(algorithms.RampWindow{Index: i, Users: users, Elapsed: 30, Observation: o})
		if err != nil || step.Users == 0 {
			return err
		}
		users = step.Users
	}
}

// runSmallRamp runs a ramp command on the small stack behind a runner of
// the given name, with the windows measured to 2%.
func runSmallRamp(t *testing.T, fake *smallRamp, name string, args ...string) (map[string]any, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	f := newFactory(Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
	f.NewRunner = func(cfg runner.Config) (runner.Runner, error) {
		return runner.Runner{Experimenter: fake, Name: name, DefaultTiming: algorithms.PaperTiming}, nil
	}
	args = append(args, "--ramp", "--precision", "2%", "--no-journal", "-o", "json", "--progress", "plain")
	code := runWith(context.Background(), args, f)
	var doc map[string]any
	if code == ExitOK {
		require.NoError(t, json.Unmarshal(out.Bytes(), &doc), out.String())
	}
	return doc, errb.String(), code
}

// Issue 39: the ramp rose by 100 users a level from 500 on every runner; on
// a one-core server that saturates at tens of users it answered a whole
// level past the staircase, and asked the runner for more users than its
// maxUsers. On the exec and live runners its steps are derived as the
// staircase's are, and the output says where they came from.
func TestRampStepsScaleWithTheDeployment(t *testing.T) {
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

	for _, cmd := range []string{"find-critical", "recommend"} {
		t.Run(cmd, func(t *testing.T) {
			fake := &smallRamp{}
			doc, stderr, code := runSmallRamp(t, fake, "exec", cmd, "--topology", "1/1/1")
			require.Equal(t, ExitOK, code, stderr)
			require.IsType(t, map[string]any{}, doc["steps"], "the document says which steps the ramp used")
			steps := doc["steps"].(map[string]any)
			small := int(steps["smallStep"].(float64))
			assert.Contains(t, steps["from"], "derived from the ramp's first windows at 1 user")
			assert.Contains(t, stderr, "softalloc: workload steps: step ")
			sat := int(doc["critical"].(map[string]any)["saturationWorkload"].(float64))
			assert.GreaterOrEqual(t, sat, saturation)
			assert.LessOrEqual(t, sat, saturation+small, "within a small step of the CPU's threshold, not a 100-user level past it")
			assert.Equal(t, 1, fake.levels[0], "the first window is the low-load one")
		})
	}

	t.Run("--small-step given", func(t *testing.T) {
		fake := &smallRamp{}
		doc, stderr, code := runSmallRamp(t, fake, "exec", "find-critical", "--topology", "1/1/1", "--step", "10", "--small-step", "3")
		require.Equal(t, ExitOK, code, stderr)
		steps := doc["steps"].(map[string]any)
		assert.Equal(t, 10.0, steps["step"])
		assert.Equal(t, 3.0, steps["smallStep"])
		assert.Contains(t, steps["from"], "--step and --small-step given")
		ramp := doc["ramp"].(map[string]any)
		answer := ramp["answer"].([]any)
		require.Len(t, answer, 2)
		windows := ramp["windows"].([]any)
		below := windows[int(answer[0].(float64))].(map[string]any)
		at := windows[int(answer[1].(float64))].(map[string]any)
		assert.Equal(t, 3.0, at["users"].(float64)-below["users"].(float64), "the ramp rises by --small-step")
	})

	t.Run("the text says it too", func(t *testing.T) {
		var out, errb bytes.Buffer
		f := newFactory(Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
		f.NewRunner = func(cfg runner.Config) (runner.Runner, error) {
			return runner.Runner{Experimenter: &smallRamp{}, Name: "live", DefaultTiming: algorithms.PaperTiming}, nil
		}
		code := runWith(context.Background(), []string{"find-critical", "--topology", "1/1/1", "--ramp", "--precision", "2%", "--no-journal", "--progress", "none"}, f)
		require.Equal(t, ExitOK, code, errb.String())
		assert.Contains(t, out.String(), "steps:               rises by ")
		assert.Contains(t, out.String(), "derived from the ramp's first windows at 1 user")
	})
}

// The runner section's maxUsers bounds every level of the ramp (and the
// staircase's trials): the Locust adapter and the live runner refuse more.
// --max-workload above it is refused before any load.
func TestRampStaysWithinTheRunnersMaxUsers(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "deployment.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`name: stack
tiers:
  - {name: web, role: web, replicas: 1, pools: {threads: 400}}
  - {name: app, role: app, replicas: 1, pools: {threads: 150, connections: 60}}
  - {name: db, role: db, replicas: 1}
runner:
  name: exec
  command: [./adapter]
  protocol: 2
  maxUsers: 30
`), 0o644))
	// The small stack's app CPU reaches the threshold past 30 users: the
	// ramp ends at the bound, having asked for no more.
	fake := &smallRamp{maxUsers: 30}
	_, stderr, code := runSmallRamp(t, fake, "exec", "find-critical", "-f", file, "--step", "5", "--small-step", "5")
	assert.NotContains(t, stderr, "want at most 30 (the runner section's maxUsers)", "the runner was asked for no more")
	assert.Equal(t, ExitFailure, code, stderr)
	assert.Contains(t, stderr, "softalloc: find-critical: reached the maximum workload of 30 users with throughput still growing")
	require.NotEmpty(t, fake.levels)
	assert.Equal(t, 30, fake.levels[len(fake.levels)-1], "the last level is the bound itself")

	_, stderr, code = runSmallRamp(t, &smallRamp{maxUsers: 30}, "exec", "find-critical", "-f", file, "--max-workload", "100")
	assert.Equal(t, ExitUsage, code)
	assert.Equal(t, "softalloc: --max-workload 100: want at most the runner section's maxUsers (30 users)\n", stderr)
}

// find-critical's staircase rises by --step: --small-step, the ramp's rise
// per level, is refused without --ramp.
func TestFindCriticalSmallStepNeedsTheRamp(t *testing.T) {
	var out, errb bytes.Buffer
	f := newFactory(Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
	code := runWith(context.Background(), []string{"find-critical", "--topology", "1/1/1", "--small-step", "3", "--no-journal"}, f)
	assert.Equal(t, ExitUsage, code)
	assert.Equal(t, "softalloc: --small-step 3 without --ramp: the staircase rises by --step; give --ramp or leave out --small-step\n", errb.String())
	assert.Empty(t, out.String())
}
