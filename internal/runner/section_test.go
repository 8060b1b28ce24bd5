package runner

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/internal/runner/exec"
)

// runner.protocol says which exec protocol the program speaks; the flag
// wins over it, and a version softalloc does not speak is refused.
func TestSectionProtocol(t *testing.T) {
	none := func(string) bool { return false }
	var cfg Config
	require.NoError(t, cfg.ApplySection(map[string]any{"protocol": 2}, "d.yaml", none))
	assert.Equal(t, exec.RampProtocolVersion, cfg.Protocol)

	cfg = Config{Protocol: 1}
	require.NoError(t, cfg.ApplySection(map[string]any{"protocol": 2}, "d.yaml", func(k string) bool { return k == "protocol" }))
	assert.Equal(t, 1, cfg.Protocol, "--runner-protocol wins")

	for _, v := range []any{3, 0, "2"} {
		err := (&Config{}).ApplySection(map[string]any{"protocol": v}, "d.yaml", none)
		assert.ErrorContains(t, err, `deployment "d.yaml": runner.protocol: want the exec protocol version the program speaks, 1 or 2`)
	}

	_, err := New(Config{Name: "exec", Command: []string{"true"}, Protocol: 3})
	assert.ErrorContains(t, err, "runner exec: --runner-protocol: protocol version 3: want 1 or 2")
}
