package live

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/workload"
)

// Load is one trial of a closed-loop load: Users emulated users, each a
// session walking the workload with a think time after every page, started
// over the first half of the ramp-up, measured over the runtime window, and
// stopped at the end of the ramp-down, whatever is in flight.
type Load struct {
	Workload *workload.Workload
	// Target is the base URL the workload's paths are joined to.
	Target *url.URL
	Users  int
	Timing algorithms.Timing
	// ThinkTime is the mean think time (0: the workload's).
	ThinkTime time.Duration
	// RequestTimeout bounds each HTTP request.
	RequestTimeout time.Duration
	// MaxRequests stops the trial with an error once this many requests were sent.
	MaxRequests int64
	// Seed makes the users' choices repeatable.
	Seed uint64
	// Transport carries the requests; it must dial only allowed addresses.
	Transport http.RoundTripper
	// Bins, when set, receives every page and failure of the whole trial by
	// the interval it ended in (adaptive trials, adaptive.go).
	Bins *Bins
	// Until, when set, ends the window early: the load runs on for the
	// ramp-down after the time it delivers, and stops at RampUp + Runtime +
	// RampDown at the latest, as ever.
	Until <-chan time.Time
	// More, when set, makes the load a ramp's (ramp.go): each value is the
	// users the load rises to, without a reset; the users added start
	// spread over the first half of RampUp from when it came, as a
	// trial's first users do, and number on (user Users, Users+1, ...).
	More <-chan int
}

// ErrorCounts are the pages that failed in the runtime window, by cause.
type ErrorCounts struct {
	// Refused: the connection was refused (nothing listening, or a full queue that resets).
	Refused int64 `json:"refused"`
	// TimedOut: no complete answer within the request timeout.
	TimedOut int64 `json:"timedOut"`
	// ServerErrors: a 5xx status.
	ServerErrors int64 `json:"serverErrors"`
	// Other: any other failure (4xx, a reset connection, a malformed answer).
	Other int64 `json:"other"`
}

// Total is the number of failed pages.
func (e ErrorCounts) Total() int64 { return e.Refused + e.TimedOut + e.ServerErrors + e.Other }

func (e *ErrorCounts) add(o ErrorCounts) {
	e.Refused += o.Refused
	e.TimedOut += o.TimedOut
	e.ServerErrors += o.ServerErrors
	e.Other += o.Other
}

// LoadResult is what the load generator measured.
type LoadResult struct {
	// WindowStart and WindowEnd bound the runtime window.
	WindowStart, WindowEnd time.Time
	// Pages completed successfully in the window, and their response times
	// (a page's time ends with its last embedded request).
	Pages         int64
	ResponseTimes algorithms.Histogram
	// Errors are the pages that failed in the window; slow successes are
	// in ResponseTimes, not here.
	Errors ErrorCounts
	// Requests is every HTTP request sent in the whole trial.
	Requests int64
	// ThinkSeconds and Thinks are the think time the users actually slept
	// in the window, and how many think periods that was: a busy machine
	// wakes a timer late, so the response time law holds with the think time
	// slept, not the nominal one.
	ThinkSeconds float64
	Thinks       int64
}

// MeanThinkTime is the mean think time actually slept in the window, in seconds
// (0 when no think period ended in it).
func (r LoadResult) MeanThinkTime() float64 {
	if r.Thinks == 0 {
		return 0
	}
	return r.ThinkSeconds / float64(r.Thinks)
}

// ErrRequestBound is a trial stopped by its MaxRequests bound.
var ErrRequestBound = errors.New("request bound reached")

// recorderShards spread the users' response times over a few locked
// recorders: one recorder per user would cost 16 KB each.
const recorderShards = 32

type shard struct {
	mu           sync.Mutex
	rec          algorithms.Recorder
	pages        int64
	errors       ErrorCounts
	thinkSeconds float64
	thinks       int64
}

