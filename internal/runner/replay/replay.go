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
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/jsonl"
	"github.com/softalloc/softalloc/internal/oneline"
	"github.com/softalloc/softalloc/internal/wire"
)

// Runner answers from the records it loaded. Experiments are matched on
// topology, allocation and workload; the trial timing is not compared, since
// a recording is what it is. Where the recording holds one experiment at
// several precisions (a trial measured again to decide a saturation test),
// the one of the asked precision answers, else the last recorded.
type Runner struct {
	path     string
	records  map[string]algorithms.Observation
	precise  map[string]algorithms.Observation // by Key and precision
	Warnings []string
}

func precisionKey(e algorithms.Experiment) string {
	return Key(e) + "|" + strconv.FormatFloat(e.Timing.Precision, 'g', -1, 64)
}

// Key identifies an experiment within a campaign.
func Key(e algorithms.Experiment) string {
	return e.Deployment.Topology + "|" + e.Allocation.Key() + "|" + strconv.Itoa(e.Workload.Users)
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
	run := &Runner{path: name, records: map[string]algorithms.Observation{}, precise: map[string]algorithms.Observation{}}
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
	for i, line := range lines {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var rec wire.Record
		if err := json.Unmarshal(line, &rec); err != nil {
			return nil, fmt.Errorf("replay campaign %q: line %d: %w", name, i+1, err)
		}
		e, o, err := rec.Algorithms()
		if err != nil {
			return nil, fmt.Errorf("replay campaign %q: line %d: %w", name, i+1, err)
		}
		// A later record of the same experiment replaces an earlier one.
		run.records[Key(e)] = o
		run.precise[precisionKey(e)] = o
	}
	if len(run.records) == 0 {
		return nil, fmt.Errorf("replay campaign %q: no experiments recorded", name)
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
	if o, ok := r.precise[precisionKey(e)]; ok {
		return o, nil
	}
	if o, ok := r.records[Key(e)]; ok {
		return o, nil
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
