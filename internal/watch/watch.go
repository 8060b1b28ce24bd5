// Package watch follows a deployment's replica count and applies, through
// a hook, the pools recommend or advise planned for that count (issue 37):
// one decision per reading, each logged with its reason and numbers.
//
// What it will not do is apply anything half-known: a reading that fails
// (Prometheus down, an answer that is not one count) changes nothing; a
// count outside the plan is reported, not guessed at; a new count is
// applied only once it has been read Hold times in a row (a rollout's
// surge and a scrape that misses a pod come and go); and the state file is
// written only after the hook succeeded, so a watch stopped at any moment
// (kill -9 included) applies again after a restart what it may not have
// finished, and nothing twice that it had.
//
// Pools are sized ahead of the scaler: at n replicas watch applies the
// pools planned for n + surge (the plan's, at most its top count), the
// count the scaler or a rollout can reach before watch reads it and its
// hook has run. A replica that starts meanwhile opens the pools of the
// last apply; sized for n, n + surge of them would exceed the database's
// budget until the hook had shrunk them. After a scale-down the pools grow
// back, to the new count plus its surge.
package watch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/safefile"
)

// Plan is what watch applies: the allocation at each count of the tier's
// range, from recommend's or advise's replicas answer, and the surge at
// each count (the pods a rollout, or the scaler's next step, adds over it).
type Plan struct {
	Tier     string
	Min, Max int
	At       map[int]algorithms.Allocation
	// Surge is the plan's rows' surge by count (none: 0).
	Surge map[int]int
}

// SizedFor is the count whose pools watch applies at n replicas: n plus
// its surge, at most the plan's top count (the scaler's maxReplicas).
func (p Plan) SizedFor(n int) int {
	return min(n+max(0, p.Surge[n]), p.Max)
}

// NewPlan takes the counts of a replica plan.
func NewPlan(p *algorithms.ReplicaPlan) (Plan, error) {
	if p == nil || len(p.Counts) == 0 {
		return Plan{}, errors.New("no replica plan: the answer has no replicas key (give the deployment file a replica range, e.g. replicas: 2..12)")
	}
	out := Plan{Tier: p.Tier, Min: p.Min, Max: p.Max, At: map[int]algorithms.Allocation{}, Surge: map[int]int{}}
	for _, rc := range p.Counts {
		if len(rc.Allocation) == 0 {
			return Plan{}, fmt.Errorf("replicas.counts: count %d has no allocation", rc.Replicas)
		}
		if rc.Surge < 0 {
			return Plan{}, fmt.Errorf("replicas.counts: count %d has surge %d, want 0 or more pods", rc.Replicas, rc.Surge)
		}
		out.At[rc.Replicas] = rc.Allocation
		out.Surge[rc.Replicas] = rc.Surge
	}
	for n := p.Min; n <= p.Max; n++ {
		if _, ok := out.At[n]; !ok {
			return Plan{}, fmt.Errorf("replicas.counts: count %d of %d..%d is missing", n, p.Min, p.Max)
		}
	}
	return out, nil
}

// Source reads the replica count now.
type Source interface {
	Replicas(ctx context.Context) (int, error)
}

// Applier applies an allocation (the hook).
type Applier interface {
	Apply(ctx context.Context, a algorithms.Allocation) error
}

