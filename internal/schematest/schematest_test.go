package schematest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The schema compiles from any package's directory, takes the testbed's
// hand-written deployment file and refuses a key no parser reads.
func TestDeploymentSchemaTakesTheTestbedsFileAndRefusesAnUnknownKey(t *testing.T) {
	s := Deployment(t)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(Path(t)), "..", "testbed", "deployment.yaml"))
	require.NoError(t, err)
	assert.NoError(t, Validate(t, s, b))
	err = Validate(t, s, append(b, []byte("\nreplicaz: 3\n")...))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "replicaz")
}
