// Package journal keeps an append-only record of finished experiments, so
// that a campaign of hours on a real deployment survives a crash or Ctrl-C:
// every finished experiment is on disk (fsynced) before the next starts, and
// running the same command again reuses what was recorded.
//
// A journal is JSON Lines, one record a line; each line is also a replay
// campaign record ({"experiment": ..., "observation": ...}), so
// `--runner replay --campaign .softalloc/journal.jsonl` answers from it.
package journal

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/jsonl"
	"github.com/softalloc/softalloc/internal/safefile"
	"github.com/softalloc/softalloc/internal/wire"
)

// DefaultPath is where a journal lives when the user names none.
const DefaultPath = ".softalloc/journal.jsonl"

// Record is one finished experiment.
type Record struct {
	// Key identifies everything that determines the experiment: the runner
	// and its settings, topology and tiers, allocation, workload, timing.
	Key      string            `json:"key"`
	Runner   string            `json:"runner"`
	Settings map[string]string `json:"settings"`
	// Finished is when the experiment ended; Seconds how long it ran.
	Finished time.Time `json:"finished"`
	Seconds  float64   `json:"seconds"`
	// Experiment and Observation are the record's replay part (wire.Record).
	Experiment  wire.Experiment  `json:"experiment"`
	Observation wire.Observation `json:"observation"`
	// Window, when set, makes the record one window of a ramp (ramp.go):
	// the experiment is the ramp's at the window's users.
	Window *WindowRef `json:"window,omitempty"`
}

// Identity is the runner a journal belongs to.
type Identity struct {
	Runner   string
	Settings map[string]string
}

func (id Identity) String() string {
	keys := make([]string, 0, len(id.Settings))
	for k := range id.Settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + id.Settings[k]
	}
	return fmt.Sprintf("runner %s (%s)", id.Runner, strings.Join(parts, ", "))
}

func (id Identity) same(r Record) bool {
	if r.Runner != id.Runner || len(r.Settings) != len(id.Settings) {
		return false
	}
	for k, v := range id.Settings {
		if r.Settings[k] != v {
			return false
		}
	}
	return true
}

// Key derives a record key from the runner and the experiment.
func Key(id Identity, e algorithms.Experiment) string {
	// json.Marshal sorts map keys, so equal inputs give equal bytes.
	b, err := json.Marshal(struct {
		Runner     string
		Settings   map[string]string
		Deployment wire.Deployment
		Allocation string
		Users      int
		Timing     wire.Timing
	}{id.Runner, id.Settings, wire.FromDeployment(e.Deployment), e.Allocation.Key(), e.Workload.Users, wire.FromTiming(e.Timing)})
	if err != nil {
		panic(fmt.Sprintf("journal key: %v", err)) // plain data: cannot fail
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}

// ErrInUse: another process has the journal open.
var ErrInUse = errors.New("journal in use")

// quiet wraps a sentinel without adding its text: the message already says
// it in full.
type quiet struct {
	msg      string
	sentinel error
}

func (e quiet) Error() string { return e.msg }
func (e quiet) Unwrap() error { return e.sentinel }

// Journal is an open journal file.
type Journal struct {
	path     string // as the user named it
	real     string // the file it resolves to
	id       Identity
	f        *os.File
	lock     *os.File // nil where flock is missing
	mu       sync.Mutex
	records  map[string]algorithms.Observation
	windows  map[string][]algorithms.RampWindow // by ramp key, in index order (ramp.go)
	Warnings []string
	// Reused and Ran count this process's experiments; Others are the
	// records of other runners or settings the file also holds.
	Reused, Ran, Others int
}

// Options for Open.
type Options struct {
	// Fresh sets an existing journal aside (renamed with a timestamp, never
	// deleted) and starts an empty one.
	Fresh bool
	// Now is the clock (tests).
	Now func() time.Time
}

// Open opens (creating it and its directory if needed) the journal at path
// for the given runner. A torn last line, left by a process killed mid-write,
// is cut off with a warning; everything before it is kept. Records of other
// runners or settings stay in the file and are never answered for this one.
// A file that is not a journal is refused before anything in it changes.
func Open(path string, id Identity, opts Options) (*Journal, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("journal %q: %w", path, err)
	}
	// Two names of one file (a symlink) are one journal: the lock and the
	// writes go to the file the path resolves to.
	real, err := safefile.Resolve(path)
	if err != nil {
		return nil, fmt.Errorf("journal %q: %w", path, err)
	}
	if fi, err := os.Stat(real); err == nil && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("journal %q: not a regular file (%s); want a journal file, or a path where one can be created", path, safefile.Describe(fi.Mode()))
	}
	j := &Journal{path: path, real: real, id: id, records: map[string]algorithms.Observation{}, windows: map[string][]algorithms.RampWindow{}}
	// Locked before --fresh renames anything: the other run may be writing.
	lk, err := lock(path, real)
	if err != nil {
		return nil, err
	}
	j.lock = lk
	if err := j.open(opts); err != nil {
		j.unlock()
		return nil, err
	}
	return j, nil
}

