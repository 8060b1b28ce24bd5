package evaluate

import (
	"context"
	"fmt"
	"runtime"

	"github.com/softalloc/softalloc/algorithms"
)

// job is one independent piece of an evaluation (a topology's campaigns,
// one campaign at a precision, one coverage trial). It runs on a single
// goroutine locked to its OS thread, so that threadCPUSeconds read inside
// it is its own cost while other jobs run beside it.
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
	cpu := make([]float64, len(jobs))
	err := algorithms.ForEach(ctx, max(parallel, 1), len(jobs), func(ctx context.Context, i int) error {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		t0 := threadCPUSeconds()
		err := jobs[i].run(ctx)
		cpu[i] = threadCPUSeconds() - t0
		if err != nil {
			return fmt.Errorf("%s: %w", jobs[i].name, err)
		}
		return nil
	})
	return cpu, err
}
