package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/runner/exec"
	"github.com/softalloc/softalloc/internal/sim"
	"github.com/softalloc/softalloc/internal/topology"
)

// build compiles softalloc and exec-sim, once for the package's tests
// (each build took most of a test's time on a busy machine), into binDir;
// dir is unused but kept by the callers for their own files.
func build(t *testing.T, dir string) (softalloc, execSim string) {
	t.Helper()
	goBin, err := osexec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build the binaries with")
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	softalloc, execSim = filepath.Join(binDir, "softalloc"), filepath.Join(binDir, "exec-sim")
	if built {
		return softalloc, execSim
	}
	for out, pkg := range map[string]string{
		softalloc: "github.com/softalloc/softalloc/cmd/softalloc",
		execSim:   "github.com/softalloc/softalloc/examples/exec-sim",
	} {
		cmd := osexec.Command(goBin, "build", "-o", out, pkg)
		b, err := cmd.CombinedOutput()
		require.NoError(t, err, "go build %s: %s", pkg, b)
	}
	built = true
	return softalloc, execSim
}

var (
	buildMu sync.Mutex
	built   bool
	binDir  string
)

func TestMain(m *testing.M) {
	var err error
	if binDir, err = os.MkdirTemp("", "exec-sim-test-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(binDir)
	os.Exit(code)
}

// The exec runner on exec-sim answers as the sim runner does: the same
// experiments, the same observations, the same recommendation.
func TestExecSimEqualsSim(t *testing.T) {
	dir := t.TempDir()
	softalloc, execSim := build(t, dir)
	t.Setenv("SOFTALLOC", softalloc)

	t.Run("observations", func(t *testing.T) {
		d, err := topology.ParseTopology("1/2/1/2")
		require.NoError(t, err)
		shop, err := topology.LoadDeployment(filepath.Join("..", "..", "testdata", "deployments", "shop.yaml"))
		require.NoError(t, err)
		alloc, err := topology.ParseAllocation("400-150-60")
		require.NoError(t, err)
		timing := algorithms.Timing{RampUp: 20 * time.Second, Runtime: 30 * time.Second}
		// A grid's trial: adaptive, held to the precision on goodput alone.
		grid := algorithms.Timing{RampUp: 10 * time.Second, Runtime: 2 * time.Minute, Precision: 0.02, SLAs: []float64{2}, GoodputOnly: true}
		for _, tc := range []struct {
			name string
			e    algorithms.Experiment
			seed string
		}{
			{"notation", algorithms.Experiment{Deployment: d, Allocation: alloc, Workload: algorithms.Workload{Users: 5000}, Timing: timing}, ""},
			{"seed 7", algorithms.Experiment{Deployment: d, Allocation: alloc, Workload: algorithms.Workload{Users: 5000}, Timing: timing}, "7"},
			{"deployment file", algorithms.Experiment{Deployment: shop.Deployment, Allocation: shop.Allocation, Workload: algorithms.Workload{Users: 1500}, Timing: timing}, ""},
			{"goodput only", algorithms.Experiment{Deployment: d, Allocation: alloc, Workload: algorithms.Workload{Users: 6500}, Timing: grid}, ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				seed := uint64(1)
				if tc.seed != "" {
					t.Setenv("SOFTALLOC_SEED", tc.seed)
					seed = 7
				}
				r, err := exec.New([]string{execSim})
				require.NoError(t, err)
				var log bytes.Buffer
				r.Log = &log
				got, err := r.RunExperiment(context.Background(), tc.e)
				require.NoError(t, err, log.String())
				want, err := sim.Runner{Seed: seed}.RunExperiment(context.Background(), tc.e)
				require.NoError(t, err)
				assert.Equal(t, want, got)
				assert.Contains(t, log.String(), "simulating "+tc.e.Deployment.Topology)
			})
		}
	})

	t.Run("recommend", func(t *testing.T) {
		work := t.TempDir()
		recommend := func(runner ...string) string {
			// The exec runner's default trial is the paper's, and it
			// derives its workload steps from a first trial: the timing and
			// step flags make both runners run the same experiments.
			args := append([]string{"recommend", "--topology", "1/2/1/2", "--runtime", "60s",
				"--ramp-up", "1m", "--ramp-down", "0s", "--step", "500", "--small-step", "100", "--scan-span", "1500",
				"--output", "json"}, runner...)
			cmd := osexec.Command(softalloc, args...)
			cmd.Dir = work // where the journals go
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			require.NoError(t, cmd.Run(), "softalloc %s: %s", strings.Join(args, " "), stderr.String())
			return stdout.String()
		}
		viaSim := recommend("--runner", "sim", "--journal", "sim.jsonl")
		viaExec := recommend("--runner", "exec", "--runner-cmd", execSim, "--journal", "exec.jsonl")
		require.True(t, json.Valid([]byte(viaExec)), viaExec)
		assert.JSONEq(t, viaSim, viaExec)
		// Every finished experiment went to the journal, keyed on the
		// command: the same command again runs nothing and answers the same.
		t.Setenv("SOFTALLOC", filepath.Join(dir, "no-such-binary"))
		again := recommend("--runner", "exec", "--runner-cmd", execSim, "--journal", "exec.jsonl")
		assert.JSONEq(t, viaExec, again)
		var doc struct {
			Experiments int    `json:"experiments"`
			Allocation  string `json:"allocation"`
		}
		require.NoError(t, json.Unmarshal([]byte(viaExec), &doc))
		assert.GreaterOrEqual(t, doc.Experiments, 5, "a whole campaign ran through the exec runner")
		t.Logf("recommend via exec: %s after %d experiments", doc.Allocation, doc.Experiments)
	})
}