// Options hold how watch decides; zero values take the defaults.
type Options struct {
	// Hold is the readings in a row a new count must show before it is
	// applied (default 2): hysteresis against a surge's pods and a scrape
	// that missed one.
	Hold int
	// DryRun says what would be applied without applying it (nor writing
	// the state).
	DryRun bool
	// StatePath keeps the last count applied across restarts ("": none).
	StatePath string
	// Log gets one line per decision.
	Log io.Writer
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Decision is what one reading led to.
type Decision struct {
	// Action: "apply", "dry-run", "hold" (a new count not yet read Hold
	// times), "keep" (the count applied), "outside" (not in the plan),
	// "read-error" or "apply-error".
	Action   string
	Replicas int // the count read (-1: none)
	Applied  int // the count applied after the decision (0: none yet)
	// SizedFor is the count the pools in place after the decision were
	// planned for, Applied plus its surge (0: none yet).
	SizedFor int
	Reason   string
}

// Watcher makes the decisions; Step is one reading, Run the loop.
type Watcher struct {
	plan    Plan
	src     Source
	apply   Applier
	opts    Options
	applied int // the count whose allocation was applied last (0: none)
	pending int // a new count being held
	seen    int // readings in a row of pending
	// Counters for the watcher's own metrics.
	Applies, ReadErrors, ApplyErrors int
}

// New makes a watcher; it reads the state file, when there is one, for
// the count applied before a restart.
func New(plan Plan, src Source, apply Applier, opts Options) (*Watcher, error) {
	if opts.Hold <= 0 {
		opts.Hold = 2
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	w := &Watcher{plan: plan, src: src, apply: apply, opts: opts}
	if opts.StatePath != "" {
		st, err := readState(opts.StatePath)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return nil, err
		case st.Tier == plan.Tier && plan.At[st.Replicas] != nil && plan.At[plan.SizedFor(st.Replicas)].Key() == st.Allocation:
			w.applied = st.Replicas
		default:
			// Another plan's state (or another surge): its allocation is
			// not this plan's, so the first reading applies this one.
			w.logf("state %s: count %d of tier %s with %s is not this plan's: the first reading applies", opts.StatePath, st.Replicas, st.Tier, st.Allocation)
		}
	}
	return w, nil
}

// Applied is the count applied last (0: none).
func (w *Watcher) Applied() int { return w.applied }

func (w *Watcher) logf(format string, args ...any) {
	fmt.Fprintf(w.opts.Log, "%s watch: %s\n", w.opts.Now().UTC().Format(time.RFC3339), fmt.Sprintf(format, args...))
}

// Step reads the count once and decides.
func (w *Watcher) Step(ctx context.Context) Decision {
	d := w.step(ctx)
	d.Applied, d.SizedFor = w.applied, w.sized()
	w.logf("%s: %s", d.Action, d.Reason)
	return d
}

func (w *Watcher) step(ctx context.Context) Decision {
	n, err := w.src.Replicas(ctx)
	if err != nil {
		w.ReadErrors++
		w.pending, w.seen = 0, 0 // a gap breaks the run of readings
		return Decision{Action: "read-error", Replicas: -1, Reason: fmt.Sprintf("%v; nothing applied, %s", err, w.keeping())}
	}
	if n == w.applied {
		w.pending, w.seen = 0, 0
		return Decision{Action: "keep", Replicas: n, Reason: fmt.Sprintf("%s at %d replicas, as applied", w.plan.Tier, n)}
	}
	if _, ok := w.plan.At[n]; !ok {
		w.pending, w.seen = 0, 0
		return Decision{Action: "outside", Replicas: n, Reason: fmt.Sprintf("%s at %d replicas, outside the plan's %d..%d: nothing applied, %s (widen the range and recommend again)",
			w.plan.Tier, n, w.plan.Min, w.plan.Max, w.keeping())}
	}
	if n != w.pending {
		w.pending, w.seen = n, 0
	}
	w.seen++
	if w.seen < w.opts.Hold {
		return Decision{Action: "hold", Replicas: n, Reason: fmt.Sprintf("%s at %d replicas (%s), read %d of %d times before applying",
			w.plan.Tier, n, w.was(), w.seen, w.opts.Hold)}
	}
	a := w.plan.At[w.plan.SizedFor(n)]
	what := fmt.Sprintf("%s at %d replicas (%s), read %d times: %s, %s", w.plan.Tier, n, w.was(), w.seen, describe(a), w.sizing(n))
	if sized := w.sized(); sized != 0 && n > sized {
		// The scaler went further than the surge the pools were sized
		// for: until now they may have exceeded the budget.
		what += fmt.Sprintf(" (%d replicas ran pools sized for %d: declare a surge of %d or more)", n, sized, n-w.applied)
	}
	if sized := w.sized(); sized != 0 && w.plan.At[sized].Key() == a.Key() {
		// The pools in place are this count's: no hook (a rolling
		// restart for nothing).
		w.applied = n
		w.pending, w.seen = 0, 0
		if !w.opts.DryRun && w.opts.StatePath != "" {
			if err := writeState(w.opts.StatePath, state{Tier: w.plan.Tier, Replicas: n, Allocation: a.Key(), At: w.opts.Now().UTC()}); err != nil {
				return Decision{Action: "keep", Replicas: n, Reason: what + fmt.Sprintf(": in place, nothing to apply; the state was not saved: %v", err)}
			}
		}
		return Decision{Action: "keep", Replicas: n, Reason: what + ": in place, nothing to apply"}
	}
	if w.opts.DryRun {
		w.pending, w.seen = 0, 0
		return Decision{Action: "dry-run", Replicas: n, Reason: what + " (dry run: not applied)"}
	}
	if err := w.apply.Apply(ctx, a); err != nil {
		w.ApplyErrors++
		// Read again before the next try: the count may have moved on.
		w.pending, w.seen = 0, 0
		return Decision{Action: "apply-error", Replicas: n, Reason: fmt.Sprintf("%s: %v; %s", what, err, w.keeping())}
	}
	if w.opts.StatePath != "" {
		if err := writeState(w.opts.StatePath, state{Tier: w.plan.Tier, Replicas: n, Allocation: a.Key(), At: w.opts.Now().UTC()}); err != nil {
			// Applied, but a restart would not know: it applies again,
			// which a hook takes (it sets sizes, it does not add them).
			w.applied = n
			w.Applies++
			return Decision{Action: "apply", Replicas: n, Reason: what + fmt.Sprintf("; applied, but the state was not saved: %v", err)}
		}
	}
	w.applied = n
	w.Applies++
	w.pending, w.seen = 0, 0
	return Decision{Action: "apply", Replicas: n, Reason: what + "; applied"}
}

func (w *Watcher) was() string {
	if w.applied == 0 {
		return "nothing applied yet"
	}
	return fmt.Sprintf("was %d", w.applied)
}

// sizing names the count n's pools are planned for and the surge.
func (w *Watcher) sizing(n int) string {
	s, t := w.plan.Surge[n], w.plan.SizedFor(n)
	if n+s > t {
		return fmt.Sprintf("the pools of %d replicas (%d + surge %d, at most the plan's %d)", t, n, s, w.plan.Max)
	}
	return fmt.Sprintf("the pools of %d replicas (%d + surge %d)", t, n, s)
}

// sized is the count the pools in place were planned for: the applied
// count plus its surge (0: nothing applied yet).
func (w *Watcher) sized() int {
	if w.applied == 0 {
		return 0
	}
	return w.plan.SizedFor(w.applied)
}

func (w *Watcher) keeping() string {
	if w.applied == 0 {
		return "nothing applied yet"
	}
	return fmt.Sprintf("the pools of %d replicas stay", w.sized())
}

// describe is an allocation as tier.pool=N, sorted.
func describe(a algorithms.Allocation) string {
	var parts []string
	for tier, p := range a {
		if p.Threads > 0 {
			parts = append(parts, tier+"."+algorithms.PoolThreads+"="+strconv.Itoa(p.Threads))
		}
		if p.Connections > 0 {
			parts = append(parts, tier+"."+algorithms.PoolConnections+"="+strconv.Itoa(p.Connections))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// Run steps every interval until ctx is done; the first reading is at once.
func (w *Watcher) Run(ctx context.Context, interval time.Duration, each func(Decision)) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		d := w.Step(ctx)
		if each != nil {
			each(d)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// state is the state file: the count applied last and its allocation.
type state struct {
	Tier       string    `json:"tier"`
	Replicas   int       `json:"replicas"`
	Allocation string    `json:"allocation"`
	At         time.Time `json:"at"`
}

func readState(path string) (state, error) {
	var st state
	b, err := os.ReadFile(path)
	if err != nil {
		return st, fmt.Errorf("watch state %q: %w", path, err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("watch state %q: %w (remove it to start afresh)", path, err)
	}
	return st, nil
}

// writeState replaces the file whole (safefile: a temporary file, synced,
// then renamed): a kill leaves the old state or the new, never half of one.
func writeState(path string, st state) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if err := safefile.Write(path, 0o644, func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	}); err != nil {
		return fmt.Errorf("watch state %q: %w", path, err)
	}
	return nil
}
