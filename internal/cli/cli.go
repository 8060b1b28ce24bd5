// Package cli holds softalloc's commands, and only the wiring: each command
// is a constructor newCmdX(f, runF) with an options struct, its flags, and a
// run function that calls the libraries (algorithms for the method,
// internal/runner for where experiments run, journal, report, metrics).
// Everything a command touches of the process or the world outside (streams,
// terminal, the runners) comes through a factory, so the whole CLI runs
// in-process in tests, on a fake runner if need be; a test that passes runF
// gets the parsed options instead of a run.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/oneline"
	"github.com/softalloc/softalloc/internal/runner"
	execrunner "github.com/softalloc/softalloc/internal/runner/exec"
	"github.com/softalloc/softalloc/internal/topology"
	"github.com/softalloc/softalloc/internal/version"
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
	return Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, ErrIsTerminal: isTerminal(os.Stderr)}
}

// isTerminal asks the terminal ioctl: /dev/null is a character device too,
// which a test of the file's mode takes for a terminal.
func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// factory is what commands get from outside: the process's streams and the
// registry of runners. Tests swap NewRunner for a fake.
type factory struct {
	Streams
	// NewRunner builds the runner a command's flags and deployment file name.
	NewRunner func(runner.Config) (runner.Runner, error)
	// NewClasses builds the runner of service-class trials.
	NewClasses func(runner.ClassesConfig) (runner.Classes, error)
	// Getenv reads the environment (settings kept out of command lines).
	Getenv func(string) string
	// NewWindows builds the reader of a deployment's recorded traffic.
	NewWindows func(runner.Config) (runner.WindowSource, error)
	// Now is the clock advise's --since counts back from.
	Now func() time.Time
}

// newFactory is the factory of a real process.
func newFactory(s Streams) *factory {
	return &factory{Streams: s, NewRunner: runner.New, NewClasses: runner.NewClasses, Getenv: os.Getenv,
		NewWindows: runner.NewWindows, Now: time.Now}
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

// configError marks a failure to read the command's configuration (a runner's
// settings, a model, deployment, journal or workload file) as a usage error.
// No experiment has run then, so for check it must not be the 1 of a
// regressed capacity.
func configError(err error) error {
	if err == nil {
		return nil
	}
	return usageError{err}
}

// exitError carries a chosen exit code with its message (empty: print nothing).
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }

// Signaled is the cause of a context cancelled by a signal: an interrupted
// run exits 128 plus the signal's number, as a shell reports it.
type Signaled struct{ Signal os.Signal }

func (s Signaled) Error() string { return "received " + s.Signal.String() }

// interruptedCode is the exit code of a run cut short by ctx's cancellation.
func interruptedCode(ctx context.Context) int {
	var s Signaled
	if errors.As(context.Cause(ctx), &s) {
		if n, ok := s.Signal.(syscall.Signal); ok {
			return 128 + int(n)
		}
	}
	return 128 + 2 // SIGINT, what a cancellation without a signal stands for
}

// Run executes the command line and returns the exit code. Errors are printed
// here, once, as one line.
func Run(ctx context.Context, args []string, s Streams) int { return runWith(ctx, args, newFactory(s)) }

