package journal_test

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/journal"
	"github.com/softalloc/softalloc/internal/jsonl"
	"github.com/softalloc/softalloc/internal/runner/replay"
	"github.com/softalloc/softalloc/internal/topology"
)

var simID = journal.Identity{Runner: "sim", Settings: map[string]string{"seed": "1"}}

func experiment(t *testing.T, users int) algorithms.Experiment {
	t.Helper()
	d, err := topology.ParseTopology("1/2/1/2")
	require.NoError(t, err)
	a, err := topology.ParseAllocation("400-150-60")
	require.NoError(t, err)
	return algorithms.Experiment{Deployment: d, Allocation: a, Workload: algorithms.Workload{Users: users},
		Timing: algorithms.Timing{RampUp: time.Minute, Runtime: 2 * time.Minute}}
}

// counting answers with the workload as throughput and counts its calls.
type counting struct {
	mu    sync.Mutex
	calls int
}

func (c *counting) RunExperiment(ctx context.Context, e algorithms.Experiment) (algorithms.Observation, error) {
	c.mu.Lock()
	c.calls++
	c.mu.Unlock()
	// The window's pages, to the page, in a histogram that holds them.
	pages := int64(math.Round(120 * float64(e.Workload.Users) / 7))
	return algorithms.Observation{RuntimeSeconds: 120, Throughput: float64(e.Workload.Users) / 7,
		ResponseTimes: algorithms.Histogram{Buckets: []algorithms.Bucket{{LE: 1, Count: pages}}, Sum: float64(pages) / 2},
		Servers:       []algorithms.ServerObservation{{Name: "app-1", Tier: "app", CPU: 0.5}}}, ctx.Err()
}

func TestJournalRecordsAndReuses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "journal.jsonl")
	j, err := journal.Open(path, simID, journal.Options{})
	require.NoError(t, err)
	x := &counting{}
	w := j.Wrap(x)
	for _, u := range []int{100, 200, 100} {
		_, err := w.RunExperiment(context.Background(), experiment(t, u))
		require.NoError(t, err)
	}
	assert.Equal(t, 2, x.calls, "the repeated experiment was answered from the journal")
	assert.Equal(t, 2, j.Ran)
	assert.Equal(t, 1, j.Reused)
	require.NoError(t, j.Close())

	// A new process reuses everything recorded.
	j2, err := journal.Open(path, simID, journal.Options{})
	require.NoError(t, err)
	o, ok := j2.Lookup(experiment(t, 200))
	require.True(t, ok)
	assert.InDelta(t, 200.0/7, o.Throughput, 1e-12)
	_, ok = j2.Lookup(experiment(t, 300))
	assert.False(t, ok)
	e := experiment(t, 200)
	e.Timing.Runtime = time.Hour
	_, ok = j2.Lookup(e)
	assert.False(t, ok, "the trial timing is part of the key")
	require.NoError(t, j2.Close())

	// The journal is a replay campaign.
	r, err := replay.Load(path)
	require.NoError(t, err)
	o, err = r.RunExperiment(context.Background(), experiment(t, 100))
	require.NoError(t, err)
	assert.InDelta(t, 100.0/7, o.Throughput, 1e-12)
}

func TestJournalTornLastLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	j, err := journal.Open(path, simID, journal.Options{})
	require.NoError(t, err)
	w := j.Wrap(&counting{})
	for _, u := range []int{100, 200} {
		_, err := w.RunExperiment(context.Background(), experiment(t, u))
		require.NoError(t, err)
	}
	require.NoError(t, j.Close())
	// A process killed mid-write leaves half a record.
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"key":"abc","runner":"sim","experiment":{"deploy`)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	j, err = journal.Open(path, simID, journal.Options{})
	require.NoError(t, err, "a torn line is a warning, never an error")
	require.Len(t, j.Warnings, 1)
	assert.Contains(t, j.Warnings[0], "last line was torn")
	assert.Contains(t, j.Warnings[0], "the 2 records before it are kept")
	assert.Equal(t, 2, j.Len())
	_, err = j.Wrap(&counting{}).RunExperiment(context.Background(), experiment(t, 300))
	require.NoError(t, err)
	require.NoError(t, j.Close())

	// What follows is whole again.
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	assert.Len(t, lines, 3)
	j, err = journal.Open(path, simID, journal.Options{})
	require.NoError(t, err)
	assert.Empty(t, j.Warnings)
	assert.Equal(t, 3, j.Len())
}

