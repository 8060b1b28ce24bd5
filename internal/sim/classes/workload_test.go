package classes

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLoadWorkloadEmpty(t *testing.T) {
	p := filepath.Join(t.TempDir(), "w.yaml")
	require.NoError(t, os.WriteFile(p, []byte("# to do\n"), 0o600))
	_, err := LoadWorkload(p)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "EOF")
	assert.Contains(t, err.Error(), "the file is empty; want a workload: server")
}

func TestParseNamesUnknownFieldsWithoutGoTypes(t *testing.T) {
	_, err := parse([]byte("name: x\nserver:\n  cores: 4\n  foo: 1\n"), "w.yaml")
	require.Error(t, err)
	assert.Equal(t, `load workload "w.yaml": line 4: unknown field "foo" in server; want one of: cores, policy, quantum, admission, pools, slumps, memory`, err.Error())

	_, err = parse([]byte("classes:\n  - {name: a, load: {users: 1, rate: 2}}\n"), "w.yaml")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown field "rate" in classes[0].load; want one of: users, thinkTime, ramp, arrivals`)
	assert.NotContains(t, err.Error(), "classes.")
}
