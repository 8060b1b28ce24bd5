package live

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
)

// A program that brings its own load generator (examples/locust) applies
// the allocation with Prepare and then warms the deployment up with
// WarmUp, as a live trial does after an apply: the cold pages are served
// before its own window opens.
func TestWarmUpForAProgramWithItsOwnLoadGenerator(t *testing.T) {
	dir := t.TempDir()
	c := newColdApp(t, dir)
	r, err := New(c.section("300ms"), filepath.Join(dir, "deployment.yaml"))
	require.NoError(t, err)
	var log strings.Builder
	r.Log = &log
	d := algorithms.Deployment{Tiers: []algorithms.Tier{{Name: "app", Role: "app", Replicas: 1, Cores: 1, Pools: []string{"threads"}}}}
	e := algorithms.Experiment{Deployment: d, Workload: algorithms.Workload{Users: 3},
		Allocation: algorithms.Allocation{"app": {Threads: 8}},
		Timing:     algorithms.Timing{RampUp: 50 * time.Millisecond, Runtime: 200 * time.Millisecond}}
	require.NoError(t, r.Prepare(context.Background(), e.Allocation))
	require.Zero(t, c.served(), "Prepare applies and waits for health only")
	require.NoError(t, r.WarmUp(context.Background(), e))
	assert.Greater(t, c.served(), 0, "the warm-up loaded the deployment")
	assert.Regexp(t, `live: warm-up after applying app:threads=8,connections=0: 300ms at 3 users, [1-9][0-9]* pages`, log.String())

	// Without a warmUp key, nothing runs.
	c.reset()
	r, err = New(c.section(nil), filepath.Join(dir, "deployment.yaml"))
	require.NoError(t, err)
	require.NoError(t, r.WarmUp(context.Background(), e))
	assert.Zero(t, c.served())
}