func (j *Journal) open(opts Options) error {
	_, statErr := os.Stat(j.real)
	// Append only: every write lands at the end, whoever else writes.
	openLocked := func() (*os.File, error) {
		f, err := os.OpenFile(j.real, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("journal %q: %w", j.path, err)
		}
		// The file's own lock too: a hard link in another directory has
		// a .lock of its own (issue 35).
		if err := lockFile(j.path, f); err != nil {
			f.Close()
			return nil, err
		}
		return f, nil
	}
	f, err := openLocked()
	if err != nil {
		return err
	}
	if opts.Fresh && statErr == nil {
		// Set aside while locked: a run writing it through another name
		// holds the file's lock, and openLocked refused above.
		aside, err := setAside(j.real, opts.Now())
		f.Close()
		if err != nil {
			return fmt.Errorf("journal %q: set aside: %w", j.path, err)
		}
		j.Warnings = append(j.Warnings, fmt.Sprintf("--fresh: the previous journal is kept as %s", aside))
		if f, err = openLocked(); err != nil {
			return err
		}
	}
	if err := j.load(f); err != nil {
		f.Close()
		return err
	}
	j.f = f
	return nil
}

// setAside moves the journal to a name of its own, never over another file:
// two --fresh runs in one second keep both earlier journals.
func setAside(path string, now time.Time) (string, error) {
	base := fmt.Sprintf("%s.%s", path, now.UTC().Format("20060102T150405Z"))
	for n := 1; ; n++ {
		aside := base + ".bak"
		if n > 1 {
			aside = fmt.Sprintf("%s-%d.bak", base, n)
		}
		// A link fails where the name is taken; a rename would replace it.
		err := os.Link(path, aside)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		return aside, os.Remove(path)
	}
}

func (j *Journal) unlock() error {
	if j.lock == nil {
		return nil
	}
	err := j.lock.Close() // closing drops the flock
	j.lock = nil
	return err
}

