//go:build !race

package cli_test

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSlowCrashResume kills campaigns with SIGKILL at random points, several
// times over, and checks that each resumed campaign gives the answer of an
// uninterrupted run: on the sim runner and on the exec runner (the
// exec-sim program, a real child process per experiment). The points are
// random but seeded, so a failure can be repeated.
func TestSlowCrashResume(t *testing.T) {
	bin := softallocBinary(t)
	execSim := filepath.Join(t.TempDir(), "exec-sim")
	out, err := exec.Command("go", "build", "-o", execSim, "../../examples/exec-sim").CombinedOutput()
	require.NoError(t, err, "%s", out)
	args := []string{"recommend", "--topology", "1/2/1/2", "--mode", "paper", "--ramp-up", "10s", "--runtime", "20s", "--output", "json", "--quiet"}
	for _, tc := range []struct {
		name      string
		args      []string
		campaigns int
	}{
		{"sim", args, 10},
		{"exec", append(append([]string(nil), args...), "--runner", "exec", "--runner-cmd", execSim), 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := append(os.Environ(), "SOFTALLOC="+bin)
			whole := t.TempDir()
			cmd := exec.Command(bin, tc.args...)
			cmd.Dir, cmd.Env = whole, env
			want, err := cmd.Output()
			require.NoError(t, err)
			total := len(journalKeys(t, filepath.Join(whole, ".softalloc", "journal.jsonl")))
			require.Greater(t, total, 10)
			rng := rand.New(rand.NewPCG(25, 7))
			for c := 0; c < tc.campaigns; c++ {
				dir := t.TempDir()
				journal := filepath.Join(dir, ".softalloc", "journal.jsonl")
				kills := 1 + rng.IntN(3)
				for k := 0; k < kills; k++ {
					// Between kills a torn last line is the journal's
					// legitimate state (the next run cuts it): count whole ones.
					data, _ := os.ReadFile(journal)
					done := bytes.Count(data, []byte("\n"))
					if done >= total-1 {
						break
					}
					// After some records, and some milliseconds more: mid-trial
					// or mid-write, wherever the clock falls.
					after := done + 1 + rng.IntN(max(1, (total-done)/2))
					cmd := exec.Command(bin, tc.args...)
					cmd.Dir, cmd.Env = dir, env
					var stderr bytes.Buffer
					cmd.Stderr = &stderr
					require.NoError(t, cmd.Start())
					waitForRecords(t, journal, after)
					time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
					require.NoError(t, cmd.Process.Kill())
					_ = cmd.Wait()
				}
				cmd := exec.Command(bin, tc.args...)
				cmd.Dir, cmd.Env = dir, env
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				got, err := cmd.Output()
				require.NoError(t, err, "campaign %d, stderr: %s", c, stderr.String())
				assert.JSONEq(t, string(want), string(got), "campaign %d (%d kills) resumed to the uninterrupted answer", c, kills)
				keys := journalKeys(t, journal)
				seen := map[string]bool{}
				for _, k := range keys {
					assert.False(t, seen[k], "campaign %d: experiment %s recorded twice", c, k)
					seen[k] = true
				}
				assert.Len(t, keys, total, "campaign %d: the uninterrupted run's experiments, no more", c)
			}
		})
	}
}
