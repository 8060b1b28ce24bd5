package cli

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/journal"
	"github.com/softalloc/softalloc/internal/runner"
)

// journalFlags choose where finished experiments are recorded.
type journalFlags struct {
	path  string
	fresh bool
	off   bool
}

func (f *journalFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.path, "journal", journal.DefaultPath, "journal of finished experiments: re-running the command reuses them")
	fs.BoolVar(&f.fresh, "fresh", false, "set the journal aside (renamed, not deleted) and run every experiment again")
	fs.BoolVar(&f.off, "no-journal", false, "record nothing and reuse nothing")
}

// check refuses contradicting journal flags.
func (f *journalFlags) check() error {
	switch {
	case f.fresh && f.off:
		return usagef("--fresh and --no-journal contradict: --fresh sets the journal aside and records anew, --no-journal records nothing; give one")
	case f.off && f.path != journal.DefaultPath:
		return usagef("--journal %s and --no-journal contradict: --no-journal records nothing; give one", f.path)
	}
	return nil
}

// open wraps the runner in the journal. The replay runner answers from a
// recording already and is never journaled.
func (f *journalFlags) open(s Streams, r runner.Runner) (algorithms.Experimenter, *journal.Journal, error) {
	if f.off || r.Name == "replay" {
		return r.Experimenter, nil, nil
	}
	j, err := journal.Open(f.path, journal.Identity{Runner: r.Name, Settings: r.Settings}, journal.Options{Fresh: f.fresh})
	if err != nil {
		// No experiment has run: for check, this must not read as the 1 of
		// a regressed capacity.
		return nil, nil, configError(err)
	}
	for _, w := range j.Warnings {
		fmt.Fprintf(s.Err, "softalloc: warning: %s\n", w)
	}
	return j.Wrap(r.Experimenter), j, nil
}

// finish closes the journal and tells the user what it holds; after an
// interruption it says how to resume.
func finishJournal(ctx context.Context, s Streams, j *journal.Journal, quiet bool, err error) error {
	if j == nil {
		return err
	}
	if cerr := j.Close(); cerr != nil && err == nil {
		err = cerr
	}
	if err != nil && ctx.Err() != nil {
		return exitError{interruptedCode(ctx), fmt.Errorf("interrupted: %d finished experiments are safe in %s (%d run now, %d reused); run the same command again to resume",
			j.Len(), j.Path(), j.Ran, j.Reused)}
	}
	if !quiet && s.ErrIsTerminal && err == nil {
		fmt.Fprintf(s.Err, "softalloc: journal %s: %d experiments run, %d reused\n", j.Path(), j.Ran, j.Reused)
	}
	return err
}