// runWith is Run with a factory of the caller's.
func runWith(ctx context.Context, args []string, f *factory) int {
	s := f.Streams
	root := newRootCmd(f)
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
	msg := err.Error()
	var wb *algorithms.WorkloadBoundError
	if errors.As(err, &wb) {
		msg += " (--max-workload)" // the algorithms package knows no flags
	}
	if errors.Is(err, execrunner.ErrTimeout) {
		msg += " (--runner-timeout)" // nor does the exec runner's
	}
	// Whatever failed once a signal cancelled the run (an experiment, the
	// push to a Pushgateway, whose error carries the signal, not
	// context.Canceled) failed because of it: the one line says so.
	if ctx.Err() != nil {
		code = interruptedCode(ctx)
		switch {
		case msg == "":
			msg = "interrupted"
		case !strings.HasPrefix(msg, "interrupted"):
			msg = "interrupted: " + msg
		}
	}
	if msg != "" {
		// One line, and input it quotes (a topology, a file's text) cannot
		// clear the screen or forge lines.
		fmt.Fprintf(s.Err, "softalloc: %s\n", oneline.Escape(strings.ReplaceAll(msg, "\n", " ")))
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

// newRootCmd builds the command tree.
func newRootCmd(f *factory) *cobra.Command {
	s := f.Streams
	root := &cobra.Command{
		Use:   "softalloc",
		Short: "Size the thread and connection pools of an n-tier web application",
		Long: `softalloc finds the hardware resource that saturates first in an n-tier web
application and sizes every thread pool and DB connection pool, tier by tier,
with the soft-resource allocation algorithm of Wang et al. (IPDPS 2011).

With no runner named, experiments run on the embedded simulator of the paper's
RUBBoS testbed, so every command gives real answers in seconds.

Environment (a flag on the command line wins):
  SOFTALLOC_PUSHGATEWAY            --pushgateway: where to push the metrics
  SOFTALLOC_JOB                    --job: the Pushgateway job
  SOFTALLOC_PUSHGATEWAY_USER       --pushgateway-user: basic-auth user
  SOFTALLOC_PUSHGATEWAY_PASSWORD   its password (no flag: a secret on a command line shows in ps)
  SOFTALLOC_PUSHGATEWAY_CA_FILE    --pushgateway-ca-file: CA to verify an https Pushgateway
  SOFTALLOC_PUSHGATEWAY_CERT_FILE  --pushgateway-cert-file, with _KEY_FILE: a client certificate`,
		Example: `  softalloc find-critical --topology 1/2/1/2
  softalloc recommend --topology 1/4/1/4
  softalloc recommend --topology 1/4/1/4 --output json
  softalloc size -m measured.yaml
  softalloc simulate --topology 1/4/1/4 --alloc 400-6-6 --users 5000:8000:500`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       version.Long(),
	}
	// --version prints the line as it is, not cobra's "softalloc version ...".
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.SetIn(s.In)
	root.SetFlagErrorFunc(flagError)
	root.AddCommand(
		newCmdSize(f, nil),
		newCmdFindCritical(f, nil),
		newCmdRecommend(f, nil),
		newCmdAdvise(f, nil),
		newCmdSimulate(f, nil),
		newCmdValidate(f, nil),
		newCmdCheck(f, nil),
		newCmdEvaluate(f, nil),
		newCmdDegradation(f, nil),
		newCmdWorkload(f, nil),
		newCmdDoctor(f, nil),
		newCmdInit(f, nil),
	)
	// No command takes positional arguments, and no number flag NaN or
	// infinity: every comparison with NaN is false, so a bound of NaN
	// passed each check after it (check --min-goodput NaN checked nothing
	// and passed).
	for _, c := range root.Commands() {
		c.Args = noArgs
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Value.Type() == "float64" {
				f.Value = finiteValue{f.Value}
			}
		})
	}
	root.AddCommand(newCmdPresets(f, nil)) // after the loop: it takes a preset's name
	root.AddCommand(newCmdWatch(f, nil))   // after the loop: the hook's argv follows --
	root.PersistentPreRun = func(cmd *cobra.Command, _ []string) { noteDeprecated(cmd.Flags(), s.Err) }
	// Help fits 100 columns: flag descriptions wrap under themselves.
	cobra.AddTemplateFunc("flagsIn100", func(fs *pflag.FlagSet) string { return fs.FlagUsagesWrapped(helpWidth) })
	t := root.UsageTemplate()
	t = strings.ReplaceAll(t, ".LocalFlags.FlagUsages", "flagsIn100 .LocalFlags")
	t = strings.ReplaceAll(t, ".InheritedFlags.FlagUsages", "flagsIn100 .InheritedFlags")
	root.SetUsageTemplate(t)
	completeFlagValues(root)
	return root
}

// helpWidth is the widest line help prints.
const helpWidth = 100

// flagError rewrites pflag's complaint about a flag's value, which quotes Go
// ("strconv.ParseUint: parsing \"abc\": invalid syntax"), as what was expected.
func flagError(_ *cobra.Command, err error) error {
	var iv *pflag.InvalidValueError
	if !errors.As(err, &iv) || iv.GetFlag() == nil {
		return usageError{err}
	}
	f := iv.GetFlag()
	want := map[string]string{
		"uint64": "a non-negative integer", "uint": "a non-negative integer", "int": "an integer", "int64": "an integer",
		"float64": "a finite number", "duration": "a duration such as 30s or 2m", "bool": "true or false",
		"seconds":   "seconds such as 2, 0.5 or 500ms",
		"precision": fmt.Sprintf("a share in [0, %g] such as 2%% or 0.02 (0: fixed trials)", maxPrecision),
		"size":      "a memory size above 0 and at most 1PiB, such as 48MiB, 43008KiB or 1.5GiB (a bare number is MiB)",
	}[f.Value.Type()]
	if want == "" {
		want = "a value of type " + f.Value.Type()
	}
	if errors.Is(err, strconv.ErrRange) {
		want += " in range"
	}
	return usagef("--%s: want %s, got %q", f.Name, want, iv.GetValue())
}

// finiteValue is a float64 flag that refuses NaN and infinities.
type finiteValue struct{ pflag.Value }

func (v finiteValue) Set(s string) error {
	if x, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil && (math.IsNaN(x) || math.IsInf(x, 0)) {
		return errors.New("not a finite number")
	}
	return v.Value.Set(s)
}

// noArgs refuses positional arguments; a topology given as one most likely
// meant the topology flag.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if _, err := topology.ParseTopologyRange(args[0]); err == nil {
		for _, name := range []string{"topology", "topologies"} {
			if cmd.Flags().Lookup(name) != nil {
				return usagef("unexpected argument %q; did you mean --%s %s?", args[0], name, args[0])
			}
		}
	}
	return usagef("unexpected argument %q: %s takes flags only (see --help)", args[0], cmd.CommandPath())
}
