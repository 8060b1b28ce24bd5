package live

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
)

// A children tier's file writes pools: {children: N} and its hook
// {php.children}; the model keeps the children as the tier's threads.
func TestHookArgvNamesChildren(t *testing.T) {
	a := algorithms.Allocation{"web": {Threads: 150}, "php": {Threads: 20}, "db": {Connections: 70}}
	got, err := hookArgv([]string{"apply", "{web.threads}", "{php.children}", "{db.connections}"}, a)
	require.NoError(t, err)
	assert.Equal(t, []string{"apply", "150", "20", "70"}, got)
	_, err = hookArgv([]string{"{db.children}"}, a)
	assert.ErrorContains(t, err, "sets no {db.children}")
}
