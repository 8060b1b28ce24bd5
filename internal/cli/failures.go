package cli

import (
	"context"
	"sync"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/report"
)

// failureRecorder keeps the last observation of each allocation at each
// workload that its experimenter returned: a comparison reports goodput
// curves alone, and its rows need the failed pages of the trials behind
// them. The last is the one the comparison used (a screened trial measured
// again replaces the first).
type failureRecorder struct {
	x   algorithms.Experimenter
	mu  *sync.Mutex
	obs map[failureKey]algorithms.Observation
	// seed tells one experimenter's (seed's) trials from another's.
	seed int
}

type failureKey struct {
	seed  int
	alloc string
	users int
}

// recordFailures wraps each experimenter, one per seed, into recorders
// that share one record.
func recordFailures(xs []algorithms.Experimenter) ([]algorithms.Experimenter, *failureRecorder) {
	rec := &failureRecorder{mu: &sync.Mutex{}, obs: map[failureKey]algorithms.Observation{}}
	out := make([]algorithms.Experimenter, len(xs))
	for i, x := range xs {
		r := *rec
		r.x, r.seed = x, i
		out[i] = &r
	}
	return out, rec
}

func (r *failureRecorder) RunExperiment(ctx context.Context, e algorithms.Experiment) (algorithms.Observation, error) {
	o, err := r.x.RunExperiment(ctx, e)
	if err == nil {
		r.mu.Lock()
		r.obs[failureKey{r.seed, e.Allocation.Key(), e.Workload.Users}] = o
		r.mu.Unlock()
	}
	return o, err
}

// of is the failed pages of an allocation's trials at the workloads, over
// every seed.
func (r *failureRecorder) of(a algorithms.Allocation, workloads []int, seeds int) report.Failures {
	r.mu.Lock()
	defer r.mu.Unlock()
	var obs []algorithms.Observation
	for s := range seeds {
		for _, u := range workloads {
			if o, ok := r.obs[failureKey{s, a.Key(), u}]; ok {
				obs = append(obs, o)
			}
		}
	}
	return report.ObservationFailures(obs...)
}
