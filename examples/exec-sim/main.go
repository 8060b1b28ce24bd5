// Command exec-sim is a program for softalloc's exec runner that answers
// every experiment from softalloc's own simulator: it reads the experiment
// on stdin, runs `softalloc simulate --output observation` for it, and
// prints that observation with the protocol version. The exec path is thus
// exercised end to end, and gives the sim runner's numbers for the same
// seed.
//
// It is also the smallest complete exec program, in Go: read the
// experiment, refuse an unknown protocol version, act, print one JSON
// object on stdout, diagnostics on stderr, exit non-zero on failure.
//
// It speaks protocol version 2 too (run it with --runner-protocol 2): a
// trial is answered as in version 1, and a ramp (the experiment's ramp
// field) is one simulation whose users grow as softalloc's steps on stdin
// ask, a window per level printed on stdout as it ends: the simulator's own
// ramp (the sim runner's --ramp), in this process.
//
// Environment: SOFTALLOC is the softalloc binary (default: softalloc on
// PATH; a ramp does not need it); SOFTALLOC_SEED the simulator's seed
// (default 1).
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/softalloc/softalloc/algorithms"
	execrunner "github.com/softalloc/softalloc/internal/runner/exec"
	"github.com/softalloc/softalloc/internal/sim"
	"github.com/softalloc/softalloc/internal/topology"
	"github.com/softalloc/softalloc/internal/wire"
)

// protocolVersions are the exec protocol versions this program speaks.
const minProtocolVersion, maxProtocolVersion = 1, 2

// experiment is the part of the experiment message this program needs;
// the protocol lets a program ignore the rest.
type experiment struct {
	ProtocolVersion int    `json:"protocolVersion"`
	ExperimentID    string `json:"experimentId"`
	Topology        string `json:"topology"`
	Tiers           []struct {
		Name     string `json:"name"`
		Role     string `json:"role"`
		Replicas int    `json:"replicas"`
		Cores    int    `json:"cores"`
		Pools    struct {
			Threads     int `json:"threads"`
			Connections int `json:"connections"`
		} `json:"pools"`
	} `json:"tiers"`
	Workload algorithms.Workload `json:"workload"`
	Timing   algorithms.Timing   `json:"timing"`
	Ramp     bool                `json:"ramp"`
}

func main() {
	if err := run(os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "exec-sim: %v\n", err)
		os.Exit(1)
	}
}

func run(stdin io.Reader, stdout, stderr io.Writer) error {
	// A ramp's steps follow the experiment on stdin: one reader for all.
	in := bufio.NewReader(stdin)
	var e experiment
	line, err := in.ReadBytes('\n')
	if err != nil && err != io.EOF {
		return fmt.Errorf("read experiment: %w", err)
	}
	if err := json.Unmarshal(line, &e); err != nil {
		return fmt.Errorf("read experiment: %w", err)
	}
	if e.ProtocolVersion < minProtocolVersion || e.ProtocolVersion > maxProtocolVersion {
		return fmt.Errorf("protocol version %d: this program speaks %d and %d", e.ProtocolVersion, minProtocolVersion, maxProtocolVersion)
	}
	seed := os.Getenv("SOFTALLOC_SEED")
	if seed == "" {
		seed = "1"
	}
	seedN, err := strconv.ParseUint(seed, 10, 64)
	if err != nil {
		return fmt.Errorf("SOFTALLOC_SEED %q: want a non-negative integer", seed)
	}
	if e.Ramp {
		if e.ProtocolVersion < 2 {
			return fmt.Errorf("a ramp in protocol version %d: ramps are version 2", e.ProtocolVersion)
		}
		return runRamp(e, seedN, in, stdout, stderr)
	}
	bin := os.Getenv("SOFTALLOC")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("softalloc"); err != nil {
			return fmt.Errorf("set SOFTALLOC to the softalloc binary, or put softalloc on PATH: %w", err)
		}
	}
	dir, err := os.MkdirTemp("", "exec-sim-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	deployment := filepath.Join(dir, "deployment.yaml")
	if err := os.WriteFile(deployment, deploymentYAML(e), 0o644); err != nil {
		return err
	}

	// The experiment as a deployment file (tiers and pool sizes) plus flags
	// (users, timing, seed): simulate then runs exactly this experiment.
	args := []string{"simulate", "--deployment", deployment,
		"--users", strconv.Itoa(e.Workload.Users),
		"--ramp-up", e.Timing.RampUp.String(),
		"--runtime", e.Timing.Runtime.String(),
		"--ramp-down", e.Timing.RampDown.String(),
		"--seed", seed, "--parallel", "1", "--output", "observation",
		// The softalloc that runs this program journals the experiment;
		// a second journal here would only litter the working directory.
		"--no-journal"}
	// An adaptive trial (docs/exec-protocol.md): the simulator runs it to
	// the precision itself and reports the intervals.
	if e.Timing.Precision > 0 {
		args = append(args, "--precision", strconv.FormatFloat(e.Timing.Precision, 'g', -1, 64))
		if len(e.Timing.SLAs) > 0 {
			var slas []string
			for _, s := range e.Timing.SLAs {
				slas = append(slas, strconv.FormatFloat(s, 'g', -1, 64))
			}
			args = append(args, "--sla", strings.Join(slas, ","))
		}
		if e.Timing.GoodputOnly {
			args = append(args, "--goodput-only")
		}
	} else {
		args = append(args, "--fixed")
	}
	cmd := exec.Command(bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, stderr
	fmt.Fprintf(stderr, "simulating %s: %d users, seed %s\n", e.Topology, e.Workload.Users, seed)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("softalloc simulate: %w", err)
	}

	// Add the protocol version to the observation without decoding its
	// numbers into floats and back: the answer stays byte for byte the
	// simulator's.
	var obs map[string]json.RawMessage
	dec := json.NewDecoder(&out)
	if err := dec.Decode(&obs); err != nil {
		return fmt.Errorf("softalloc simulate printed no observation: %w", err)
	}
	if dec.More() {
		return fmt.Errorf("softalloc simulate printed more than one observation")
	}
	obs["protocolVersion"] = json.RawMessage(strconv.Itoa(e.ProtocolVersion))
	return json.NewEncoder(stdout).Encode(obs)
}