// load reads the journal's records. Every line is checked before anything
// in the file changes: a file that is not a journal is refused whole.
func (j *Journal) load(f *os.File) error {
	lines, tail, err := jsonl.Read(f, jsonl.MaxLine)
	if err != nil {
		return fmt.Errorf("journal %q: %w: not a journal?", j.path, err)
	}
	var repair func() error
	switch {
	case len(tail) == 0:
	case jsonl.Torn(tail):
		// Cut the torn tail so the next append starts on a line of its own.
		keep := j.size(f) - int64(len(tail))
		repair = func() error {
			if err := f.Truncate(keep); err != nil {
				return fmt.Errorf("journal %q: cut torn last line: %w", j.path, err)
			}
			j.Warnings = append(j.Warnings, fmt.Sprintf(
				"journal %q: its last line was torn (%d bytes, a run killed mid-write) and was dropped; the %d records before it are kept",
				j.path, len(tail), len(lines)))
			return nil
		}
	case json.Valid(tail):
		// A whole last record without its newline: end the line before appending.
		lines = append(lines, tail)
		repair = func() error {
			if _, err := f.Write([]byte{'\n'}); err != nil {
				return fmt.Errorf("journal %q: %w", j.path, err)
			}
			return nil
		}
	default:
		return fmt.Errorf("journal %q: its last line (%d bytes, no newline) is not a record: not a journal, or text added by hand; move the file or mend that line",
			j.path, len(tail))
	}
	// first is, by key, the first record of it: its line and observation.
	type firstRecord struct {
		line int
		obs  []byte
		e    algorithms.Experiment
	}
	first := map[string]firstRecord{}
	conflicts := map[string][]int{}
	var mismatched []string
	for i, line := range lines {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var r Record
		if err := json.Unmarshal(line, &r); err != nil {
			return fmt.Errorf("journal %q: line %d: %w; %s", j.path, i+1, err, mendLine)
		}
		// A record edited by hand (a CPU of 7.5) is refused, not reused: it
		// enters the algorithm as any runner's observation would.
		e, o, err := (wire.Record{Experiment: r.Experiment, Observation: r.Observation}).Algorithms()
		if err != nil {
			return fmt.Errorf("journal %q: line %d: %w; %s", j.path, i+1, err, mendLine)
		}
		// Records of other runners and settings share the file: their
		// keys hold their runner and settings, so they are never found
		// for this one (comparing seeds needs no journal per seed).
		if !j.id.same(r) {
			j.Others++
			continue
		}
		if r.Window != nil {
			if err := j.loadWindow(r, e, o, i+1); err != nil {
				mismatched = append(mismatched, err.Error())
			}
			continue
		}
		// The key is what a lookup trusts: one that is not the record's
		// own experiment's would answer another experiment (issue 35).
		// Which of the two is wrong cannot be told, so neither is answered.
		if key := Key(j.id, e); key != r.Key {
			mismatched = append(mismatched, fmt.Sprintf("line %d: its key %s is not the key of the experiment it holds (%s, whose key is %s): not reused",
				i+1, r.Key, describe(e), key))
			continue
		}
		obs, err := json.Marshal(r.Observation)
		if err != nil {
			return fmt.Errorf("journal %q: line %d: %w", j.path, i+1, err)
		}
		if f, ok := first[r.Key]; ok {
			// The same observation twice (a resumed run's copy) is one
			// answer; two different ones are a choice nobody made.
			if !bytes.Equal(f.obs, obs) {
				if len(conflicts[r.Key]) == 0 {
					conflicts[r.Key] = []int{f.line}
				}
				conflicts[r.Key] = append(conflicts[r.Key], i+1)
			}
			continue
		}
		first[r.Key] = firstRecord{line: i + 1, obs: obs, e: e}
		j.records[r.Key] = o
	}
	const show = 5 // past a few, more lines of the same do not help
	for n, m := range mismatched {
		if n == show {
			j.Warnings = append(j.Warnings, fmt.Sprintf("journal %q: and %d more records whose key is not their experiment's", j.path, len(mismatched)-show))
			break
		}
		j.Warnings = append(j.Warnings, fmt.Sprintf("journal %q: %s; that experiment is measured again (mend or delete the line)", j.path, m))
	}
	keys := make([]string, 0, len(conflicts))
	for k := range conflicts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool { return conflicts[keys[a]][0] < conflicts[keys[b]][0] })
	for _, k := range keys {
		delete(j.records, k)
		at := conflicts[k]
		names := make([]string, len(at))
		for n, l := range at {
			names[n] = fmt.Sprint(l)
		}
		list := strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
		j.Warnings = append(j.Warnings, fmt.Sprintf(
			"journal %q: lines %s record different observations of one experiment (%s): none is reused; it is measured again (delete the lines that are wrong)",
			j.path, list, describe(first[k].e)))
	}
	if repair != nil {
		return repair()
	}
	return nil
}

// describe names an experiment in a warning: "1/2/1/2, 400-150-60, 100 users".
func describe(e algorithms.Experiment) string {
	return fmt.Sprintf("%s, %s, %d users", e.Deployment.Topology, e.Allocation, e.Workload.Users)
}

// size is the file's length now.
func (j *Journal) size(f *os.File) int64 {
	fi, err := f.Stat()
	if err != nil {
		return 0
	}
	return fi.Size()
}

// Path is the journal's file.
func (j *Journal) Path() string { return j.path }

// Len is the number of records of this runner.
func (j *Journal) Len() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.records)
}

// Lookup returns the recorded observation of an experiment.
func (j *Journal) Lookup(e algorithms.Experiment) (algorithms.Observation, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	o, ok := j.records[Key(j.id, e)]
	return o, ok
}

