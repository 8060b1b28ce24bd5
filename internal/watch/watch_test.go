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
		assert.Contains(t, out, "watch: apply: app at 2 replicas (nothing applied yet), read 2 times: app.connections=30,app.threads=150, the pools of 2 replicas (2 + surge 0); applied\n")
		// No surge declared, and the scaler went 2 -> 3: said, with the surge that would have covered it.
		assert.Contains(t, out, "watch: apply: app at 3 replicas (was 2), read 2 times: app.connections=20,app.threads=150, the pools of 3 replicas (3 + surge 0) (3 replicas ran pools sized for 2: declare a surge of 1 or more); applied\n")
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

// budgetPlan splits a database's budget of 60 connections over 1..4 app
// replicas, each count's row with a surge of 2 (the scaler's step).
func budgetPlan(surge int) Plan {
	p := Plan{Tier: "app", Min: 1, Max: 4, At: map[int]algorithms.Allocation{}, Surge: map[int]int{}}
	for n := 1; n <= 4; n++ {
		p.At[n] = algorithms.Allocation{"app": {Threads: 150, Connections: 60 / n}}
		p.Surge[n] = surge
	}
	return p
}

// The model of a scaling event: the scaler goes from n to any count up to
// n + surge (at most the range's top) before watch has read it, and the
// replicas it starts open the pools of the last apply. Every such count
// must fit the budget of 60 with the pools watch applied at n; pools sized
// for n alone (60/n a replica) would not: 1 -> 3 opens 180.
func TestWatchSizesThePoolsForTheSurge(t *testing.T) {
	const budget = 60
	for _, surge := range []int{0, 1, 2, 3} {
		plan := budgetPlan(surge)
		for n := plan.Min; n <= plan.Max; n++ {
			app := &applies{}
			w, err := New(plan, &readings{vals: []int{n}, errs: make([]error, 1)}, app, Options{Hold: 1})
			require.NoError(t, err)
			require.Equal(t, "apply", w.Step(context.Background()).Action)
			require.Len(t, app.got, 1)
			for reached := n; reached <= min(n+surge, plan.Max); reached++ {
				assert.LessOrEqual(t, reached*app.got[0], budget,
					"surge %d: at %d replicas watch applied %d connections a replica; the scaler's step to %d opens %d",
					surge, n, app.got[0], reached, reached*app.got[0])
			}
		}
	}

	t.Run("1 -> 3 -> 2 -> 1 with surge 2: ahead of the scaler, and back when the count falls", func(t *testing.T) {
		app := &applies{}
		var log bytes.Buffer
		path := filepath.Join(t.TempDir(), "state.json")
		w, err := New(budgetPlan(2), &readings{vals: []int{1, 1, 3, 3, 2, 2, 1, 1}, errs: make([]error, 8)}, app, Options{Log: &log, StatePath: path})
		require.NoError(t, err)
		assert.Equal(t, []string{"hold", "apply", "hold", "apply", "hold", "keep", "hold", "apply"}, steps(t, w, 8))
		// The pools of 3 at 1, of 4 (the top) at 3 and at 2 (no hook:
		// they are in place), of 3 again at 1.
		assert.Equal(t, []int{20, 15, 20}, app.got)
		out := log.String()
		assert.Contains(t, out, "watch: apply: app at 1 replicas (nothing applied yet), read 2 times: app.connections=20,app.threads=150, the pools of 3 replicas (1 + surge 2); applied\n")
		assert.Contains(t, out, "watch: apply: app at 3 replicas (was 1), read 2 times: app.connections=15,app.threads=150, the pools of 4 replicas (3 + surge 2, at most the plan's 4); applied\n")
		assert.Contains(t, out, "watch: keep: app at 2 replicas (was 3), read 2 times: app.connections=15,app.threads=150, the pools of 4 replicas (2 + surge 2): in place, nothing to apply\n")
		assert.NotContains(t, out, "ran pools sized for", "every step stayed within the surge")

		// A restart finds the count and the pools of its surge.
		w2, err := New(budgetPlan(2), &readings{vals: []int{1}, errs: make([]error, 1)}, app, Options{StatePath: path})
		require.NoError(t, err)
		assert.Equal(t, 1, w2.Applied())
		d := w2.Step(context.Background())
		assert.Equal(t, "keep", d.Action)
		assert.Equal(t, 3, d.SizedFor)
		// The same plan without the surge sizes otherwise: its first reading applies.
		w3, err := New(budgetPlan(0), &readings{}, app, Options{StatePath: path})
		require.NoError(t, err)
		assert.Zero(t, w3.Applied())
	})
}

func TestNewPlanTakesTheRowsSurge(t *testing.T) {
	rows := &algorithms.ReplicaPlan{Tier: "app", Min: 2, Max: 3, Surge: "25%", Counts: []algorithms.ReplicaCount{
		{Replicas: 2, Surge: 1, Allocation: algorithms.Allocation{"app": {Connections: 30}}},
		{Replicas: 3, Surge: 1, Allocation: algorithms.Allocation{"app": {Connections: 20}}}}}
	p, err := NewPlan(rows)
	require.NoError(t, err)
	assert.Equal(t, map[int]int{2: 1, 3: 1}, p.Surge)
	assert.Equal(t, 3, p.SizedFor(2))
	assert.Equal(t, 3, p.SizedFor(3), "at most the range's top")
	rows.Counts[1].Surge = -1
	_, err = NewPlan(rows)
	assert.EqualError(t, err, "replicas.counts: count 3 has surge -1, want 0 or more pods")
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
