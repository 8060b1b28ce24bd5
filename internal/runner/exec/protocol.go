package exec

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/wire"
)

// ProtocolVersion is the version of the messages below that a program is
// spoken to in unless it says it speaks more (Runner.Protocol). A change
// that an existing program could misread (a field renamed, a unit changed)
// bumps it; a program must refuse a version it does not know.
const ProtocolVersion = 1

// RampProtocolVersion is the version that adds the ramp: one experiment
// whose load rises level by level without a reset, a window per level on
// the program's stdout and the next level on its stdin
// (docs/exec-protocol.md). Its trials are version 1's, but for the number.
const RampProtocolVersion = 2

// Request is the experiment message, written as one JSON object (and a
// newline) on the program's stdin. docs/exec-protocol.md documents it.
type Request struct {
	ProtocolVersion int `json:"protocolVersion"`
	// ExperimentID is stable: the same experiment always gets the same id,
	// so a program may use it to name result directories or resume work.
	ExperimentID string `json:"experimentId"`
	// Attempt counts from 1; a retry of the same experiment has the same id
	// and a higher attempt.
	Attempt  int           `json:"attempt"`
	Topology string        `json:"topology"`
	Tiers    []RequestTier `json:"tiers"`
	// Allocation repeats the tiers' pools keyed by tier name, for programs
	// that look a tier up rather than walk the list.
	Allocation map[string]wire.Pools `json:"allocation"`
	Workload   wire.Workload         `json:"workload"`
	Timing     wire.Timing           `json:"timing"`
	// Ramp (version 2) makes the experiment a ramp: Workload.Users is its
	// first level, and after each window the program reads a RampStep.
	Ramp bool `json:"ramp,omitempty"`
}

// RampStep is what softalloc writes on a ramp's stdin after each window:
// rise to Users (the same users: another window at that level), or end the
// ramp when Users is 0. Precision, when set, is the next window's in place
// of the experiment's (a window within the noise measured again).
type RampStep struct {
	Users     int     `json:"users"`
	Precision float64 `json:"precision,omitempty"`
}

// RampWindow places a window of a ramp (version 2): the observation of a
// level, printed as one line on stdout, carries it as its "ramp" field.
type RampWindow struct {
	// Users is the level's, the users the program was last asked for.
	Users int `json:"users"`
	// StartSeconds and EndSeconds are the window's edges, seconds since
	// the ramp's load began on the program's clock.
	StartSeconds float64 `json:"startSeconds"`
	EndSeconds   float64 `json:"endSeconds"`
}

// RequestTier is one tier of the chain, front first.
type RequestTier struct {
	Name     string `json:"name"`
	Role     string `json:"role"`
	Replicas int    `json:"replicas"`
	Cores    int    `json:"cores"`
	// Pools are the per-server sizes to set; a pool the tier does not have
	// of its own (a database's threads follow upstream connections) is absent.
	Pools wire.Pools `json:"pools"`
	// Servers are the names the observation must use for this tier's
	// servers, in order; spelled out so programs need not know the rule.
	Servers []string `json:"servers"`
}

// Response is the observation message a program prints on stdout: the
// observation's fields plus the protocol version, all in one JSON object.
type Response struct {
	ProtocolVersion int `json:"protocolVersion"`
	wire.Observation
	// Ramp is a ramp's window's place (version 2 only; absent in a trial).
	Ramp *RampWindow `json:"ramp,omitempty"`
}

// NewRequest builds the message for experiment e (attempt 1).
func NewRequest(e algorithms.Experiment) (Request, error) { return newRequest(e, false) }

// NewRampRequest builds the message of a ramp (version 2, attempt 1) on
// e's deployment and allocation, from e's users, its windows timed by e's
// timing. Its id is not a trial's at the same users.
func NewRampRequest(e algorithms.Experiment) (Request, error) {
	if !e.Timing.Adaptive() {
		return Request{}, fmt.Errorf("ramp: want windows measured to a precision, got precision %g", e.Timing.Precision)
	}
	return newRequest(e, true)
}

func newRequest(e algorithms.Experiment, ramp bool) (Request, error) {
	if len(e.Deployment.Tiers) == 0 {
		return Request{}, fmt.Errorf("experiment: want at least one tier")
	}
	if e.Workload.Users < 1 {
		return Request{}, fmt.Errorf("experiment: want at least one user, got %d", e.Workload.Users)
	}
	if e.Timing.Runtime <= 0 || e.Timing.RampUp < 0 || e.Timing.RampDown < 0 {
		return Request{}, fmt.Errorf("experiment: want runtime > 0, ramp-up and ramp-down >= 0, got %v, %v, %v",
			e.Timing.Runtime, e.Timing.RampUp, e.Timing.RampDown)
	}
	r := Request{
		ProtocolVersion: ProtocolVersion,
		Topology:        e.Deployment.Topology,
		Allocation:      map[string]wire.Pools{},
		Workload:        wire.Workload{Users: e.Workload.Users},
		Timing:          wire.FromTiming(e.Timing),
		Ramp:            ramp,
	}
	if ramp {
		r.ProtocolVersion = RampProtocolVersion
	}
	for _, t := range e.Deployment.Tiers {
		rt := RequestTier{Name: t.Name, Role: t.Role, Replicas: t.Replicas, Cores: t.Cores, Servers: []string{}}
		// Only the pools the deployment says the allocation sets: the
		// program must not be told to set a pool the tier lacks.
		for _, p := range t.Pools {
			n := e.Allocation[t.Name].Size(p)
			if n < 1 {
				return Request{}, fmt.Errorf("experiment: tier %q: allocation sets no %s pool size", t.Name, p)
			}
			switch p {
			case algorithms.PoolThreads:
				rt.Pools.Threads = n
			case algorithms.PoolConnections:
				rt.Pools.Connections = n
			}
		}
		if len(t.Pools) > 0 {
			r.Allocation[t.Name] = rt.Pools
		}
		for i := 0; i < t.Replicas; i++ {
			rt.Servers = append(rt.Servers, t.ServerName(i))
		}
		r.Tiers = append(r.Tiers, rt)
	}
	// The id is a digest of the message itself (before id and attempt are
	// set): everything that defines the experiment, and nothing else.
	b, err := json.Marshal(r)
	if err != nil {
		return Request{}, fmt.Errorf("experiment: %w", err)
	}
	sum := sha256.Sum256(b)
	prefix := unsafeInID.ReplaceAllString(r.Topology, "-")
	if len(prefix) > 40 {
		prefix = prefix[:40]
	}
	if prefix == "" {
		prefix = "exp"
	}
	if ramp {
		prefix += "-ramp"
	}
	r.ExperimentID = prefix + "-u" + strconv.Itoa(r.Workload.Users) + "-" + hex.EncodeToString(sum[:6])
	r.Attempt = 1
	return r, nil
}

// unsafeInID is what the readable prefix of an id drops, so that the id is
// safe as a file name, a log prefix and a shell word.
var unsafeInID = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// ExperimentID is the stable id of experiment e: "1-2-1-2-u6000-3f2a9c1b7d4e".
// The readable prefix helps in logs; the digest of the experiment message
// (map keys sorted, so canonical) tells apart experiments that differ only
// in allocation or timing.
func ExperimentID(e algorithms.Experiment) (string, error) {
	r, err := NewRequest(e)
	return r.ExperimentID, err
}