// Ctrl-C in the middle of a campaign: the experiments finished before it
// are in the journal, and the same command afterwards runs only the rest.
func TestInterruptedCampaignKeepsFinishedExperiments(t *testing.T) {
	dir := t.TempDir()
	softalloc, execSim := build(t, dir)
	work := t.TempDir()
	// A program that answers three experiments, then hangs while the file
	// "hang" exists; it counts its calls.
	wrapper := filepath.Join(dir, "trial.sh")
	require.NoError(t, os.WriteFile(wrapper, []byte(`#!/bin/sh
echo x >> "`+work+`/calls"
if [ -e "`+work+`/hang" ] && [ "$(wc -l < "`+work+`/calls")" -gt 3 ]; then
	touch "`+work+`/hung"
	exec sleep 300
fi
exec "`+execSim+`"
`), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(work, "hang"), nil, 0o644))
	args := []string{"simulate", "--topology", "1/2/1/2", "--users", "1000,1100,1200,1300,1400", "--runtime", "20s",
		"--ramp-up", "10s", "--parallel", "1", "--output", "json"}
	command := func(extra ...string) *osexec.Cmd {
		cmd := osexec.Command(softalloc, append(append([]string{}, args...), extra...)...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "SOFTALLOC="+softalloc)
		return cmd
	}
	viaExec := []string{"--runner", "exec", "--runner-cmd", wrapper, "--journal", "journal.jsonl"}

	cmd := command(viaExec...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(work, "hung"))
		return err == nil
	}, 60*time.Second, 10*time.Millisecond, "the fourth experiment never started: %s", &stderr)
	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		require.Error(t, err, "an interrupted campaign fails")
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("softalloc did not stop after SIGINT: %s", &stderr)
	}
	assert.Contains(t, stderr.String(), "softalloc: interrupted")
	journal, err := os.ReadFile(filepath.Join(work, "journal.jsonl"))
	require.NoError(t, err)
	assert.Equal(t, 3, strings.Count(strings.TrimSpace(string(journal)), "\n")+1, "three finished experiments journaled")

	require.NoError(t, os.Remove(filepath.Join(work, "hang")))
	again := command(viaExec...)
	var out, errb bytes.Buffer
	again.Stdout, again.Stderr = &out, &errb
	require.NoError(t, again.Run(), errb.String())
	calls, err := os.ReadFile(filepath.Join(work, "calls"))
	require.NoError(t, err)
	assert.Equal(t, 4+2, strings.Count(string(calls), "\n"), "only the two missing experiments ran again")

	sim := command("--runner", "sim", "--no-journal")
	want, err := sim.Output()
	require.NoError(t, err)
	assert.JSONEq(t, string(want), out.String())
}

func TestRefusesUnknownVersion(t *testing.T) {
	var out, errb bytes.Buffer
	err := run(strings.NewReader(`{"protocolVersion": 3}`), &out, &errb)
	assert.ErrorContains(t, err, "protocol version 3: this program speaks 1 and 2")
	assert.Empty(t, out.String())
	err = run(strings.NewReader(`{"protocolVersion": 1, "ramp": true}`+"\n"), &out, &errb)
	assert.ErrorContains(t, err, "a ramp in protocol version 1: ramps are version 2")
	assert.Empty(t, out.String())
}