// Append writes a finished experiment and syncs it to disk before returning.
// An observation the journal would refuse on reading is refused here: a
// record that fails its check would make the whole journal unreadable.
func (j *Journal) Append(e algorithms.Experiment, o algorithms.Observation, took time.Duration, finished time.Time) error {
	if err := o.Validate(); err != nil {
		return fmt.Errorf("journal %q: the runner's observation at %d users is invalid, not recorded: %w", j.path, e.Workload.Users, err)
	}
	r := Record{Key: Key(j.id, e), Runner: j.id.Runner, Settings: j.id.Settings, Finished: finished.UTC(),
		Seconds: took.Seconds(), Experiment: wire.FromExperiment(e), Observation: wire.FromObservation(o)}
	if err := j.write(r); err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.records[r.Key] = o
	return nil
}

// write appends one record and syncs it.
func (j *Journal) write(r Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("journal %q: %w", j.path, err)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	// One write per record: a crash leaves at most a torn last line.
	if _, err := j.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("journal %q: append: %w", j.path, err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("journal %q: sync: %w", j.path, err)
	}
	return nil
}

// Close closes the file and lets another run open it.
func (j *Journal) Close() error {
	err := j.f.Close()
	if uerr := j.unlock(); err == nil {
		err = uerr
	}
	return err
}

// Wrap returns an Experimenter that answers recorded experiments from the
// journal and records every experiment x finishes before returning it.
// It is safe for concurrent use when x is.
func (j *Journal) Wrap(x algorithms.Experimenter) algorithms.Experimenter {
	return &journaled{j: j, x: x}
}

type journaled struct {
	j *Journal
	x algorithms.Experimenter
}

func (w *journaled) RunExperiment(ctx context.Context, e algorithms.Experiment) (algorithms.Observation, error) {
	if o, ok := w.j.Lookup(e); ok {
		w.j.mu.Lock()
		w.j.Reused++
		w.j.mu.Unlock()
		return o, nil
	}
	start := time.Now()
	o, err := w.x.RunExperiment(ctx, e)
	if err != nil {
		return o, err
	}
	if err := w.j.Append(e, o, time.Since(start), time.Now()); err != nil {
		return o, err
	}
	w.j.mu.Lock()
	w.j.Ran++
	w.j.mu.Unlock()
	return o, nil
}

// Entry is one record as a reader of the journal sees it.
type Entry struct {
	Runner      string
	Settings    map[string]string
	Experiment  algorithms.Experiment
	Observation algorithms.Observation
}

// ReadFile reads every record of the journal at path, whatever its runner,
// without opening it for writing (another run may hold it). Each record is
// validated as Open validates it; a torn last line is left out with a
// warning.
func ReadFile(path string) ([]Entry, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("journal %q: %w", path, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && !fi.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("journal %q: not a regular file (%s); want a journal file", path, safefile.Describe(fi.Mode()))
	}
	lines, tail, err := jsonl.Read(f, jsonl.MaxLine)
	if err != nil {
		return nil, nil, fmt.Errorf("journal %q: %w: not a journal?", path, err)
	}
	var warnings []string
	switch {
	case len(tail) == 0:
	case jsonl.Torn(tail):
		warnings = append(warnings, fmt.Sprintf("journal %q: ignoring a torn last line", path))
	case json.Valid(tail):
		lines = append(lines, tail)
	default:
		return nil, nil, fmt.Errorf("journal %q: its last line (%d bytes, no newline) is not a record", path, len(tail))
	}
	var out []Entry
	for i, line := range lines {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var r Record
		if err := json.Unmarshal(line, &r); err != nil {
			return nil, warnings, fmt.Errorf("journal %q: line %d: %w; %s", path, i+1, err, mendLine)
		}
		e, o, err := (wire.Record{Experiment: r.Experiment, Observation: r.Observation}).Algorithms()
		if err != nil {
			return nil, warnings, fmt.Errorf("journal %q: line %d: %w; %s", path, i+1, err, mendLine)
		}
		out = append(out, Entry{Runner: r.Runner, Settings: r.Settings, Experiment: e, Observation: o})
	}
	return out, warnings, nil
}

// mendLine is what to do about a bad record: the journal refuses to guess
// which experiments it held.
const mendLine = "mend or delete that line, or move the file aside (--fresh does) to run those experiments again"
