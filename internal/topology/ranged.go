package topology

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/softalloc/softalloc/algorithms"
)

const rangedForms = "want a topology with one tier's replicas as a range min..max, e.g. 1/2..8/1/2"

// ParseTopologyRange reads a topology as ParseTopology does, except that one
// tier's replicas may be a range min..max (1/2..8/1/2, for --topology):
// then the deployment is the one at the range's lowest count and the
// tier's Scaling the range, as a deployment file's replicas: 2..8 gives,
// so that a command answers the notation as it answers the file.
func ParseTopologyRange(s string) (algorithms.Deployment, error) {
	d, _, err := parseRanged(s, "topology")
	return d, err
}

// ParseRangedTopology is ParseTopologyRange for a topology that must have
// its range (evaluate --replicas --topologies).
func ParseRangedTopology(s string) (algorithms.Deployment, error) {
	d, ranged, err := parseRanged(s, "ranged topology")
	if err == nil && ranged < 0 {
		return algorithms.Deployment{}, &Error{Kind: "ranged topology", Value: s, Msg: rangedForms}
	}
	return d, err
}

// parseRanged reads s, its errors of the kind given and naming s, and
// returns the index of the ranged tier (-1 for none).
func parseRanged(s, kind string) (algorithms.Deployment, int, error) {
	fail := func(format string, args ...any) (algorithms.Deployment, int, error) {
		return algorithms.Deployment{}, -1, &Error{Kind: kind, Value: s, Msg: fmt.Sprintf(format, args...)}
	}
	parts := strings.Split(strings.TrimSpace(s), "/")
	ranged := -1
	var sc *algorithms.Scaling
	for i, p := range parts {
		if !strings.Contains(p, "..") {
			continue
		}
		if ranged >= 0 {
			return fail("two ranges, %q and %q; softalloc answers for one autoscaled tier at a time: want one tier's replicas as a range min..max and the others a count, e.g. 1/2..8/1/2",
				FormatReplicas(algorithms.Tier{Replicas: sc.Min, Scaling: sc}), strings.TrimSpace(p))
		}
		n, r, err := ParseReplicas(p)
		if err != nil {
			return fail("%v", err)
		}
		if r == nil || r.Min == r.Max {
			// A range of one count is the count: said, rather than read as
			// a fixed tier the user did not write.
			return fail("range %q: want min below max, e.g. 2..8 (a single count is written %d)", strings.TrimSpace(p), n)
		}
		ranged, sc, parts[i] = i, r, strconv.Itoa(n)
	}
	d, err := ParseTopology(strings.Join(parts, "/"))
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			// The message names what the user wrote, not the rewritten count.
			return fail("%s", e.Msg)
		}
		return fail("%v", err)
	}
	if ranged >= 0 {
		d.Tiers[ranged].Scaling = sc
	}
	return d, ranged, nil
}

// RangedTier is the index of d's tier whose replicas are a range, -1 if
// none is.
func RangedTier(d algorithms.Deployment) int {
	for i, t := range d.Tiers {
		if t.Scaling != nil && t.Scaling.Min < t.Scaling.Max {
			return i
		}
	}
	return -1
}

// FormatRangedTopology writes a deployment ParseTopologyRange gives as it
// reads it: 1/2..8/1/2 (1/2/1/2 without a range).
func FormatRangedTopology(d algorithms.Deployment) string {
	vi := RangedTier(d)
	parts := strings.Split(d.Topology, "/")
	if vi < 0 || len(parts) != len(d.Tiers) {
		return d.Topology
	}
	parts[vi] = FormatReplicas(d.Tiers[vi])
	return strings.Join(parts, "/")
}