// A ramp through the exec runner (protocol version 2) on exec-sim is the
// sim runner's ramp: the same windows for the same steps, and
// find-critical --ramp gives the same answer from the same windows. A
// program of version 1 (the default) is refused a ramp before any trial.
func TestExecSimRampEqualsSimRamp(t *testing.T) {
	dir := t.TempDir()
	softalloc, execSim := build(t, dir)
	t.Setenv("SOFTALLOC", softalloc)

	t.Run("windows", func(t *testing.T) {
		d, err := topology.ParseTopology("1/2/1/2")
		require.NoError(t, err)
		alloc, err := topology.ParseAllocation("400-150-60")
		require.NoError(t, err)
		rp := algorithms.Ramp{Deployment: d, Allocation: alloc, From: 500,
			Timing: algorithms.Timing{RampUp: 10 * time.Second, Runtime: 2 * time.Minute, Precision: 0.02, SLAs: []float64{2}}}
		// Rise twice, measure the last level again at a finer precision, end.
		steps := []algorithms.RampStep{{Users: 3000}, {Users: 5000}, {Users: 5000, Precision: 0.01}, {}}
		ramp := func(rp2 algorithms.Ramper) []algorithms.RampWindow {
			var ws []algorithms.RampWindow
			require.NoError(t, rp2.RunRamp(context.Background(), rp, func(w algorithms.RampWindow) (algorithms.RampStep, error) {
				ws = append(ws, w)
				return steps[len(ws)-1], nil
			}))
			return ws
		}
		r, err := exec.New([]string{execSim})
		require.NoError(t, err)
		var log bytes.Buffer
		r.Log, r.Protocol = &log, exec.RampProtocolVersion
		got := ramp(r)
		want := ramp(sim.Runner{Seed: 1})
		require.Len(t, got, len(steps), log.String())
		assert.Equal(t, want, got)
		assert.Equal(t, 0.01, got[3].Observation.Window.Precision, "the refined window ran to its step's precision")
		assert.Contains(t, log.String(), "ramp on 1/2/1/2 from 500 users")
	})

	t.Run("find-critical", func(t *testing.T) {
		work := t.TempDir()
		findCritical := func(runner ...string) (string, string, error) {
			// The steps given: the exec runner derives those not given
			// (the sim runner keeps the defaults), and where from differs.
			args := append([]string{"find-critical", "--ramp", "--topology", "1/2/1/2", "--ramp-up", "10s", "--runtime", "2m",
				"--ramp-down", "0s", "--step", "500", "--small-step", "100", "--no-journal", "--output", "json"}, runner...)
			cmd := osexec.Command(softalloc, args...)
			cmd.Dir = work
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			return stdout.String(), stderr.String(), err
		}
		viaSim, errs, err := findCritical("--runner", "sim")
		require.NoError(t, err, errs)
		viaExec, errs, err := findCritical("--runner", "exec", "--runner-cmd", execSim, "--runner-protocol", "2")
		require.NoError(t, err, errs)
		// Only where the scan span came from may differ (the exec runner
		// derives it as 3 steps: 1,500 users, the sim runner's default).
		var simDoc, execDoc map[string]any
		require.NoError(t, json.Unmarshal([]byte(viaSim), &simDoc))
		require.NoError(t, json.Unmarshal([]byte(viaExec), &execDoc))
		for _, d := range []map[string]any{simDoc, execDoc} {
			require.IsType(t, map[string]any{}, d["steps"])
			delete(d["steps"].(map[string]any), "from")
		}
		assert.Equal(t, simDoc, execDoc)
		var doc struct {
			Critical struct{ Resource string }
			Ramp     struct{ Windows []struct{ Users int } }
		}
		require.NoError(t, json.Unmarshal([]byte(viaExec), &doc))
		assert.Equal(t, "cpu", doc.Critical.Resource)
		assert.Greater(t, len(doc.Ramp.Windows), 3, "a ramp of several windows ran through the program")

		out, errs, err := findCritical("--runner", "exec", "--runner-cmd", execSim)
		var ee *osexec.ExitError
		require.ErrorAs(t, err, &ee, errs)
		assert.Equal(t, 2, ee.ExitCode(), "a usage error")
		assert.Contains(t, errs, "--ramp: the exec program speaks protocol version 1, and a ramp needs version 2")
		assert.Empty(t, out)
	})
}

func TestDeploymentYAML(t *testing.T) {
	var e experiment
	require.NoError(t, json.Unmarshal([]byte(`{"protocolVersion": 1, "topology": "shop", "tiers": [
		{"name": "nginx", "role": "web", "replicas": 1, "cores": 2, "pools": {"threads": 200}},
		{"name": "postgres", "role": "db", "replicas": 1, "cores": 4, "pools": {}}],
		"workload": {"users": 10}, "timing": {"rampUpSeconds": 1, "runtimeSeconds": 2, "rampDownSeconds": 0}}`), &e))
	df, err := topology.ParseDeployment(deploymentYAML(e), "test")
	require.NoError(t, err)
	assert.Equal(t, "shop", df.Deployment.Topology)
	assert.Equal(t, algorithms.Allocation{"nginx": {Threads: 200}}, df.Allocation)
	assert.Equal(t, 4, df.Deployment.Tiers[1].Cores)
}