// Issue 24: a simulate with --seed 2 where --seed 1 had run was refused.
// Records of other runners and settings share the journal; none is ever
// answered for another runner or seed.
func TestJournalOfAnotherRunnerIsNotMixedIn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	j, err := journal.Open(path, simID, journal.Options{})
	require.NoError(t, err)
	_, err = j.Wrap(&counting{}).RunExperiment(context.Background(), experiment(t, 100))
	require.NoError(t, err)
	require.NoError(t, j.Close())

	for i, other := range []journal.Identity{
		{Runner: "exec", Settings: map[string]string{"command": "./trial.sh"}},
		{Runner: "sim", Settings: map[string]string{"seed": "2"}},
	} {
		o, err := journal.Open(path, other, journal.Options{})
		require.NoError(t, err, other)
		assert.Zero(t, o.Len(), "nothing of seed 1 or another runner is reused")
		assert.Equal(t, i+1, o.Others, "the records of the runs before it")
		_, ok := o.Lookup(experiment(t, 100))
		assert.False(t, ok)
		x := &counting{}
		_, err = o.Wrap(x).RunExperiment(context.Background(), experiment(t, 100))
		require.NoError(t, err)
		assert.Equal(t, 1, x.calls, "the same experiment runs again for this runner")
		require.NoError(t, o.Close())
	}
	j, err = journal.Open(path, simID, journal.Options{})
	require.NoError(t, err)
	assert.Equal(t, 1, j.Len(), "seed 1's record is still there, alone")
	assert.Equal(t, 2, j.Others)
	require.NoError(t, j.Close())

	// --fresh sets the old journal aside, it never deletes it.
	now := func() time.Time { return time.Date(2026, 11, 23, 5, 0, 0, 0, time.UTC) }
	j, err = journal.Open(path, journal.Identity{Runner: "exec"}, journal.Options{Fresh: true, Now: now})
	require.NoError(t, err)
	assert.Equal(t, 0, j.Len())
	require.NoError(t, j.Close())
	aside := path + ".20261123T050000Z.bak"
	_, err = os.Stat(aside)
	require.NoError(t, err)
	old, err := journal.Open(aside, simID, journal.Options{})
	require.NoError(t, err)
	assert.Equal(t, 1, old.Len())
}

func TestJournalFailedExperimentIsNotRecorded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	j, err := journal.Open(path, simID, journal.Options{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = j.Wrap(&counting{}).RunExperiment(ctx, experiment(t, 100))
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 0, j.Len())
	assert.Equal(t, 0, j.Ran)
}

func TestJournalConcurrentAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	j, err := journal.Open(path, simID, journal.Options{})
	require.NoError(t, err)
	w := j.Wrap(&counting{})
	var wg sync.WaitGroup
	for i := 1; i <= 40; i++ {
		wg.Add(1)
		go func(u int) {
			defer wg.Done()
			_, err := w.RunExperiment(context.Background(), experiment(t, u*10))
			assert.NoError(t, err)
		}(i)
	}
	wg.Wait()
	require.NoError(t, j.Close())
	j, err = journal.Open(path, simID, journal.Options{})
	require.NoError(t, err)
	assert.Equal(t, 40, j.Len())
	assert.Empty(t, j.Warnings)
}

func TestJournalHasOneWriterAtATime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	j, err := journal.Open(path, simID, journal.Options{})
	require.NoError(t, err)

	// flock locks belong to an open file, so a second open in this process
	// stands for a second run.
	_, err = journal.Open(path, simID, journal.Options{})
	require.Error(t, err)
	assert.True(t, errors.Is(err, journal.ErrInUse))
	assert.Contains(t, err.Error(), "--journal PATH")
	_, err = journal.Open(path, simID, journal.Options{Fresh: true})
	require.ErrorIs(t, err, journal.ErrInUse, "--fresh must not set aside a journal another run is writing")
	_, err = os.Stat(path)
	require.NoError(t, err)

	_, err = j.Wrap(&counting{}).RunExperiment(context.Background(), experiment(t, 100))
	require.NoError(t, err)
	require.NoError(t, j.Close())
	again, err := journal.Open(path, simID, journal.Options{})
	require.NoError(t, err, "closing lets the next run in")
	assert.Equal(t, 1, again.Len())
	require.NoError(t, again.Close())
}

