package evaluate

import (
	"context"
	"fmt"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/topology"
)

// CountCampaign is recommend's campaign at one count of a replica range:
// its own trials at that count, not the arithmetic from another count.
type CountCampaign struct {
	Replicas       int
	Deployment     algorithms.Deployment
	Recommendation algorithms.Recommendation
	// Row is the count's pools per replica, totals, peak with surge and
	// what the database sees, from this count's own sizing
	// (algorithms.PlanReplicas on the count alone).
	Row algorithms.ReplicaCount
	// SafeMaxReplicas is that one-count plan's: from this count upwards,
	// by the arithmetic on this count's sizing (nil: nothing bounds it).
	SafeMaxReplicas *int
	// Warnings are the one-count plan's (a count that does not fit).
	Warnings []string
}

// RangedTier is the index of d's tier whose replicas are a range, -1 if
// none is.
func RangedTier(d algorithms.Deployment) int { return topology.RangedTier(d) }

// AtReplicas is d with tier i at n replicas as a deployment of that count
// alone: its range narrowed to n..n (the surge kept, so that the plan of
// the count counts the rollout's pods), and its topology the notation at
// n where d's is the notation (1/2/1/2 -> 1/5/1/2), so that the journal
// keys each count's experiments apart and a campaign at one count is the
// same as recommend --topology at that count.
func AtReplicas(d algorithms.Deployment, i, n int) algorithms.Deployment {
	notation := d.Topology != "" && topology.FormatTopology(d) == d.Topology
	out := algorithms.Deployment{Topology: d.Topology, Tiers: append([]algorithms.Tier(nil), d.Tiers...)}
	t := &out.Tiers[i]
	t.Replicas = n
	if t.Scaling != nil {
		sc := *t.Scaling
		sc.Min, sc.Max = n, n
		t.Scaling = &sc
	}
	if notation {
		out.Topology = topology.FormatTopology(out)
	}
	return out
}

// PerCount runs recommend's campaign (algorithms.Recommend from start with
// opts, on x) at every count of d's replica range, lowest first, one
// after the other: with a deterministic x (the simulator with a seed) the
// answer is the same run after run, and with a journal around x an
// interrupted run resumes where it stopped. done, if not nil, hears of
// each count as it ends. It stops at the first count whose campaign fails,
// returning the counts done before it.
func PerCount(ctx context.Context, x algorithms.Experimenter, d algorithms.Deployment, start algorithms.Allocation,
	opts algorithms.Options, done func(CountCampaign)) ([]CountCampaign, error) {
	vi := RangedTier(d)
	if vi < 0 {
		return nil, fmt.Errorf("per-count campaign of %q: no tier's replicas are a range (replicas: 2..8)", d.Topology)
	}
	sc := *d.Tiers[vi].Scaling
	var out []CountCampaign
	for n := sc.Min; n <= sc.Max; n++ {
		dn := AtReplicas(d, vi, n)
		rec, err := algorithms.Recommend(ctx, x, dn, start, opts)
		if err != nil {
			return out, fmt.Errorf("%s at %d replicas (%s): %w", d.Tiers[vi].Name, n, dn.Topology, err)
		}
		c := CountCampaign{Replicas: n, Deployment: dn, Recommendation: rec}
		// Recommend planned the count with its surge and the database's
		// limit (the range narrowed to n..n): one row.
		if p := rec.Replicas; p != nil && len(p.Counts) == 1 {
			c.Row, c.SafeMaxReplicas, c.Warnings = p.Counts[0], p.SafeMaxReplicas, p.Warnings
		}
		out = append(out, c)
		if done != nil {
			done(c)
		}
	}
	return out, nil
}

// MeasuredSafeMax is the largest count up to which every count from the
// range's lowest fits the limits with the pools its own campaign
// recommends; past the range's top it is the top count's own plan's (the
// arithmetic on the nearest measurement). nil: no limit bounds it; 0: no
// count from the lowest fits.
func MeasuredSafeMax(counts []CountCampaign) *int {
	if len(counts) == 0 || counts[0].Row.Fits == nil {
		return nil
	}
	safe, started := 0, false
	for _, c := range counts {
		switch {
		case c.Row.Fits != nil && *c.Row.Fits:
			safe, started = c.Replicas, true
		case started:
			return &safe
		}
	}
	if !started {
		return &safe
	}
	return counts[len(counts)-1].SafeMaxReplicas
}

// Extrapolated is the plan recommend makes without a campaign per count:
// the arithmetic on the range's lowest count's campaign, the range whole.
func Extrapolated(d algorithms.Deployment, lowest algorithms.Recommendation) *algorithms.ReplicaPlan {
	return algorithms.PlanReplicas(d, lowest.Sizing, lowest.Critical.Reserve, lowest.MinJobs.Measurements)
}
