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
// Environment: SOFTALLOC is the softalloc binary (default: softalloc on
// PATH); SOFTALLOC_SEED the simulator's seed (default 1).
package main

import (
	"bytes"
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
)

// protocolVersion is the exec protocol version this program speaks.
const protocolVersion = 1

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
}

func main() {
	if err := run(os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "exec-sim: %v\n", err)
		os.Exit(1)
	}
}

func run(stdin io.Reader, stdout, stderr io.Writer) error {
	var e experiment
	if err := json.NewDecoder(stdin).Decode(&e); err != nil {
		return fmt.Errorf("read experiment: %w", err)
	}
	if e.ProtocolVersion != protocolVersion {
		return fmt.Errorf("protocol version %d: this program speaks %d", e.ProtocolVersion, protocolVersion)
	}
	bin := os.Getenv("SOFTALLOC")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("softalloc"); err != nil {
			return fmt.Errorf("set SOFTALLOC to the softalloc binary, or put softalloc on PATH: %w", err)
		}
	}
	seed := os.Getenv("SOFTALLOC_SEED")
	if seed == "" {
		seed = "1"
	}
	if _, err := strconv.ParseUint(seed, 10, 64); err != nil {
		return fmt.Errorf("SOFTALLOC_SEED %q: want a non-negative integer", seed)
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
	obs["protocolVersion"] = json.RawMessage(strconv.Itoa(protocolVersion))
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