// Run runs the trial; it returns when the ramp-down ends or ctx is done.
func (l *Load) Run(ctx context.Context) (LoadResult, error) {
	parent := ctx
	if l.Users < 1 {
		return LoadResult{}, fmt.Errorf("load: want at least 1 user, got %d", l.Users)
	}
	think := l.ThinkTime
	if think == 0 {
		think = l.Workload.ThinkTime.Mean.Duration()
	}
	start := time.Now()
	t0 := start.Add(l.Timing.RampUp)
	t1 := t0.Add(l.Timing.Runtime)
	end := t1.Add(l.Timing.RampDown)
	// The deadline is what stops every user, so a trial cannot outlive its schedule.
	ctx, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	if l.Until != nil {
		// An adaptive trial's window ends when its runner says so.
		go func() {
			select {
			case t := <-l.Until:
				tm := time.NewTimer(time.Until(t.Add(l.Timing.RampDown)))
				defer tm.Stop()
				select {
				case <-tm.C:
					cancel()
				case <-ctx.Done():
				}
			case <-ctx.Done():
			}
		}()
	}
	if l.Bins != nil {
		l.Bins.begin(start)
	}
	client := &http.Client{Transport: l.Transport,
		// A redirect would leave the checked target; pages must answer directly.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	var sent atomic.Int64
	var bound atomic.Bool
	shards := make([]shard, recorderShards)
	var wg sync.WaitGroup
	// spawn starts users [from, to), spread over the first half of the
	// ramp-up from at, so that the second half lets queues settle before
	// the window opens.
	spawn := func(from, to int, at time.Time) {
		for i := from; i < to; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				u := user{l: l, client: client, think: think, t0: t0, t1: t1, sh: &shards[i%recorderShards],
					r:     rand.New(rand.NewPCG(l.Seed, uint64(i))),
					agent: fmt.Sprintf("softalloc-loadgen (trial %x; user %d)", start.UnixNano(), i)}
				u.count = func() bool {
					if n := sent.Add(1); l.MaxRequests > 0 && n > l.MaxRequests {
						bound.Store(true)
						cancel()
						return false
					}
					return true
				}
				delay := time.Duration(int64(l.Timing.RampUp/2) * int64(i-from) / int64(to-from))
				if !sleepUntil(ctx, at.Add(delay)) {
					return
				}
				u.run(ctx)
			}()
		}
	}
	spawn(0, l.Users, start)
	if l.More != nil {
		wg.Add(1) // held while users may still be added
		go func() {
			defer wg.Done()
			users := l.Users
			for {
				select {
				case n := <-l.More:
					if n > users {
						spawn(users, n, time.Now())
						users = n
					}
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	wg.Wait()

	res := LoadResult{WindowStart: t0, WindowEnd: t1, Requests: sent.Load()}
	if l.MaxRequests > 0 {
		res.Requests = min(res.Requests, l.MaxRequests)
	}
	var h algorithms.Histogram
	for i := range shards {
		s := &shards[i]
		h = h.Merge(s.rec.Histogram())
		res.Pages += s.pages
		res.Errors.add(s.errors)
		res.ThinkSeconds += s.thinkSeconds
		res.Thinks += s.thinks
	}
	res.ResponseTimes = h
	if bound.Load() {
		return res, fmt.Errorf("load: %w: %d requests sent (maxRequests)", ErrRequestBound, l.MaxRequests)
	}
	// The deadline is the normal end (or the window's end with the ramp-down
	// after it); only the caller's cancellation is an error.
	if time.Now().Before(end) {
		if err := context.Cause(parent); err != nil {
			return res, err
		}
	}
	return res, nil
}

// sleepUntil waits for t; false when ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}

type user struct {
	l      *Load
	client *http.Client
	think  time.Duration
	t0, t1 time.Time
	sh     *shard
	r      *rand.Rand
	count  func() bool
	b      strings.Builder
	// agent names the user and its trial in every request's User-Agent:
	// all the users of a trial come from one address, and an access log
	// tells their sessions apart by the address and the user agent
	// (softalloc workload --from-log).
	agent string
}

func (u *user) run(ctx context.Context) {
	w := u.l.Workload
	s := session{hist: make([]int, 0, 8)}
	begin(w, &s)
	for ctx.Err() == nil {
		began := time.Now()
		kind := u.page(ctx, s.state)
		done := time.Now()
		if kind != cut && u.l.Bins != nil {
			u.l.Bins.add(done, done.Sub(began).Seconds(), kind)
		}
		if kind != cut && !done.Before(u.t0) && done.Before(u.t1) {
			u.sh.mu.Lock()
			switch kind {
			case ok:
				u.sh.rec.Add(done.Sub(began).Seconds())
				u.sh.pages++
			case refused:
				u.sh.errors.Refused++
			case timedOut:
				u.sh.errors.TimedOut++
			case serverError:
				u.sh.errors.ServerErrors++
			default:
				u.sh.errors.Other++
			}
			u.sh.mu.Unlock()
		}
		asleep := time.Now()
		if !sleepUntil(ctx, asleep.Add(think(w, u.r, u.think))) {
			return
		}
		if awake := time.Now(); !awake.Before(u.t0) && awake.Before(u.t1) {
			u.sh.mu.Lock()
			u.sh.thinkSeconds += awake.Sub(asleep).Seconds()
			u.sh.thinks++
			u.sh.mu.Unlock()
		}
		step(w, &s, u.r)
	}
}

type outcome int

const (
	ok outcome = iota
	refused
	timedOut
	serverError
	other
	cut // the trial ended while the page was in flight: not counted
)

// page fetches one page and its embedded requests, stopping at the first failure.
func (u *user) page(ctx context.Context, state int) outcome {
	st := u.l.Workload.Page(state)
	if o := u.get(ctx, st.Path.Render(u.r, &u.b)); o != ok {
		return o
	}
	for _, e := range st.Embedded {
		if o := u.get(ctx, e.Render(u.r, &u.b)); o != ok {
			return o
		}
	}
	return ok
}

func (u *user) get(ctx context.Context, path string) outcome {
	if !u.count() {
		return cut
	}
	rctx, cancel := context.WithTimeout(ctx, u.l.RequestTimeout)
	defer cancel()
	ref, err := url.Parse(path)
	if err != nil {
		return other
	}
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, u.l.Target.ResolveReference(ref).String(), nil)
	if err != nil {
		return other
	}
	req.Header.Set("User-Agent", u.agent)
	resp, err := u.client.Do(req)
	if err == nil {
		// The body is part of the answer: a page is done when it has arrived.
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	switch {
	case ctx.Err() != nil:
		return cut
	case err != nil:
		return classify(err)
	case resp.StatusCode >= 500:
		return serverError
	case resp.StatusCode >= 400:
		return other
	}
	return ok
}

func classify(err error) outcome {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return refused
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return timedOut
	}
	return other
}
