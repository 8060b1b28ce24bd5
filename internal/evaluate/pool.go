package evaluate

import (
	"context"
	"errors"
	"runtime"
	"sync"
)

// job is one independent piece of an evaluation (a topology's campaigns,
// one campaign at a precision, one coverage trial). It runs on a single
// goroutine locked to its own OS thread, so that threadCPUSeconds read
// inside it is its own cost while other jobs run beside it.
type job struct {
	name string
	run  func(ctx context.Context) error
}

// runJobs runs jobs, at most parallel at once, taking them in the order
// given: the longest first packs the cores best. It returns each job's CPU
// time. The first error cancels the jobs still running and is returned,
// named by its job.
func runJobs(ctx context.Context, parallel int, jobs []job) ([]float64, error) {
	if !threadCPU {
		parallel = 1 // a job's CPU is then only its own when it runs alone
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	errs := make([]error, len(jobs))
	cpu := make([]float64, len(jobs))
	var wg sync.WaitGroup
	for range min(max(parallel, 1), len(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			for i := range next {
				t0 := threadCPUSeconds()
				if errs[i] = jobs[i].run(ctx); errs[i] != nil {
					cancel()
				}
				cpu[i] = threadCPUSeconds() - t0
			}
		}()
	}
feed:
	for i := range jobs {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	// The failure that cancelled the others, not a cancellation.
	var first error
	for i, err := range errs {
		if err == nil {
			continue
		}
		err = jobError{jobs[i].name, err}
		if first == nil || errors.Is(first, context.Canceled) && !errors.Is(err, context.Canceled) {
			first = err
		}
	}
	if first != nil {
		return cpu, first
	}
	return cpu, ctx.Err()
}

type jobError struct {
	name string
	err  error
}

func (e jobError) Error() string { return e.name + ": " + e.err.Error() }
func (e jobError) Unwrap() error { return e.err }