// The key is what finds a record again: it must not change when the
// types behind the format do (journals written by earlier versions resume).
func TestKeyIsStable(t *testing.T) {
	d, err := topology.ParseTopology("1/4/1/4")
	require.NoError(t, err)
	a, err := topology.ParseAllocation("400-150-60")
	require.NoError(t, err)
	e := algorithms.Experiment{Deployment: d, Allocation: a, Workload: algorithms.Workload{Users: 6000},
		Timing: algorithms.Timing{RampUp: time.Minute, Runtime: 12 * time.Minute, RampDown: 1500 * time.Millisecond}}
	id := journal.Identity{Runner: "sim", Settings: map[string]string{"seed": "1", "model": "default@abc"}}
	assert.Equal(t, "7ec5dd8be06ca4aabd00ef69", journal.Key(id, e), "the key of b67725b's journals")
	// SLA thresholds change nothing in a fixed trial: the key stays.
	e.Timing.SLAs = []float64{2}
	assert.Equal(t, "7ec5dd8be06ca4aabd00ef69", journal.Key(id, e))
	// An adaptive trial's precision and thresholds decide when it ends:
	// both are in its key.
	e.Timing.Precision = 0.02
	adaptive := journal.Key(id, e)
	assert.NotEqual(t, "7ec5dd8be06ca4aabd00ef69", adaptive)
	e.Timing.Precision = 0.01
	assert.NotEqual(t, adaptive, journal.Key(id, e))
	e.Timing.Precision, e.Timing.SLAs = 0.02, []float64{0.5, 2}
	thresholds := journal.Key(id, e)
	assert.NotEqual(t, adaptive, thresholds)
	// So does holding it to goodput alone (a grid's trial).
	e.Timing.GoodputOnly = true
	assert.NotEqual(t, thresholds, journal.Key(id, e))
}

// A record edited by hand is refused with the line and the field, as the
// same record is through --runner replay (issue 25: a CPU of 7.5 and a
// negative throughput were reused silently).
func TestEditedRecordIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	j, err := journal.Open(path, simID, journal.Options{})
	require.NoError(t, err)
	_, err = j.Wrap(&counting{}).RunExperiment(context.Background(), experiment(t, 100))
	require.NoError(t, err)
	require.NoError(t, j.Close())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, edit := range []struct{ from, to, want string }{
		{`"cpu":0.5`, `"cpu":7.5`, `line 1: observation.servers[0].cpu: want a number in [0,1], got 7.5`},
		{`"throughput":14.285714285714286`, `"throughput":-100`, `line 1: observation.throughput: want a number >= 0, got -100`},
		{`"users":100`, `"users":0`, `line 1: experiment: want a topology and users >= 1`},
	} {
		bad := strings.Replace(string(data), edit.from, edit.to, 1)
		require.NotEqual(t, string(data), bad, edit.from)
		require.NoError(t, os.WriteFile(path, []byte(bad), 0o644))
		_, err := journal.Open(path, simID, journal.Options{})
		require.Error(t, err, edit.to)
		assert.Contains(t, err.Error(), edit.want)
		_, err = replay.Load(path)
		require.Error(t, err, "replay refuses it too")
		assert.Contains(t, err.Error(), edit.want)
	}
}

// Issue 25: a second writer through a symlink took its own lock and its
// records were lost. Every name of one file is one journal.
func TestASymlinkIsTheSameJournal(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "j.jsonl")
	link := filepath.Join(dir, "link.jsonl")
	require.NoError(t, os.Symlink("j.jsonl", link))
	j, err := journal.Open(path, simID, journal.Options{})
	require.NoError(t, err)
	_, err = journal.Open(link, simID, journal.Options{})
	require.ErrorIs(t, err, journal.ErrInUse, "the link names the journal in use")
	_, err = j.Wrap(&counting{}).RunExperiment(context.Background(), experiment(t, 100))
	require.NoError(t, err)
	require.NoError(t, j.Close())

	// Through the link once the first run is done: appended, nothing lost.
	l, err := journal.Open(link, simID, journal.Options{})
	require.NoError(t, err)
	_, err = l.Wrap(&counting{}).RunExperiment(context.Background(), experiment(t, 200))
	require.NoError(t, err)
	assert.Equal(t, 2, l.Len())
	require.NoError(t, l.Close())
	fi, err := os.Lstat(link)
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&os.ModeSymlink, "still a link")
	j, err = journal.Open(path, simID, journal.Options{})
	require.NoError(t, err)
	assert.Equal(t, 2, j.Len())
	require.NoError(t, j.Close())
	_, err = os.Stat(link + ".lock")
	assert.ErrorIs(t, err, os.ErrNotExist, "one lock, beside the file itself")
}

