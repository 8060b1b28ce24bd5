package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/jsonl"
)

// Window is one line of `softalloc advise --output windows`: a stretch of a
// deployment's own traffic, as advise reads it.
type Window struct {
	Label        string       `json:"label"`
	Observation  *Observation `json:"observation,omitempty"`
	Users        float64      `json:"users,omitempty"`
	ResponseTime float64      `json:"responseTime,omitempty"`
	Problem      string       `json:"problem,omitempty"`
}

// FromWindow converts a window for writing.
func FromWindow(w algorithms.Window) Window {
	out := Window{Label: w.Label, Users: w.Users, ResponseTime: w.ResponseTime, Problem: w.Problem}
	if w.Problem == "" || len(w.Observation.Servers) > 0 {
		o := FromObservation(w.Observation)
		out.Observation = &o
	}
	return out
}

// RecordedWindow is a window as read, with the experiment that measured it
// when a journal or campaign line gave one (nil otherwise): a file can hold
// several deployments' or allocations' trials, which advise must not mix.
type RecordedWindow struct {
	algorithms.Window
	Experiment *algorithms.Experiment
}

// ReadWindows reads recorded observations as advise's windows, one JSON
// object a line, each of:
//   - a journal line or a replay campaign's line (experiment and observation:
//     the users are the experiment's workload);
//   - a bare observation (`simulate --output observation`, an exec program's
//     answer): users unknown;
//   - a window (`advise --output windows`).
//
// Every observation is validated as a journal's is, except that a window
// marked with a problem is kept as it is, for advise to report. name labels
// the windows ("obs.jsonl:12") and the errors.
func ReadWindows(r io.Reader, name string) ([]RecordedWindow, error) {
	lines, tail, err := jsonl.Read(r, jsonl.MaxLine)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(tail) > 0 {
		lines = append(lines, tail)
	}
	var out []RecordedWindow
	for i, line := range lines {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		w, e, err := parseWindowLine(line, fmt.Sprintf("%s:%d", name, i+1))
		if err != nil {
			return nil, err
		}
		out = append(out, RecordedWindow{w, e})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no observation in it: want JSON Lines of journal records, observations or windows", name)
	}
	return out, nil
}

func parseWindowLine(line []byte, label string) (algorithms.Window, *algorithms.Experiment, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(line, &keys); err != nil {
		return algorithms.Window{}, nil, fmt.Errorf("%s: %w: want a JSON object a line", label, err)
	}
	strict := func(v any) error {
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			return fmt.Errorf("%s: %w", label, err)
		}
		return nil
	}
	_, hasExperiment := keys["experiment"]
	_, hasObservation := keys["observation"]
	_, hasLabel := keys["label"]
	switch {
	case hasExperiment:
		// A journal line has more keys than a campaign's (key, runner,
		// settings, timing): read the two parts that matter.
		var r Record
		if err := json.Unmarshal(line, &r); err != nil {
			return algorithms.Window{}, nil, fmt.Errorf("%s: %w", label, err)
		}
		e, o, err := r.Algorithms()
		if err != nil {
			return algorithms.Window{}, nil, fmt.Errorf("%s: %w", label, err)
		}
		return algorithms.Window{Label: fmt.Sprintf("%s (%d users)", label, e.Workload.Users), Observation: o,
			Users: float64(e.Workload.Users), ResponseTime: o.ResponseTimes.Mean()}, &e, nil
	case hasLabel || hasObservation:
		var w Window
		if err := strict(&w); err != nil {
			return algorithms.Window{}, nil, err
		}
		out := algorithms.Window{Label: w.Label, Users: w.Users, ResponseTime: w.ResponseTime, Problem: w.Problem}
		if out.Label == "" {
			out.Label = label
		}
		for _, f := range []struct {
			name string
			v    float64
		}{{"users", w.Users}, {"responseTime", w.ResponseTime}} {
			if !(f.v >= 0) || math.IsInf(f.v, 0) {
				return out, nil, fmt.Errorf("%s: %s: want a finite number >= 0, got %g", label, f.name, f.v)
			}
		}
		if w.Observation == nil {
			if w.Problem == "" {
				return out, nil, fmt.Errorf("%s: a window with neither an observation nor a problem", label)
			}
			return out, nil, nil
		}
		o, err := w.Observation.Algorithms()
		if err != nil && w.Problem == "" {
			return out, nil, fmt.Errorf("%s: %w", label, err)
		}
		out.Observation = o
		return out, nil, nil
	default:
		var ob Observation
		if err := strict(&ob); err != nil {
			return algorithms.Window{}, nil, fmt.Errorf("%w: want a journal record, an observation or a window", err)
		}
		o, err := ob.Algorithms()
		if err != nil {
			return algorithms.Window{}, nil, fmt.Errorf("%s: %w", label, err)
		}
		return algorithms.Window{Label: label, Observation: o}, nil, nil
	}
}
