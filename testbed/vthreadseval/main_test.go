package main

import (
	"os"
	"os/exec"
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

// javaWant is what stack.sh's java_variant_want chooses under env: the java
// binary and the variant.
func javaWant(t *testing.T, env ...string) (string, error) {
	t.Helper()
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	cmd := exec.Command("bash", "-c", `set -euo pipefail; REPO=$1; . "$REPO/testbed/core.sh"; . "$REPO/testbed/stacks/java/stack.sh"
java_variant_want; echo "$JAVA_WANT_THREADS $JAVA_WANT_BIN"`, "bash", repo)
	cmd.Env = append(os.Environ(), "SOFTALLOC_TESTBED_DIR="+t.TempDir())
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// The evaluation runs both variants on one JDK: SOFTALLOC_TESTBED_JAVA_HOME
// chooses the platform variant's JDK too, whose default stays the java of
// PATH (OpenJDK 17).
func TestJavaHomeChoosesEitherVariantsJDK(t *testing.T) {
	home := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(home, "bin"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(home, "bin", "java"), []byte("#!/bin/sh\n"), 0o755))
	for _, v := range []string{"platform", "virtual"} {
		out, err := javaWant(t, "SOFTALLOC_TESTBED_JAVA_THREADS="+v, "SOFTALLOC_TESTBED_JAVA_HOME="+home)
		require.NoError(t, err, out)
		assert.Equal(t, v+" "+filepath.Join(home, "bin", "java"), out)
	}
	out, err := javaWant(t, "SOFTALLOC_TESTBED_JAVA_THREADS=platform", "SOFTALLOC_TESTBED_JAVA_HOME=")
	require.NoError(t, err, out)
	assert.Equal(t, "platform java", out, "the platform stack's default JDK is the java of PATH")
	out, err = javaWant(t, "SOFTALLOC_TESTBED_JAVA_THREADS=platform", "SOFTALLOC_TESTBED_JAVA_HOME="+filepath.Join(home, "none"))
	require.Error(t, err)
	assert.Contains(t, out, "SOFTALLOC_TESTBED_JAVA_HOME="+filepath.Join(home, "none")+": no java at "+filepath.Join(home, "none", "bin", "java"))
}
