// Package replay answers experiments from a recorded campaign: offline
// analysis of experiments already run, on any machine.
//
// A campaign file is JSON Lines, one finished experiment per line:
//
//	{"experiment": {...}, "observation": {...}}
//
// Other keys on a line (a journal's key, runner, time) are ignored, so a
// softalloc journal is a campaign file as it is.
package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/jsonl"
	"github.com/softalloc/softalloc/internal/oneline"
	"github.com/softalloc/softalloc/internal/wire"
)

// Runner answers from the records it loaded. Experiments are matched on
// topology, allocation and workload. Where the recording holds one
// experiment under several timings, the closest to the asked one answers:
// the same timing, else the same precision and the same figures held to it
// (a validate grid's trials hold only goodput precise, a campaign's every
// figure), else the same precision (a trial measured again to decide a
// saturation test), else the last recorded; a recording is what it is, so
// any timing answers when there is no closer one.
type Runner struct {
	path     string
	records  map[string][]recorded // by Key, in the order recorded
	Warnings []string
}

// recorded is one record of an experiment.
type recorded struct {
	timing      wire.Timing
	observation algorithms.Observation
}

// closeness ranks how well a record of timing r answers an experiment
// asked with timing a.
func closeness(r, a wire.Timing) int {
	switch {
	case r.Precision != a.Precision:
		return 0
	case r.GoodputOnly != a.GoodputOnly:
		return 1
	case r.RampUpSeconds != a.RampUpSeconds || r.RuntimeSeconds != a.RuntimeSeconds ||
		r.RampDownSeconds != a.RampDownSeconds || !slices.Equal(r.SLAs, a.SLAs):
		return 2
	}
	return 3
}

// Key identifies an experiment within a campaign.
func Key(e algorithms.Experiment) string {
	return e.Deployment.Topology + "|" + e.Allocation.Key() + "|" + strconv.Itoa(e.Workload.Users)
}

// origin is what a journal line says about the run that wrote it; other
// campaign files have none.
type origin struct {
	Runner   string            `json:"runner"`
	Settings map[string]string `json:"settings"`
}

func (o origin) String() string {
	parts := []string{oneline.Quote(o.Runner)}
	for _, k := range slices.Sorted(maps.Keys(o.Settings)) {
		parts = append(parts, oneline.Quote(k)+"="+oneline.Quote(o.Settings[k]))
	}
	return strings.Join(parts, " ")
}

