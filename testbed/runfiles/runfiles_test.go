package runfiles

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDirFollowsTheEnvironment(t *testing.T) {
	t.Setenv("SOFTALLOC_TESTBED_DIR", "/srv/tb")
	assert.Equal(t, "/srv/tb", Dir())
	t.Setenv("SOFTALLOC_TESTBED_DIR", "")
	t.Setenv("TMPDIR", "/var/tmp")
	assert.Equal(t, "/var/tmp/softalloc-testbed", Dir())
}

func TestCapReadsWhatTestbedShWrote(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "run"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "run", "cap-app"), []byte("0.1\n"), 0o644))
	c, err := Cap(dir, "app")
	require.NoError(t, err)
	assert.Equal(t, "0.1", c)
	_, err = Cap(dir, "db")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the testbed's db cap")
}