// Issue 25: --journal /dev/zero ran out of memory and created /dev/zero.lock.
func TestAJournalIsARegularFile(t *testing.T) {
	for _, p := range []string{"/dev/zero", "/dev/null", t.TempDir()} {
		_, err := journal.Open(p, simID, journal.Options{})
		require.Error(t, err, p)
		assert.Contains(t, err.Error(), "not a regular file")
		_, _, err = journal.ReadFile(p)
		require.Error(t, err, p)
		_, err = replay.Load(p)
		require.Error(t, err, p)
	}
	_, err := os.Stat("/dev/zero.lock")
	assert.ErrorIs(t, err, os.ErrNotExist)

	// A regular file with a runaway line is refused at the bound.
	path := filepath.Join(t.TempDir(), "big.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(strings.Repeat("x", 9<<20)), 0o644))
	_, err = journal.Open(path, simID, journal.Options{})
	require.ErrorIs(t, err, jsonl.ErrLineTooLong)
	assert.Contains(t, err.Error(), "longer than 8 MiB")
}

// Issue 25: a text file named as the journal had its unterminated last line
// cut before it was refused. Nothing changes in a file that is not a journal.
func TestAFileThatIsNotAJournalIsLeftAlone(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"notes.txt":   "shopping list\nmilk\neggs",
		"appended":    "", // a journal with text added by hand, below
		"one-line.md": "# title without a newline",
	} {
		path := filepath.Join(dir, name)
		if name == "appended" {
			j, err := journal.Open(path, simID, journal.Options{})
			require.NoError(t, err)
			_, err = j.Wrap(&counting{}).RunExperiment(context.Background(), experiment(t, 100))
			require.NoError(t, err)
			require.NoError(t, j.Close())
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			text = string(data) + "a note added by hand"
		}
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
		_, err := journal.Open(path, simID, journal.Options{})
		require.Error(t, err, name)
		assert.NotContains(t, err.Error(), "killed", "garbage is not called a torn record")
		after, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, text, string(after), "%s is unchanged", name)
	}
}

// Issue 25: two --fresh runs in one second wrote the same backup name.
func TestFreshNeverOverwritesABackup(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	now := func() time.Time { return time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC) }
	for i, users := range []int{100, 200, 300} {
		j, err := journal.Open(path, simID, journal.Options{Fresh: true, Now: now})
		require.NoError(t, err)
		assert.Zero(t, j.Len(), "run %d starts empty", i)
		_, err = j.Wrap(&counting{}).RunExperiment(context.Background(), experiment(t, users))
		require.NoError(t, err)
		require.NoError(t, j.Close())
	}
	backups, err := filepath.Glob(path + ".20261124T080000Z*.bak")
	require.NoError(t, err)
	require.Len(t, backups, 2, "both earlier journals kept")
	for i, b := range backups {
		entries, _, err := journal.ReadFile(b)
		require.NoError(t, err)
		require.Len(t, entries, 1)
		assert.Contains(t, []int{100, 200}, entries[0].Experiment.Workload.Users, "backup %d", i)
	}
}

// invalidAnswer answers with a pool busier than its size.
type invalidAnswer struct{}

func (invalidAnswer) RunExperiment(ctx context.Context, e algorithms.Experiment) (algorithms.Observation, error) {
	return algorithms.Observation{RuntimeSeconds: 120, Throughput: 10, Servers: []algorithms.ServerObservation{{Name: "cluster-1", Tier: "cluster", CPU: 1,
		Pools: []algorithms.PoolObservation{{Name: "threads", Size: 180, Busy: 180.42, FullShare: -1}}}}}, nil
}

// A record the journal would refuse on reading is never written: one bad
// line would make the whole journal unreadable for every later run.
func TestJournalRefusesAnInvalidObservation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	j, err := journal.Open(path, simID, journal.Options{})
	require.NoError(t, err)
	_, err = j.Wrap(invalidAnswer{}).RunExperiment(context.Background(), experiment(t, 100))
	require.ErrorContains(t, err, "servers[0].pools[0].busy: want a number in [0,180], got 180.42")
	require.ErrorContains(t, err, "not recorded")
	require.NoError(t, j.Close())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Empty(t, b)
	_, _, err = journal.ReadFile(path)
	require.NoError(t, err)
}

