package watch

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
)

// A virtual-thread tier's hook names its limit {app.permits}, the tier's threads.
func TestHookExpandsPermits(t *testing.T) {
	h := Hook{Argv: []string{"apply", "{web.threads}", "{app.permits}", "{app.connections}"}}
	got, err := h.Expand(algorithms.Allocation{"web": {Threads: 100}, "app": {Threads: 30, Connections: 12}})
	require.NoError(t, err)
	assert.Equal(t, []string{"apply", "100", "30", "12"}, got)
}
