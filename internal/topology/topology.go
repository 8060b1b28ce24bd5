// Package topology turns the short notations of the paper (topology
// "1/4/1/4", allocation "400-150-60") and deployment files into the model of
// package algorithms, with errors that name the bad value and the form wanted.
package topology

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/softalloc/softalloc/algorithms"
)

// Limits on numbers read from the user. They are far above any real
// deployment; their job is to turn a typo (an extra digit, a pasted port
// number) into an error instead of a simulation that never ends.
const (
	MaxReplicas = 1024
	MaxCores    = 1024
	MaxPoolSize = 100000
)

// Error is a topology, allocation or deployment file that cannot be used:
// the value at fault and what was wrong with it. Commands tell it apart from
// failures of the work itself with errors.As, to report a usage error.
type Error struct {
	Kind  string // "topology", "allocation" or "deployment"
	Value string // the text, or the deployment file's name
	Msg   string // what was wrong, and what was expected
	Err   error  // the underlying error, if any
}

func (e *Error) Error() string {
	s := fmt.Sprintf("%s %q: %s", e.Kind, e.Value, e.Msg)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

const topologyForms = "want #W/#A/#C/#D (e.g. 1/4/1/4) or #W/#A/#D (e.g. 1/2/1)"

// The tiers of the notation, front first. One C-JDBC thread and one MySQL
// thread exist per app DB connection, so cluster and db have no pools of
// their own: their concurrency comes from the app tier's connection pool.
var (
	standardTiers4 = []algorithms.Tier{
		{Name: "web", Role: algorithms.RoleWeb, Cores: 1, Pools: []string{algorithms.PoolThreads}},
		{Name: "app", Role: algorithms.RoleApp, Cores: 1, Pools: []string{algorithms.PoolThreads, algorithms.PoolConnections}},
		{Name: "cluster", Role: algorithms.RoleCluster, Cores: 1},
		{Name: "db", Role: algorithms.RoleDB, Cores: 1},
	}
	standardTiers3 = []algorithms.Tier{standardTiers4[0], standardTiers4[1], standardTiers4[3]}
)

// ParseTopology reads "#W/#A/#C/#D" (tiers web, app, cluster, db) or
// "#W/#A/#D" (web, app, db): the number of servers in each tier, each server
// with one core. The result's Topology is the canonical notation.
func ParseTopology(s string) (algorithms.Deployment, error) {
	fail := func(format string, args ...any) (algorithms.Deployment, error) {
		return algorithms.Deployment{}, &Error{Kind: "topology", Value: s, Msg: fmt.Sprintf(format, args...)}
	}
	t := strings.TrimSpace(s)
	if t == "" {
		return fail("%s, got an empty string", topologyForms)
	}
	parts := strings.Split(t, "/")
	var tiers []algorithms.Tier
	switch len(parts) {
	case 4:
		tiers = standardTiers4
	case 3:
		tiers = standardTiers3
	default:
		return fail("%s, got %s", topologyForms, plural(len(parts), "number"))
	}
	d := algorithms.Deployment{Tiers: make([]algorithms.Tier, len(tiers))}
	for i, p := range parts {
		n, msg := parseCount(p, MaxReplicas)
		if msg != "" {
			return fail("replica count %q %s", p, msg)
		}
		d.Tiers[i] = tiers[i]
		d.Tiers[i].Pools = slices.Clone(tiers[i].Pools) // callers may edit theirs
		d.Tiers[i].Replicas = n
	}
	d.Topology = FormatTopology(d)
	return d, nil
}

// FormatTopology gives the notation of a deployment of the shape ParseTopology
// returns, e.g. "1/4/1/4", and "" for any other deployment (other tiers, more
// cores, other pools), which the notation cannot express.
func FormatTopology(d algorithms.Deployment) string {
	var want []algorithms.Tier
	switch len(d.Tiers) {
	case 4:
		want = standardTiers4
	case 3:
		want = standardTiers3
	default:
		return ""
	}
	parts := make([]string, len(d.Tiers))
	for i, t := range d.Tiers {
		w := want[i]
		if t.Name != w.Name || t.Role != w.Role || t.Cores != w.Cores || !slices.Equal(t.Pools, w.Pools) || t.Children || t.Permits ||
			t.Replicas < 1 || t.Replicas > MaxReplicas {
			return ""
		}
		parts[i] = strconv.Itoa(t.Replicas)
	}
	return strings.Join(parts, "/")
}

// parseCount reads a decimal number in 1..limit. Only ASCII digits are
// accepted (no sign, no spaces, no 0x), so what parses is what the user meant.
// On failure it returns the tail of a message: "is not a positive integer".
func parseCount(s string, limit int) (int, string) {
	if s == "" {
		return 0, "is not a positive integer"
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, "is not a positive integer"
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n > limit { // only digits, so err is an overflow
		return 0, fmt.Sprintf("is more than the maximum of %d", limit)
	}
	if n == 0 {
		return 0, "is not a positive integer"
	}
	return n, ""
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
