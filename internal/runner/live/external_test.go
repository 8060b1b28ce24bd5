package live

import (
	"context"
	"os"
	"path/filepath"
	"testing"

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
	r, log, e := c.runner(t, dir, "300ms", 3)
	require.NoError(t, r.Prepare(context.Background(), e.Allocation))
	require.Zero(t, c.served(), "Prepare applies and waits for health only")
	require.NoError(t, r.WarmUp(context.Background(), e))
	assert.Greater(t, c.served(), 0, "the warm-up loaded the deployment")
	assert.Regexp(t, `live: warm-up after applying app:threads=8,connections=0: 300ms at 3 users, [1-9][0-9]* pages`, log.String())

	// Without a warmUp key, nothing runs. An app of its own: a page the
	// warm-up above had sent as its time ran out may reach the first app's
	// handler after WarmUp returned (once, under make test's race pass).
	dir = t.TempDir()
	c = newColdApp(t, dir)
	r, _, _ = c.runner(t, dir, nil, 3)
	require.NoError(t, r.WarmUp(context.Background(), e))
	assert.Zero(t, c.served())
}

// WarmUp warms the allocation it is given, applied as a trial applies it:
// the hook runs when that is not the allocation Prepare applied (a warm-up
// of the old pools would leave the new ones cold), and not again when it is.
func TestWarmUpAppliesTheAllocationItWarms(t *testing.T) {
	dir := t.TempDir()
	c := newColdApp(t, dir)
	r, log, e := c.runner(t, dir, "200ms", 2)
	require.NoError(t, r.Prepare(context.Background(), e.Allocation))
	require.NoError(t, r.WarmUp(context.Background(), e))
	applied := func() string {
		b, err := os.ReadFile(filepath.Join(dir, "applied"))
		require.NoError(t, err)
		return string(b)
	}
	assert.Equal(t, "8\n", applied(), "the hook ran once: WarmUp's allocation is Prepare's")

	e.Allocation = algorithms.Allocation{"app": {Threads: 12}}
	require.NoError(t, r.WarmUp(context.Background(), e))
	assert.Equal(t, "8\n12\n", applied(), "WarmUp applied the allocation it warms")
	assert.Regexp(t, `live: warm-up after applying app:threads=12,connections=0: 200ms at 2 users`, log.String())
}
