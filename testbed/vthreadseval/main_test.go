package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The grid runs on a testbed of its own ports: every address of the
// deployment file moves by the offset, and the hook and workload are found
// from anywhere.
func TestShiftedDeploymentFile(t *testing.T) {
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	path, err := shifted(repo, t.TempDir(), "deployment-java-vthreads.yaml", 200)
	require.NoError(t, err)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	s := string(b)
	for _, port := range []string{"18280", "18290", "18317", "18282", "18304"} {
		assert.Contains(t, s, "127.0.0.1:"+port)
	}
	for _, port := range []string{"18080", "18090", "18117", "18082", "18104"} {
		assert.NotContains(t, s, "127.0.0.1:"+port)
	}
	assert.Contains(t, s, "workload: "+filepath.Join(repo, "testbed", "workload.yaml"))
	assert.Contains(t, s, filepath.Join(repo, "testbed", "testbed.sh")+", apply")
}

// The report's shares are of the grid's best goodput at each threshold.
func TestMarkdownSharesOfTheBest(t *testing.T) {
	r := report{Users: []int{80, 120}, SLAs: []string{"0.1"}, Runtime: "6s", Warm: "30s",
		Configs: []config{{Name: "a", Threads: "platform"}, {Name: "b", Threads: "virtual"}}}
	for _, x := range []struct {
		c    string
		u    int
		good float64
	}{{"a", 80, 50}, {"a", 120, 80}, {"b", 80, 40}, {"b", 120, 20}} {
		r.Rows = append(r.Rows, row{Config: x.c, Users: x.u, Goodput: map[string]float64{"0.1": x.good},
			Servers: []server{{Name: "app-1", CPU: 0.5, Pools: []pool{{Name: "threads", Size: 19, Busy: 10}}}}})
	}
	md := r.markdown()
	assert.Contains(t, md, "| a | 80.0 (1.00) |")
	assert.Contains(t, md, "| b | 40.0 (0.50) |")
	assert.Contains(t, md, "10.0 of 19")
	assert.Equal(t, 1, strings.Count(md, "## At the highest workload (120 users)"))
}
