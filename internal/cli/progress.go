package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/softalloc/softalloc/algorithms"
)

// progressFlags are --progress and its shorthand -q.
type progressFlags struct {
	mode  string
	quiet bool
}

func (f *progressFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.mode, "progress", "auto", "progress on stderr: auto (live on a terminal, plain otherwise), plain (a line per finished experiment, a heartbeat a minute), none")
	fs.BoolVarP(&f.quiet, "quiet", "q", false, "the same as --progress none")
}

// resolve says how to show progress: "live", "plain" or "none".
func (f *progressFlags) resolve(s Streams) (string, error) {
	switch f.mode {
	case "auto", "plain", "none":
	default:
		return "", usagef("--progress %q: want auto, plain or none", f.mode)
	}
	switch {
	case f.quiet || f.mode == "none":
		return "none", nil
	case f.mode == "plain" || !s.ErrIsTerminal:
		return "plain", nil
	}
	return "live", nil
}

// heartbeat is how long plain progress stays silent before saying what runs
// (a variable for the tests).
var heartbeat = time.Minute

// progress shows a command's experiments as they run. Live, on a terminal:
// a status line (procedure, the running experiment, how many are done, the
// time, an estimate) with a line per finished experiment above it. Plain,
// for CI logs: a line per finished experiment, and a heartbeat when a
// minute passes without one, so a log of hours of live trials is never
// silent. A nil *progress shows nothing.
type progress struct {
	w     io.Writer
	mode  string
	p     *mpb.Progress
	bar   *mpb.Bar
	stop  chan struct{}
	done  chan struct{}
	d     algorithms.Deployment
	opts  *algorithms.Options // for what was saturated; nil: not shown
	every time.Duration

	mu        sync.Mutex
	start     time.Time
	procedure string
	running   map[string]time.Time // experiment label -> its start
	finished  int
	spent     time.Duration
	lastLine  time.Time
}

func newProgress(ctx context.Context, s Streams, mode string) *progress {
	if mode == "none" {
		return nil
	}
	u := &progress{w: s.Err, mode: mode, start: time.Now(), running: map[string]time.Time{}, every: heartbeat,
		stop: make(chan struct{}), done: make(chan struct{})}
	u.lastLine = u.start
	if mode == "live" {
		u.p = mpb.NewWithContext(ctx, mpb.WithOutput(s.Err), mpb.WithRefreshRate(200*time.Millisecond))
		u.bar = u.p.New(0, mpb.SpinnerStyle(), mpb.PrependDecorators(decor.Any(func(decor.Statistics) string { return u.status() })))
		u.w = u.p
		close(u.done)
		return u
	}
	go u.beat()
	return u
}

// beat writes a heartbeat whenever plain progress has said nothing for a while.
func (u *progress) beat() {
	defer close(u.done)
	t := time.NewTicker(u.every / 4)
	defer t.Stop()
	for {
		select {
		case <-u.stop:
			return
		case now := <-t.C:
			u.mu.Lock()
			if now.Sub(u.lastLine) >= u.every {
				fmt.Fprintf(u.w, "softalloc: %s\n", u.statusLocked(now))
				u.lastLine = now
			}
			u.mu.Unlock()
		}
	}
}

func (u *progress) status() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.statusLocked(time.Now())
}

func (u *progress) statusLocked(now time.Time) string {
	var b strings.Builder
	if u.procedure != "" {
		b.WriteString(u.procedure + ": ")
	}
	switch len(u.running) {
	case 0:
		b.WriteString("waiting")
	case 1:
		for label, began := range u.running {
			fmt.Fprintf(&b, "running %s for %s", label, now.Sub(began).Round(time.Second))
		}
	default:
		fmt.Fprintf(&b, "running %d experiments", len(u.running))
	}
	fmt.Fprintf(&b, " | %d done | %s elapsed", u.finished, now.Sub(u.start).Round(time.Second))
	if u.finished > 0 {
		fmt.Fprintf(&b, " | mean %s per experiment", (u.spent / time.Duration(u.finished)).Round(100*time.Millisecond))
	}
	return b.String()
}