// Issue 35: a record whose key was not its experiment's answered another
// experiment (recommend --range read 400-25-25's record for 400-22-22), and
// of two records under one key with different observations the last won
// without a word. The key is recomputed from each record; a record that
// disagrees, and every record of a conflicting pair, is not reused, with a
// warning naming its line. A byte-identical copy (a resumed run's) is fine.
func TestRecordsThatDisagreeAreNotReused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	j, err := journal.Open(path, simID, journal.Options{})
	require.NoError(t, err)
	for _, u := range []int{100, 200, 300} {
		_, err = j.Wrap(&counting{}).RunExperiment(context.Background(), experiment(t, u))
		require.NoError(t, err)
	}
	require.NoError(t, j.Close())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.SplitAfter(strings.TrimSuffix(string(data), "\n"), "\n")
	require.Len(t, lines, 3)
	lines[2] += "\n"

	// Line 1 (100 users) claims the key of 400 users; line 2 (200 users)
	// has a copy with its CPU halved; line 3 (300 users) a byte-identical copy.
	k100, k400 := journal.Key(simID, experiment(t, 100)), journal.Key(simID, experiment(t, 400))
	wrongKey := strings.Replace(lines[0], k100, k400, 1)
	require.NotEqual(t, lines[0], wrongKey)
	halved := strings.Replace(lines[1], `"cpu":0.5`, `"cpu":0.25`, 1)
	require.NotEqual(t, lines[1], halved)
	require.NoError(t, os.WriteFile(path, []byte(wrongKey+lines[1]+lines[2]+halved+lines[2]), 0o644))

	j, err = journal.Open(path, simID, journal.Options{})
	require.NoError(t, err)
	defer j.Close()
	_, ok := j.Lookup(experiment(t, 400))
	assert.False(t, ok, "a record whose key is not its experiment's answers for neither")
	_, ok = j.Lookup(experiment(t, 100))
	assert.False(t, ok)
	_, ok = j.Lookup(experiment(t, 200))
	assert.False(t, ok, "two different observations of one experiment: neither is trusted")
	o, ok := j.Lookup(experiment(t, 300))
	assert.True(t, ok, "a byte-identical copy is no conflict")
	assert.InDelta(t, 300.0/7, o.Throughput, 1e-12)
	assert.Equal(t, 1, j.Len())
	all := strings.Join(j.Warnings, "\n")
	assert.Contains(t, all, "line 1: its key "+k400+" is not the key of the experiment it holds")
	assert.Contains(t, all, "(1/2/1/2, 400-150-60, 100 users, whose key is "+k100+")")
	assert.Contains(t, all, "(1/2/1/2, 400-150-60, 200 users)")
	assert.Contains(t, all, "lines 2 and 4 record different observations")
	assert.NotContains(t, all, "line 3")
	assert.NotContains(t, all, "line 5")

	// The experiments are measured again, and the run says so.
	x := &counting{}
	for _, u := range []int{100, 200, 300} {
		_, err = j.Wrap(x).RunExperiment(context.Background(), experiment(t, u))
		require.NoError(t, err)
	}
	assert.Equal(t, 2, x.calls)
}

// Issue 35: a hard link to a journal took a lock of its own, so two runs
// appended to one file. The lock is the file's, whatever its name.
func TestAHardLinkIsTheSameJournal(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "j.jsonl")
	j, err := journal.Open(path, simID, journal.Options{})
	require.NoError(t, err)
	other := filepath.Join(t.TempDir(), "linked.jsonl")
	require.NoError(t, os.Link(path, other))
	_, err = journal.Open(other, simID, journal.Options{})
	require.ErrorIs(t, err, journal.ErrInUse, "the hard link names the journal in use")
	_, err = journal.Open(other, simID, journal.Options{Fresh: true})
	require.ErrorIs(t, err, journal.ErrInUse, "--fresh must not set aside a journal another run is writing")
	_, err = os.Stat(other)
	require.NoError(t, err)
	require.NoError(t, j.Close())
	l, err := journal.Open(other, simID, journal.Options{})
	require.NoError(t, err, "closing lets the next run in")
	require.NoError(t, l.Close())
}
