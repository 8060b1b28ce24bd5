package algorithms

import (
	"context"
	"fmt"
)

// Recommendation is the whole of Algorithm 1 on one deployment.
type Recommendation struct {
	Critical    Critical             `json:"critical"`
	MinJobs     MinJobs              `json:"minJobs"`
	Sizing      Sizing               `json:"sizing"`
	Allocation  Allocation           `json:"allocation"`
	Tiers       []TierRecommendation `json:"tiers"`
	Experiments int                  `json:"experiments"`
	// Range, when measured or predicted, is the bounding pool's range of
	// sizes within 1% of the best goodput.
	Range *PoolRange `json:"range,omitempty"`
	// Replicas answers for every count of a replica range, with the
	// database's connection limit and a pooler (nil: the deployment
	// declares none of them).
	Replicas *ReplicaPlan `json:"replicas,omitempty"`
}

// Recommend runs the three procedures from the initial allocation s0.
// Experiments counts distinct experiments: one the second procedure repeats
// from the first is answered from memory, as a lab notebook would.
func Recommend(ctx context.Context, x Experimenter, d Deployment, s0 Allocation, opts Options) (Recommendation, error) {
	var rec Recommendation
	memo := &memoExperimenter{x: x, seen: map[string]Observation{}}
	c, err := FindCriticalResource(ctx, memo, d, s0, opts)
	rec.Critical, rec.Experiments = c, len(memo.seen)
	if err != nil {
		return rec, err
	}
	if c.Steps != nil {
		// The steps find-critical derived are the campaign's.
		opts = c.Steps.Apply(opts)
		opts.DeriveSteps = StepsToDerive{}
	}
	m, err := InferMinConcurrentJobs(ctx, memo, d, c, opts)
	rec.MinJobs, rec.Experiments = m, len(memo.seen)
	if err != nil {
		return rec, err
	}
	// A pool full where minJobs was read bounds what it could read (issue
	// 39): doubled, only it, and read again where the critical resource
	// saturates with it, never lower (unbound.go).
	c, m, err = unboundMinJobs(ctx, memo, d, c, m, opts)
	rec.Critical, rec.MinJobs, rec.Experiments = c, m, len(memo.seen)
	if err != nil {
		return rec, err
	}
	sz, err := CalculateMinAllocation(d, c.Tier, m.MinJobs, m.Measurements)
	if err != nil {
		return rec, fmt.Errorf("calculate-min-allocation: %w", err)
	}
	rec.Sizing = sz
	rec.Allocation, rec.Tiers = RecommendAllocation(d, sz, c.Reserve)
	rec.Replicas = PlanReplicas(d, sz, c.Reserve, m.Measurements)
	return rec, nil
}

// key identifies an experiment: two with the same key are the same trial.
func (e Experiment) key() string {
	return fmt.Sprintf("%s|%s|%d|%v", e.Deployment.Topology, e.Allocation.Key(), e.Workload.Users, e.Timing)
}

// memoExperimenter answers a repeated experiment from memory.
type memoExperimenter struct {
	x    Experimenter
	seen map[string]Observation
}

func (m *memoExperimenter) RunExperiment(ctx context.Context, e Experiment) (Observation, error) {
	k := e.key()
	if o, ok := m.seen[k]; ok {
		return o, nil
	}
	o, err := m.x.RunExperiment(ctx, e)
	if err == nil {
		m.seen[k] = o
	}
	return o, err
}
