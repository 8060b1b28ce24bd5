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
	"bufio"
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
	"github.com/softalloc/softalloc/internal/oneline"
	"github.com/softalloc/softalloc/internal/wire"
)

// Runner answers from the records it loaded. Experiments are matched on
// topology, allocation and workload; the trial timing is not compared, since
// a recording is what it is.
type Runner struct {
	path     string
	records  map[string]algorithms.Observation
	Warnings []string
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
	r, err := Read(f, path)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Read parses a campaign from r; name is used in messages.
func Read(r io.Reader, name string) (*Runner, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("replay campaign %q: %w", name, err)
	}
	run := &Runner{path: name, records: map[string]algorithms.Observation{}}
	lines, torn := SplitLines(data)
	if torn != "" {
		run.Warnings = append(run.Warnings, fmt.Sprintf("campaign %q: ignoring a torn last line (%d bytes): the run that wrote it was interrupted", name, len(torn)))
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
	}
	if len(run.records) == 0 {
		return nil, fmt.Errorf("replay campaign %q: no experiments recorded", name)
	}
	return run, nil
}

// SplitLines splits JSON Lines data into whole lines; an unterminated last
// line that is not a complete JSON value is returned as torn.
func SplitLines(data []byte) (lines [][]byte, torn string) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 1<<16), 1<<30)
	for sc.Scan() {
		lines = append(lines, append([]byte(nil), sc.Bytes()...))
	}
	if len(data) > 0 && data[len(data)-1] != '\n' && len(lines) > 0 {
		last := lines[len(lines)-1]
		if !json.Valid(last) {
			// The raw tail, not the scanner's line: that drops a final CR,
			// and a journal cuts exactly len(torn) bytes off the end.
			return lines[:len(lines)-1], string(data[bytes.LastIndexByte(data, '\n')+1:])
		}
	}
	return lines, ""
}

// ErrNotRecorded is returned for an experiment the campaign lacks.
var ErrNotRecorded = errors.New("experiment not in the recorded campaign")

// RunExperiment returns the recorded observation.
func (r *Runner) RunExperiment(ctx context.Context, e algorithms.Experiment) (algorithms.Observation, error) {
	if err := ctx.Err(); err != nil {
		return algorithms.Observation{}, err
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