// Load reads a campaign file. A torn last line (a run killed mid-write) is
// skipped with a warning; any other bad line is an error naming it.
func Load(path string) (*Runner, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("replay campaign: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("replay campaign %q: not a regular file; want a campaign file (JSON Lines)", path)
	}
	r, err := Read(f, path)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Read parses a campaign from r; name is used in messages.
func Read(r io.Reader, name string) (*Runner, error) {
	run := &Runner{path: name, records: map[string][]recorded{}}
	lines, tail, err := jsonl.Read(r, jsonl.MaxLine)
	if err != nil {
		return nil, fmt.Errorf("replay campaign %q: %w", name, err)
	}
	switch {
	case len(tail) == 0:
	case jsonl.Torn(tail):
		run.Warnings = append(run.Warnings, fmt.Sprintf("campaign %q: ignoring a torn last line (%d bytes): the run that wrote it was interrupted", name, len(tail)))
	case json.Valid(tail):
		lines = append(lines, tail)
	default:
		return nil, fmt.Errorf("replay campaign %q: its last line (%d bytes, no newline) is not a record", name, len(tail))
	}
	origins := map[string]map[string]bool{} // by Key: the runs that recorded it
	for i, line := range lines {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var rec wire.Record
		if err := json.Unmarshal(line, &rec); err != nil {
			return nil, fmt.Errorf("replay campaign %q: line %d: %w", name, i+1, err)
		}
		var ramp struct {
			Window json.RawMessage `json:"window"`
		}
		if json.Unmarshal(line, &ramp) == nil && len(ramp.Window) > 0 && string(ramp.Window) != "null" {
			// A ramp's window (a journal's WindowRef) is no trial at its
			// users: its level settled from the one below.
			continue
		}
		e, o, err := rec.Algorithms()
		if err != nil {
			return nil, fmt.Errorf("replay campaign %q: line %d: %w", name, i+1, err)
		}
		// Other keys are ignored, as they always were: a line whose runner
		// or settings are not a journal's has no origin.
		var from origin
		if json.Unmarshal(line, &from) != nil {
			from = origin{}
		}
		k := Key(e)
		run.records[k] = append(run.records[k], recorded{rec.Experiment.Timing, o})
		if origins[k] == nil {
			origins[k] = map[string]bool{}
		}
		origins[k][from.String()] = true
	}
	if len(run.records) == 0 {
		return nil, fmt.Errorf("replay campaign %q: no experiments recorded", name)
	}
	// A journal shared by several runs (seeds, models, runners) holds the
	// same experiment from each: the replay cannot tell which run is meant.
	mixed := map[string]bool{}
	for _, runs := range origins {
		if len(runs) > 1 {
			for r := range runs {
				mixed[r] = true
			}
		}
	}
	if len(mixed) > 0 {
		run.Warnings = append(run.Warnings, fmt.Sprintf("campaign %q holds the same experiments from %d runs (%s): each answers with its last record; "+
			"for one run's answers give a campaign of that run alone", name, len(mixed), strings.Join(slices.Sorted(maps.Keys(mixed)), "; ")))
	}
	return run, nil
}

// ErrNotRecorded is returned for an experiment the campaign lacks.
var ErrNotRecorded = errors.New("experiment not in the recorded campaign")

// RunExperiment returns the recorded observation.
func (r *Runner) RunExperiment(ctx context.Context, e algorithms.Experiment) (algorithms.Observation, error) {
	if err := ctx.Err(); err != nil {
		return algorithms.Observation{}, err
	}
	if recs := r.records[Key(e)]; len(recs) > 0 {
		asked, best := wire.FromTiming(e.Timing), len(recs)-1
		for i := len(recs) - 2; i >= 0; i-- {
			if closeness(recs[i].timing, asked) > closeness(recs[best].timing, asked) {
				best = i
			}
		}
		return recs[best].observation, nil
	}
	return algorithms.Observation{}, fmt.Errorf("replay %q: %s, allocation %s, %d users: %w (it has %s)",
		r.path, oneline.Quote(e.Deployment.Topology), oneline.Quote(e.Allocation.Key()), e.Workload.Users, ErrNotRecorded, r.summary(e.Deployment.Topology))
}

// summary lists what the campaign holds for a topology, so a user can see
// why a lookup missed.
func (r *Runner) summary(topology string) string {
	byAlloc := map[string][]int{}
	topologies := map[string]bool{}
	for k := range r.records {
		parts := strings.Split(k, "|")
		topologies[parts[0]] = true
		if parts[0] != topology {
			continue
		}
		u, _ := strconv.Atoi(parts[2])
		byAlloc[parts[1]] = append(byAlloc[parts[1]], u)
	}
	if len(byAlloc) == 0 {
		names := make([]string, 0, len(topologies))
		for t := range topologies {
			names = append(names, oneline.Quote(t))
		}
		sort.Strings(names)
		return "no experiment of that topology; topologies: " + strings.Join(names, ", ")
	}
	allocs := make([]string, 0, len(byAlloc))
	for a, us := range byAlloc {
		sort.Ints(us)
		allocs = append(allocs, fmt.Sprintf("%s at %d..%d users (%d)", oneline.Quote(a), us[0], us[len(us)-1], len(us)))
	}
	sort.Strings(allocs)
	return strings.Join(allocs, "; ")
}
