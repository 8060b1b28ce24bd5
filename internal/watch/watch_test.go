package watch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/promtest"
)

// The plan of a shared database's budget of 60 connections over 1..3 app replicas.
var testPlan = Plan{Tier: "app", Min: 1, Max: 3, At: map[int]algorithms.Allocation{
	1: {"app": {Threads: 150, Connections: 60}}, 2: {"app": {Threads: 150, Connections: 30}}, 3: {"app": {Threads: 150, Connections: 20}}}}

type readings struct {
	vals []int
	errs []error
}

func (r *readings) Replicas(context.Context) (int, error) {
	v, err := r.vals[0], r.errs[0]
	r.vals, r.errs = r.vals[1:], r.errs[1:]
	return v, err
}

type applies struct {
	got  []int
	fail error
}

func (a *applies) Apply(_ context.Context, al algorithms.Allocation) error {
	if a.fail != nil {
		return a.fail
	}
	a.got = append(a.got, al["app"].Connections)
	return nil
}

func steps(t *testing.T, w *Watcher, n int) []string {
	t.Helper()
	var out []string
	for range n {
		out = append(out, w.Step(context.Background()).Action)
	}
	return out
}

func TestWatchDecides(t *testing.T) {
	down := errors.New("connection refused")
	t.Run("a new count is applied once read twice; an outage and a count outside the plan change nothing", func(t *testing.T) {
		src := &readings{vals: []int{2, 2, 2, 3, 0, 3, 3, 5, 3, 1}, errs: []error{nil, nil, nil, nil, down, nil, nil, nil, nil, nil}}
		app := &applies{}
		var log bytes.Buffer
		w, err := New(testPlan, src, app, Options{Log: &log})
		require.NoError(t, err)
		assert.Equal(t, []string{"hold", "apply", "keep", "hold", "read-error", "hold", "apply", "outside", "keep", "hold"}, steps(t, w, 10))
		assert.Equal(t, []int{30, 20}, app.got)
		assert.Equal(t, 3, w.Applied())
		assert.Equal(t, 1, w.ReadErrors)
		out := log.String()
		assert.Contains(t, out, "watch: apply: app at 2 replicas (nothing applied yet), read 2 times: app.connections=30,app.threads=150; applied\n")
		assert.Contains(t, out, "watch: read-error: connection refused; nothing applied, the pools of 2 replicas stay\n")
		assert.Contains(t, out, "watch: outside: app at 5 replicas, outside the plan's 1..3: nothing applied, the pools of 3 replicas stay")
		assert.Equal(t, 10, strings.Count(out, "\n"), "one line a decision")
	})
	t.Run("dry run applies nothing", func(t *testing.T) {
		app := &applies{}
		w, err := New(testPlan, &readings{vals: []int{2, 2}, errs: make([]error, 2)}, app, Options{DryRun: true, StatePath: filepath.Join(t.TempDir(), "s")})
		require.NoError(t, err)
		assert.Equal(t, []string{"hold", "dry-run"}, steps(t, w, 2))
		assert.Empty(t, app.got)
		assert.Zero(t, w.Applied())
		assert.NoFileExists(t, w.opts.StatePath)
	})
	t.Run("a failed hook is tried again after the count is read again", func(t *testing.T) {
		app := &applies{fail: errors.New("exit status 1")}
		w, err := New(testPlan, &readings{vals: []int{2, 2, 2, 2}, errs: make([]error, 4)}, app, Options{})
		require.NoError(t, err)
		assert.Equal(t, []string{"hold", "apply-error"}, steps(t, w, 2))
		app.fail = nil
		assert.Equal(t, []string{"hold", "apply"}, steps(t, w, 2))
		assert.Equal(t, []int{30}, app.got)
	})
	t.Run("a restart keeps what was applied", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "state.json")
		app := &applies{}
		w, err := New(testPlan, &readings{vals: []int{2, 2}, errs: make([]error, 2)}, app, Options{StatePath: path})
		require.NoError(t, err)
		steps(t, w, 2)
		require.Equal(t, []int{30}, app.got)
		// Restarted (after a kill -9 the state is the last successful apply's).
		w2, err := New(testPlan, &readings{vals: []int{2, 3, 3}, errs: make([]error, 3)}, app, Options{StatePath: path})
		require.NoError(t, err)
		assert.Equal(t, 2, w2.Applied())
		assert.Equal(t, []string{"keep", "hold", "apply"}, steps(t, w2, 3))
		assert.Equal(t, []int{30, 20}, app.got)
		// A state of another plan is not trusted: the first reading applies.
		other := Plan{Tier: "app", Min: 1, Max: 3, At: map[int]algorithms.Allocation{3: {"app": {Connections: 7}}}}
		w3, err := New(other, &readings{}, app, Options{StatePath: path})
		require.NoError(t, err)
		assert.Zero(t, w3.Applied())
		require.NoError(t, os.WriteFile(path, []byte("{half"), 0o600))
		_, err = New(testPlan, &readings{}, app, Options{StatePath: path})
		assert.ErrorContains(t, err, "remove it to start afresh")
	})
}

