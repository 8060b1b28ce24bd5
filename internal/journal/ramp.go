package journal

import (
	"context"
	"fmt"
	"time"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/wire"
)

// A ramp (algorithms.Ramper) is recorded window by window, each synced as
// it finishes, so that a ramp interrupted at any point resumes from its
// last recorded window: the windows on record are given again, and the
// ramp goes on, on the runner, from the level the campaign asks for next.

// WindowRef places a window record in its ramp.
type WindowRef struct {
	// Ramp is the ramp's key: runner, settings, deployment, allocation,
	// first level and timing.
	Ramp  string `json:"ramp"`
	From  int    `json:"from"`
	Index int    `json:"index"`
	// Start, End and Elapsed are the window's (algorithms.RampWindow).
	Start   float64 `json:"startSeconds"`
	End     float64 `json:"endSeconds"`
	Elapsed float64 `json:"elapsedSeconds"`
}

// RampKey is the key of ramp r of the runner id.
func RampKey(id Identity, r algorithms.Ramp) string {
	return "ramp-" + Key(id, algorithms.Experiment{Deployment: r.Deployment, Allocation: r.Allocation,
		Workload: algorithms.Workload{Users: r.From}, Timing: r.Timing})
}

func windowKey(ramp string, index int) string { return fmt.Sprintf("%s#%d", ramp, index) }

// loadWindow files a window record read at line.
func (j *Journal) loadWindow(r Record, e algorithms.Experiment, o algorithms.Observation, line int) error {
	w := r.Window
	ramp := RampKey(j.id, algorithms.Ramp{Deployment: e.Deployment, Allocation: e.Allocation, From: w.From, Timing: e.Timing})
	if ramp != w.Ramp || r.Key != windowKey(ramp, w.Index) {
		return fmt.Errorf("line %d: its key %s is not the key of the ramp window it holds (%s, window %d of the ramp from %d users): not reused",
			line, r.Key, describe(e), w.Index, w.From)
	}
	ws := j.windows[ramp]
	if w.Index != len(ws) {
		// A window out of order (a copy of one on record, or one after a
		// gap) adds nothing the ramp can resume from.
		return nil
	}
	j.windows[ramp] = append(ws, algorithms.RampWindow{Index: w.Index, Users: e.Workload.Users, Allocation: e.Allocation.String(),
		Start: w.Start, End: w.End, Elapsed: w.Elapsed, Observation: o, Record: r.Key})
	return nil
}

// Windows are the recorded windows of ramp r, in order.
func (j *Journal) Windows(r algorithms.Ramp) []algorithms.RampWindow {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]algorithms.RampWindow(nil), j.windows[RampKey(j.id, r)]...)
}

// appendWindow writes one window of ramp r and syncs it.
func (j *Journal) appendWindow(r algorithms.Ramp, w algorithms.RampWindow) error {
	e := algorithms.Experiment{Deployment: r.Deployment, Allocation: r.Allocation, Workload: algorithms.Workload{Users: w.Users}, Timing: r.Timing}
	if err := w.Observation.Validate(); err != nil {
		return fmt.Errorf("journal %q: the runner's window at %d users is invalid, not recorded: %w", j.path, w.Users, err)
	}
	ramp := RampKey(j.id, r)
	rec := Record{Key: windowKey(ramp, w.Index), Runner: j.id.Runner, Settings: j.id.Settings, Finished: time.Now().UTC(),
		Seconds: w.Elapsed, Experiment: wire.FromExperiment(e), Observation: wire.FromObservation(w.Observation),
		Window: &WindowRef{Ramp: ramp, From: r.From, Index: w.Index, Start: w.Start, End: w.End, Elapsed: w.Elapsed}}
	if err := j.write(rec); err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if ws := j.windows[ramp]; w.Index == len(ws) {
		w.Reused = false
		j.windows[ramp] = append(ws, w)
	}
	return nil
}

// WrapRamper returns a Ramper that gives a ramp's recorded windows first and
// records every window rp measures before the campaign sees it. A ramp
// whose windows are all on record goes on, on rp, from the level asked for
// after the last of them: a new ramp from there, whose windows continue
// the numbering.
func (j *Journal) WrapRamper(rp algorithms.Ramper) algorithms.Ramper {
	return &journaledRamp{j: j, rp: rp}
}

type journaledRamp struct {
	j  *Journal
	rp algorithms.Ramper
}

func (w *journaledRamp) RunRamp(ctx context.Context, r algorithms.Ramp, next func(algorithms.RampWindow) (algorithms.RampStep, error)) error {
	recorded := w.j.Windows(r)
	rest := r
	for _, win := range recorded {
		win.Reused = true
		w.j.mu.Lock()
		w.j.Reused++
		w.j.mu.Unlock()
		step, err := next(win)
		if err != nil || step.Users == 0 {
			return err
		}
		// The level goes on at the step's precision, not at the first
		// window's (a campaign's low-load window can be looser).
		rest.From, rest.Timing.Precision = step.Users, r.Timing.Precision
		if step.Precision > 0 {
			rest.Timing.Precision = step.Precision
		}
	}
	offset := len(recorded)
	return w.rp.RunRamp(ctx, rest, func(win algorithms.RampWindow) (algorithms.RampStep, error) {
		win.Index += offset
		win.Record = windowKey(RampKey(w.j.id, r), win.Index)
		if err := w.j.appendWindow(r, win); err != nil {
			return algorithms.RampStep{}, err
		}
		w.j.mu.Lock()
		w.j.Ran++
		w.j.mu.Unlock()
		return next(win)
	})
}
