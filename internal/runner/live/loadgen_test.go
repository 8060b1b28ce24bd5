package live

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/workload"
)

func testWorkload(t testing.TB, think string, paths ...string) *workload.Workload {
	t.Helper()
	doc := "thinkTime: {mean: " + think + "}\nstart: P0\ninteractions:\n"
	for i, p := range paths {
		next := "P0"
		if i+1 < len(paths) {
			next = "P" + string(rune('1'+i))
		}
		doc += "  - {name: P" + string(rune('0'+i)) + ", path: '" + p + "', next: {" + next + ": 1}}\n"
	}
	w, err := ParseWorkload([]byte(doc))
	require.NoError(t, err)
	return w
}

func newLoad(t testing.TB, srv string, w *workload.Workload, users int, timing algorithms.Timing) *Load {
	t.Helper()
	u, err := url.Parse(srv)
	require.NoError(t, err)
	g, err := newGuard(nil)
	require.NoError(t, err)
	d := &net.Dialer{Control: g.control}
	return &Load{Workload: w, Target: u, Users: users, Timing: timing, RequestTimeout: time.Second,
		Seed: 1, Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: users}}
}

var short = algorithms.Timing{RampUp: 200 * time.Millisecond, Runtime: time.Second, RampDown: 100 * time.Millisecond}

func TestLoadMeasuresPages(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer srv.Close()
	l := newLoad(t, srv.URL, testWorkload(t, "10ms", "/a", "/b?x={rand:1:9}"), 20, short)
	start := time.Now()
	res, err := l.Run(context.Background())
	require.NoError(t, err)
	assert.Less(t, time.Since(start), short.Total()+10*time.Second, "the trial stops by itself")
	// A closed loop obeys the response time law, X = N / (Z + R), however
	// fast this (possibly busy) machine serves: 20 users, 10 ms think time.
	// Z is the think time the users slept: on a loaded machine (the race
	// detector beside a CPU hog) 10 ms timers wake late, by as much again.
	require.Greater(t, res.Pages, int64(50))
	require.Positive(t, res.Thinks)
	assert.GreaterOrEqual(t, res.MeanThinkTime(), 0.010, "a timer never wakes early")
	want := 20 / (res.MeanThinkTime() + res.ResponseTimes.Mean())
	assert.InEpsilon(t, want, float64(res.Pages), 0.10, "pages in the 1 s window against N/(Z+R)")
	assert.Equal(t, res.Pages, res.ResponseTimes.Count())
	assert.Zero(t, res.Errors.Total())
	assert.InDelta(t, 1.0, res.WindowEnd.Sub(res.WindowStart).Seconds(), 1e-9)
	assert.GreaterOrEqual(t, res.Requests, res.Pages)
}

func TestLoadCountsErrorsApart(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("/fail", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	// A port with nothing listening: take one, then close it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := ln.Addr().String()
	ln.Close()

	for _, tc := range []struct {
		name  string
		url   string
		check func(ErrorCounts) int64
	}{
		{"5xx", srv.URL + "/fail", func(e ErrorCounts) int64 { return e.ServerErrors }},
		{"timed out", srv.URL + "/hang", func(e ErrorCounts) int64 { return e.TimedOut }},
		{"refused", "http://" + closed + "/ok", func(e ErrorCounts) int64 { return e.Refused }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, _ := url.Parse(tc.url)
			l := newLoad(t, tc.url, testWorkload(t, "20ms", u.Path), 4, short)
			l.RequestTimeout = 100 * time.Millisecond
			res, err := l.Run(context.Background())
			require.NoError(t, err)
			assert.Zero(t, res.Pages, "no success")
			assert.Positive(t, tc.check(res.Errors))
			assert.Equal(t, tc.check(res.Errors), res.Errors.Total(), "counted under its own cause only")
		})
	}
}

func TestLoadIsBounded(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	l := newLoad(t, srv.URL, testWorkload(t, "1ms", "/a"), 8, algorithms.Timing{Runtime: time.Minute})
	l.MaxRequests = 300
	start := time.Now()
	res, err := l.Run(context.Background())
	require.ErrorIs(t, err, ErrRequestBound)
	assert.Less(t, time.Since(start), 30*time.Second, "stopped by the request bound, not the schedule")
	assert.Equal(t, int64(300), res.Requests)

	// A cancelled campaign (Ctrl-C) ends the trial at once, with its cause.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	l = newLoad(t, srv.URL, testWorkload(t, "1ms", "/a"), 8, algorithms.Timing{Runtime: time.Minute})
	start = time.Now()
	_, err = l.Run(ctx)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Less(t, time.Since(start), 30*time.Second)
}

func TestLoadRefusesOtherHosts(t *testing.T) {
	u, _ := url.Parse("http://192.0.2.1:80")
	l := newLoad(t, u.String(), testWorkload(t, "10ms", "/a"), 1,
		algorithms.Timing{RampUp: 0, Runtime: 300 * time.Millisecond})
	res, err := l.Run(context.Background())
	require.NoError(t, err)
	assert.Zero(t, res.Pages)
	assert.Positive(t, res.Errors.Other, "the dial is refused before any packet leaves")
}

// Every user of a trial comes from one address: its User-Agent names it, so
// that an access log tells the users' sessions apart (softalloc workload
// --from-log), and two trials' users are not taken for one another.
func TestLoadNamesEachUserInItsUserAgent(t *testing.T) {
	var mu sync.Mutex
	agents := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		agents[r.UserAgent()] = true
		mu.Unlock()
	}))
	defer srv.Close()
	for trial := 0; trial < 2; trial++ {
		_, err := newLoad(t, srv.URL, testWorkload(t, "10ms", "/a"), 5, short).Run(context.Background())
		require.NoError(t, err)
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Len(t, agents, 10, "five users in each of two trials: %v", agents)
	for a := range agents {
		assert.Contains(t, a, "softalloc-loadgen")
	}
}