func TestHookExpands(t *testing.T) {
	h := Hook{Argv: []string{"set-pools", "--pool={app.connections}", "{app.threads}"}}
	argv, err := h.Expand(testPlan.At[2])
	require.NoError(t, err)
	assert.Equal(t, []string{"set-pools", "--pool=30", "150"}, argv)
	_, err = Hook{Argv: []string{"x", "{db.connections}"}}.Expand(testPlan.At[2])
	assert.EqualError(t, err, `hook argument "{db.connections}": {db.connections} names no pool of the plan (it has app.connections=30,app.threads=150)`)
	_, err = Hook{Argv: []string{"x", "{app.connections"}}.Expand(testPlan.At[2])
	assert.ErrorContains(t, err, "not closed")
}

// watch against a real Prometheus: the app's replicas are three targets
// it scrapes; one stops, and the hook applies the pools of two.
func TestWatchFollowsTheTargetsThatAreUp(t *testing.T) {
	var targets []*httptest.Server
	var urls []string
	for range 3 {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprintln(w, "# TYPE app_up gauge\napp_up 1")
		}))
		t.Cleanup(s.Close)
		targets, urls = append(targets, s), append(urls, s.URL)
	}
	prom := promtest.Scraping(t, "TestWatchFollowsTheTargetsThatAreUp", 200*time.Millisecond, 600*time.Millisecond, urls...)
	src, err := NewPrometheus(prom, `count(up{job=~"t[0-9]+"} == 1)`, 5*time.Second)
	require.NoError(t, err)
	dir := t.TempDir()
	applied := filepath.Join(dir, "applied")
	hook := Hook{Argv: []string{"/bin/sh", "-c", `echo "$1" >> "$2"`, "sh", "{app.connections}", applied}, Dir: dir, Timeout: 10 * time.Second}
	var log bytes.Buffer
	w, err := New(testPlan, src, hook, Options{StatePath: filepath.Join(dir, "state.json"), Log: &log})
	require.NoError(t, err)

	until := func(n int) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for w.Applied() != n {
			require.True(t, time.Now().Before(deadline), "not applied at %d replicas within 20 s:\n%s", n, log.String())
			w.Step(context.Background())
			time.Sleep(100 * time.Millisecond)
		}
	}
	until(3)
	targets[2].Close()
	until(2)
	b, err := os.ReadFile(applied)
	require.NoError(t, err)
	assert.Equal(t, "20\n30\n", string(b), "the pools of 3 replicas, then of 2")
	t.Log(log.String())

	// Prometheus down: nothing applied, the pools of 2 stay.
	gone, err := NewPrometheus("http://127.0.0.1:1", "count(up == 1)", time.Second)
	require.NoError(t, err)
	w.src = gone
	d := w.Step(context.Background())
	assert.Equal(t, "read-error", d.Action)
	assert.Equal(t, 2, d.Applied)
}
