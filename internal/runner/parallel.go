package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/softalloc/softalloc/algorithms"
)

// RunParallel runs independent experiments, at most parallel at once, and
// returns the observations in the order of exps. Each experiment's result
// depends on the experiment alone, so the numbers equal a serial run's.
func RunParallel(ctx context.Context, x algorithms.Experimenter, exps []algorithms.Experiment, parallel int) ([]algorithms.Observation, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	obs := make([]algorithms.Observation, len(exps))
	errs := make([]error, len(exps))
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(parallel, len(exps)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if obs[i], errs[i] = x.RunExperiment(ctx, exps[i]); errs[i] != nil {
					cancel()
				}
			}
		}()
	}
feed:
	for i := range exps {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	// Report the failure that cancelled the others, not a cancellation.
	first := -1
	for i, err := range errs {
		if err != nil && (first < 0 || errors.Is(errs[first], context.Canceled) && !errors.Is(err, context.Canceled)) {
			first = i
		}
	}
	if first >= 0 {
		e := exps[first]
		return nil, fmt.Errorf("%s at %d users: %w", e.Allocation.Key(), e.Workload.Users, errs[first])
	}
	// No experiment failed, yet the context ended: the caller cancelled.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return obs, nil
}
