package cli

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/softalloc/softalloc/algorithms"
)

// progressUI shows a long campaign on a terminal: a live line with the
// procedure, the running experiment, how many are done, the elapsed time and
// an estimate for the running experiment, and above it one line per finished
// experiment. Off a terminal, or with --quiet, it is nil and prints nothing.
type progressUI struct {
	p     *mpb.Progress
	bar   *mpb.Bar
	mu    sync.Mutex
	start time.Time
	// state of the running experiment
	procedure string
	current   string
	began     time.Time
	done      int
	spent     time.Duration
}

func newProgress(ctx context.Context, s Streams, quiet bool) *progressUI {
	if quiet || !s.ErrIsTerminal {
		return nil
	}
	u := &progressUI{start: time.Now()}
	u.p = mpb.NewWithContext(ctx, mpb.WithOutput(s.Err), mpb.WithRefreshRate(200*time.Millisecond))
	u.bar = u.p.New(0, mpb.SpinnerStyle(), mpb.PrependDecorators(decor.Any(func(decor.Statistics) string { return u.status() })))
	return u
}

func (u *progressUI) status() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	est := "estimate after the first experiment"
	if u.done > 0 {
		mean := u.spent / time.Duration(u.done)
		left := mean - time.Since(u.began)
		if left < 0 {
			left = 0
		}
		est = fmt.Sprintf("~%s left of this one (mean %s)", left.Round(time.Second), mean.Round(100*time.Millisecond))
	}
	return fmt.Sprintf("%s: %s | %d done | %s elapsed | %s", u.procedure, u.current, u.done,
		time.Since(u.start).Round(time.Second), est)
}

// options hooks the display into the algorithm's callbacks.
func (u *progressUI) options(o *algorithms.Options) {
	if u == nil {
		return
	}
	o.OnStart = func(procedure string, e algorithms.Experiment) {
		u.mu.Lock()
		defer u.mu.Unlock()
		u.procedure = procedure
		u.current = fmt.Sprintf("%s at %d users", formatAllocation(e.Allocation), e.Workload.Users)
		u.began = time.Now()
	}
	o.OnTrial = func(t algorithms.Trial) {
		u.mu.Lock()
		u.done++
		u.spent += time.Since(u.began)
		n := u.done
		u.mu.Unlock()
		sat := "none"
		if len(t.Saturated) > 0 {
			sat = strings.Join(t.Saturated, " ")
		}
		fmt.Fprintf(u.p, "%3d %-14s %-12s %6d users %8.1f pages/s  saturated: %s\n", n, t.Procedure,
			formatAllocation(t.Experiment.Allocation), t.Experiment.Workload.Users, t.Observation.Throughput, sat)
	}
}

// close ends the display and waits until it has stopped drawing.
func (u *progressUI) close() {
	if u == nil {
		return
	}
	u.bar.Abort(true)
	u.p.Wait()
}
