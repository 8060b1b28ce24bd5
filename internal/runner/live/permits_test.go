package live

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
)

// A tier on virtual threads writes pools: {permits: N} and its hook
// {app.permits}; the model keeps the permits as the tier's threads.
func TestHookArgvNamesPermits(t *testing.T) {
	a := algorithms.Allocation{"web": {Threads: 100}, "app": {Threads: 30, Connections: 12}}
	got, err := hookArgv([]string{"apply", "{web.threads}", "{app.permits}", "{app.connections}"}, a)
	require.NoError(t, err)
	assert.Equal(t, []string{"apply", "100", "30", "12"}, got)
	_, err = hookArgv([]string{"{db.permits}"}, a)
	assert.ErrorContains(t, err, "sets no {db.permits}")
}
