// Package cli holds softalloc's commands: flag parsing and the wiring of a
// runner, the algorithm and the output. Everything a command touches of the
// process (streams, terminal) comes through Streams, so the whole CLI runs
// in-process in tests.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// Streams are the process's standard streams.
type Streams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
	// ErrIsTerminal says whether Err is a terminal (progress is drawn only then).
	ErrIsTerminal bool
}

// StandardStreams are os.Stdin, os.Stdout and os.Stderr.
func StandardStreams() Streams {
	tty := false
	if fi, err := os.Stderr.Stat(); err == nil {
		tty = fi.Mode()&os.ModeCharDevice != 0
	}
	return Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, ErrIsTerminal: tty}
}

// Exit codes.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
)

// usageError marks bad flags or arguments: exit code 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// exitError carries a chosen exit code with its message (empty: print nothing).
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }

// Run executes the command line and returns the exit code. Errors are printed
// here, once, as one line.
func Run(ctx context.Context, args []string, s Streams) int {
	root := NewRootCmd(s)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	code := ExitFailure
	var ue usageError
	var ee exitError
	switch {
	case errors.As(err, &ee):
		code = ee.code
	case errors.As(err, &ue), isCobraUsage(err):
		code = ExitUsage
	}
	if msg := err.Error(); msg != "" {
		fmt.Fprintf(s.Err, "softalloc: %s\n", strings.ReplaceAll(msg, "\n", " "))
	}
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		fmt.Fprintln(s.Err, "softalloc: interrupted")
	}
	return code
}

// isCobraUsage recognises cobra's and pflag's own complaints about the command line.
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown flag", "unknown shorthand", "unknown command", "invalid argument", "flag needs an argument", "accepts ", "requires at least", "required flag"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// NewRootCmd builds the command tree.
func NewRootCmd(s Streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "softalloc",
		Short: "Size the thread and connection pools of an n-tier web application",
		Long: `softalloc finds the hardware resource that saturates first in an n-tier web
application and sizes every thread pool and DB connection pool, tier by tier,
with the soft-resource allocation algorithm of Wang et al. (IPDPS 2011).

With no runner named, experiments run on the embedded simulator of the paper's
RUBBoS testbed, so every command gives real answers in seconds.`,
		Example: `  softalloc find-critical --topology 1/2/1/2
  softalloc recommend --topology 1/4/1/4
  softalloc recommend --topology 1/4/1/4 --output json
  softalloc size -f measured.yaml
  softalloc simulate --topology 1/4/1/4 --alloc 400-6-6 --users 5000:8000:500`,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.SetIn(s.In)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(
		NewSizeCmd(s),
		NewFindCriticalCmd(s),
		NewRecommendCmd(s),
		NewSimulateCmd(s),
		NewValidateCmd(s),
		NewCheckCmd(s),
		NewEvaluateCmd(s),
		NewDegradationCmd(s),
	)
	return root
}