// validName is what a deployment file accepts as a name.
var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// deploymentYAML writes the experiment's chain as a softalloc deployment
// file. Its pools are the experiment's allocation. A topology in the
// notation ("1/2/1/2") needs no name: the file's tiers are the notation's.
func deploymentYAML(e experiment) []byte {
	var b strings.Builder
	if validName.MatchString(e.Topology) {
		fmt.Fprintf(&b, "name: %s\n", e.Topology)
	}
	b.WriteString("tiers:\n")
	for _, t := range e.Tiers {
		fmt.Fprintf(&b, "  - name: %s\n    role: %s\n    replicas: %d\n    cores: %d\n", t.Name, t.Role, t.Replicas, t.Cores)
		if t.Pools.Threads > 0 || t.Pools.Connections > 0 {
			b.WriteString("    pools:\n")
			if t.Pools.Threads > 0 {
				fmt.Fprintf(&b, "      threads: %d\n", t.Pools.Threads)
			}
			if t.Pools.Connections > 0 {
				fmt.Fprintf(&b, "      connections: %d\n", t.Pools.Connections)
			}
		}
	}
	return []byte(b.String())
}

// runRamp runs the ramp as the sim runner does (sim.Runner.RunRamp, one
// simulation, never reset): after each level's window it prints the window
// and reads the next step; {"users": 0} or the end of stdin ends it.
func runRamp(e experiment, seed uint64, in *bufio.Reader, stdout, stderr io.Writer) error {
	df, err := topology.ParseDeployment(deploymentYAML(e), "the experiment")
	if err != nil {
		return fmt.Errorf("the experiment's tiers: %w", err)
	}
	d := df.Deployment
	if d.Topology == "" || !validName.MatchString(e.Topology) {
		d.Topology = e.Topology
	}
	rp := algorithms.Ramp{Deployment: d, Allocation: df.Allocation, From: e.Workload.Users, Timing: e.Timing}
	fmt.Fprintf(stderr, "ramp on %s from %d users, seed %d\n", e.Topology, e.Workload.Users, seed)
	enc := json.NewEncoder(stdout)
	return sim.Runner{Seed: seed}.RunRamp(context.Background(), rp, func(w algorithms.RampWindow) (algorithms.RampStep, error) {
		msg := execrunner.Response{ProtocolVersion: e.ProtocolVersion, Observation: wire.FromObservation(w.Observation),
			Ramp: &execrunner.RampWindow{Users: w.Users, StartSeconds: w.Start, EndSeconds: w.End}}
		if err := enc.Encode(msg); err != nil {
			return algorithms.RampStep{}, fmt.Errorf("print window %d: %w", w.Index, err)
		}
		line, err := in.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) == 0 && err == io.EOF {
			return algorithms.RampStep{}, nil // softalloc is gone or done: end
		}
		var step execrunner.RampStep
		if jerr := json.Unmarshal(line, &step); jerr != nil {
			return algorithms.RampStep{}, fmt.Errorf("read the step after window %d: %w", w.Index, jerr)
		}
		fmt.Fprintf(stderr, "window %d at %d users: %.1f pages/s; next: %d users\n", w.Index, w.Users, w.Observation.Throughput, step.Users)
		return algorithms.RampStep{Users: step.Users, Precision: step.Precision}, nil
	})
}