// campaign tells the display the deployment and options of a campaign, so
// that a finished experiment's line says what was saturated and which of
// Algorithm 1's procedures ran it.
func (u *progress) campaign(d algorithms.Deployment, o *algorithms.Options) {
	if u == nil {
		return
	}
	u.d, u.opts = d, o
	o.OnStart = func(procedure string, _ algorithms.Experiment) {
		u.mu.Lock()
		u.procedure = procedure
		u.mu.Unlock()
	}
}

// wrap shows every experiment x runs.
func (u *progress) wrap(x algorithms.Experimenter) algorithms.Experimenter {
	if u == nil {
		return x
	}
	return progressExperimenter{u: u, x: x}
}

type progressExperimenter struct {
	u *progress
	x algorithms.Experimenter
}

func (p progressExperimenter) RunExperiment(ctx context.Context, e algorithms.Experiment) (algorithms.Observation, error) {
	u := p.u
	label := fmt.Sprintf("%s at %d users", e.Allocation.String(), e.Workload.Users)
	began := time.Now()
	u.mu.Lock()
	u.running[label] = began
	u.mu.Unlock()
	o, err := p.x.RunExperiment(ctx, e)
	took := time.Since(began)
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.running, label)
	if err != nil {
		return o, err
	}
	u.finished++
	u.spent += took
	u.lastLine = time.Now()
	sat := ""
	if u.opts != nil {
		hw, soft := algorithms.Saturations(u.d, o, *u.opts)
		var names []string
		for _, s := range append(hw, soft...) {
			names = append(names, s.String())
		}
		sat = ", saturated: none"
		if len(names) > 0 {
			sat = ", saturated: " + strings.Join(names, " ")
		}
	}
	proc := ""
	if u.procedure != "" {
		proc = u.procedure + " "
	}
	prefix := ""
	if u.mode == "plain" {
		prefix = "softalloc: "
	}
	fmt.Fprintf(u.w, "%s%3d %s%s: %s%s%s (%s)\n", prefix, u.finished, proc, label, throughputText(o), sat, windowText(o), took.Round(10*time.Millisecond))
	return o, nil
}

// throughputText is the throughput with its interval, if the trial has one.
func throughputText(o algorithms.Observation) string {
	if o.HasIntervals() && o.ThroughputHalfWidth > 0 {
		return fmt.Sprintf("%.1f ± %.1f pages/s", o.Throughput, o.ThroughputHalfWidth)
	}
	return fmt.Sprintf("%.1f pages/s", o.Throughput)
}

// windowText says how long an adaptive trial measured and, if it ran to
// its longest window short of the precision, which figure held it there:
// a user waiting on live trials sees why one took its longest, and a
// refinement (the same workload again at half the precision) says so.
func windowText(o algorithms.Observation) string {
	w := o.Window
	if w == nil || w.Precision <= 0 {
		return ""
	}
	share := strconv.FormatFloat(100*w.Precision, 'g', 3, 64) + "%"
	if w.Precise {
		return fmt.Sprintf("; %s in %.0f s after %.0f s of warm-up", share, o.RuntimeSeconds, w.WarmUpSeconds)
	}
	why := ""
	switch {
	case w.Limit != "" && w.Excess > 0:
		why = fmt.Sprintf(" (%s: half-width %.2fx what %s allows)", w.Limit, w.Excess, share)
	case w.Limit != "":
		why = fmt.Sprintf(" (%s: its batch means stayed correlated)", w.Limit)
	}
	return fmt.Sprintf("; short of %s at %.0f s after %.0f s of warm-up%s", share, o.RuntimeSeconds, w.WarmUpSeconds, why)
}

// note writes a line that is not an experiment's (the steps derived).
func (u *progress) note(line string) {
	if u == nil {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.lastLine = time.Now()
	fmt.Fprintf(u.w, "softalloc: %s\n", line)
}

// close ends the display and waits until it has stopped drawing.
func (u *progress) close() {
	if u == nil {
		return
	}
	select {
	case <-u.stop:
		return // closed already
	default:
	}
	close(u.stop)
	<-u.done
	if u.p != nil {
		u.bar.Abort(true)
		u.p.Wait()
	}
}
