package journal_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/journal"
)

// precisionRamper measures each level's window to the precision asked for
// it (the ramp's for the first, a step's after), and says which.
type precisionRamper struct{ precisions []float64 }

func (p *precisionRamper) RunRamp(ctx context.Context, r algorithms.Ramp, next func(algorithms.RampWindow) (algorithms.RampStep, error)) error {
	users, prec := r.From, r.Timing.Precision
	for i := 0; ; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		p.precisions = append(p.precisions, prec)
		o := algorithms.Observation{Throughput: float64(users), RuntimeSeconds: 30,
			Servers: []algorithms.ServerObservation{{Name: "web-1", Tier: "web", CPU: 0.1, Throughput: float64(users), ResponseTime: 0.01}}}
		step, err := next(algorithms.RampWindow{Index: i, Users: users, Elapsed: 30, Observation: o})
		if err != nil || step.Users == 0 {
			return err
		}
		users, prec = step.Users, r.Timing.Precision
		if step.Precision > 0 {
			prec = step.Precision
		}
	}
}

// A ramp whose first window is measured to another precision than the
// steps after it ask (the campaign's low-load window, looser) resumes at
// the precision its last recorded step asked, not at the first window's.
func TestAResumedRampKeepsTheStepsPrecision(t *testing.T) {
	d := algorithms.Deployment{Topology: "1", Tiers: []algorithms.Tier{{Name: "web", Role: "web", Replicas: 1, Cores: 1, Pools: []string{"threads"}}}}
	a := algorithms.Allocation{"web": {Threads: 400}}
	r := algorithms.Ramp{Deployment: d, Allocation: a, From: 500,
		Timing: algorithms.Timing{Runtime: 600e9, Precision: 0.05, SLAs: []float64{2}}}
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	id := journal.Identity{Runner: "fake"}
	stop := errors.New("interrupted")
	run := func(after int) ([]float64, error) {
		j, err := journal.Open(path, id, journal.Options{})
		require.NoError(t, err)
		defer j.Close()
		fake := &precisionRamper{}
		seen := 0
		err = j.WrapRamper(fake).RunRamp(context.Background(), r, func(w algorithms.RampWindow) (algorithms.RampStep, error) {
			if seen++; seen > after {
				return algorithms.RampStep{}, stop
			}
			return algorithms.RampStep{Users: w.Users + 100, Precision: 0.02}, nil
		})
		return fake.precisions, err
	}
	measured, err := run(2)
	require.ErrorIs(t, err, stop)
	assert.Equal(t, []float64{0.05, 0.02, 0.02}, measured)
	measured, err = run(5)
	require.ErrorIs(t, err, stop)
	require.NotEmpty(t, measured, "the ramp goes on past its recorded windows")
	assert.Equal(t, 0.02, measured[0], "the first window after the recorded ones is measured as its step asked")
}
