// Package exec runs a user's program once per experiment: the experiment as
// one JSON object on its stdin, the observation as one JSON object on its
// stdout, its stderr streamed to the log. This is how softalloc drives a
// deployment it knows nothing about (a RUBBoS testbed reached by ssh, an
// application under k6). docs/exec-protocol.md is the protocol.
//
// Each attempt runs in its own process group, so that a timeout or a
// cancellation stops the program and everything it started (ssh, the load
// generator), SIGTERM first and SIGKILL after a grace period.
package exec

import (
	"context"
	"errors"
	"fmt"
	"io"
	osexec "os/exec"
	"strings"
	"sync"
	"time"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/procattr"
)

// Defaults of a Runner's zero fields.
const (
	DefaultGrace      = 5 * time.Second
	DefaultBackoff    = 5 * time.Second
	DefaultMaxBackoff = 5 * time.Minute
	// A trial's timeout is its length plus 10% plus this: the program also
	// restarts servers and collects logs.
	DefaultTimeoutMargin = 60 * time.Second
)

// ErrTimeout marks an attempt that outlived its timeout.
var ErrTimeout = errors.New("timed out")

// DefaultTimeout is the per-attempt timeout for a trial of timing t.
func DefaultTimeout(t algorithms.Timing) time.Duration {
	return t.Total() + t.Total()/10 + DefaultTimeoutMargin
}

// Runner is an algorithms.Experimenter that runs Command per experiment.
// Set the fields before the first experiment; a Runner is then safe for
// concurrent use (each attempt is its own process).
type Runner struct {
	// Command is the program and its arguments, run without a shell.
	Command []string
	// Retries is how many times a failed attempt (non-zero exit, timeout,
	// no or an invalid observation) is repeated; cancellation is never retried.
	Retries int
	// Timeout bounds each attempt; zero means DefaultTimeout of the trial.
	Timeout time.Duration
	// Log receives the program's stderr, line by line, each line prefixed
	// with the experiment id, and the runner's notes on retries. Nil: discarded.
	Log io.Writer
	// Grace is the time between SIGTERM and SIGKILL. Zero: DefaultGrace.
	Grace time.Duration
	// Backoff is the wait before the first retry, doubled for each further
	// one up to MaxBackoff. Zero: the defaults.
	Backoff    time.Duration
	MaxBackoff time.Duration
	// Protocol is the protocol version the program speaks: 0 or 1 (the
	// messages as they always were), or RampProtocolVersion, which can run
	// a ramp (RunRamp). A program is never sent a version it did not say.
	Protocol int

	// sleep waits between attempts; tests replace it to see the backoff.
	sleep       func(ctx context.Context, d time.Duration) error
	logMu       sync.Mutex
	stdoutLimit int // maxStdout unless a test lowers it
}

var _ algorithms.Experimenter = (*Runner)(nil)

// New returns a Runner for command, checking that its program exists.
func New(command []string) (*Runner, error) {
	if len(command) == 0 || command[0] == "" {
		return nil, errors.New("no program: want --runner-cmd PROGRAM [ARGS...] (or runner.command in the deployment file)")
	}
	if _, err := osexec.LookPath(command[0]); err != nil {
		return nil, fmt.Errorf("program %q: %w", command[0], err)
	}
	return &Runner{Command: append([]string(nil), command...)}, nil
}

// RunExperiment runs the program for e, retrying failed attempts with
// exponential backoff, and returns its validated observation.
func (r *Runner) RunExperiment(ctx context.Context, e algorithms.Experiment) (algorithms.Observation, error) {
	if len(r.Command) == 0 {
		return algorithms.Observation{}, errors.New("exec: no program to run")
	}
	if r.Retries < 0 || r.Timeout < 0 {
		return algorithms.Observation{}, fmt.Errorf("exec: want retries >= 0 and timeout >= 0, got %d and %v", r.Retries, r.Timeout)
	}
	if err := r.CheckProtocol(); err != nil {
		return algorithms.Observation{}, fmt.Errorf("exec: %w", err)
	}
	req, err := NewRequest(e)
	if err != nil {
		return algorithms.Observation{}, fmt.Errorf("exec %s: %w", r.Command[0], err)
	}
	req.ProtocolVersion = r.protocol()
	timeout := r.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout(e.Timing)
	}
	what := fmt.Sprintf("exec %s, experiment %s", r.Command[0], req.ExperimentID)
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return algorithms.Observation{}, fmt.Errorf("%s: %w", what, err)
		}
		req.Attempt = attempt
		obs, err := r.attempt(ctx, req, e, timeout)
		if err == nil {
			return obs, nil
		}
		if ctx.Err() != nil {
			// The user stopped the campaign: the attempt's own error is
			// a consequence, not a failure worth retrying or reporting.
			return algorithms.Observation{}, fmt.Errorf("%s: attempt %d: %w", what, attempt, ctx.Err())
		}
		if attempt > r.Retries {
			return algorithms.Observation{}, fmt.Errorf("%s: attempt %d of %d: %w", what, attempt, r.Retries+1, err)
		}
		wait := r.backoff(attempt)
		r.logf(req.ExperimentID, "attempt %d of %d failed: %v; retrying in %v", attempt, r.Retries+1, err, wait)
		if err := r.wait(ctx, wait); err != nil {
			return algorithms.Observation{}, fmt.Errorf("%s: waiting to retry: %w", what, err)
		}
	}
}

// protocol is the version the program is spoken to in.
func (r *Runner) protocol() int { return max(ProtocolVersion, r.Protocol) }

// CheckProtocol refuses a protocol version softalloc does not speak.
func (r *Runner) CheckProtocol() error {
	if r.Protocol < 0 || r.Protocol > RampProtocolVersion {
		return fmt.Errorf("protocol version %d: want %d or %d", r.Protocol, ProtocolVersion, RampProtocolVersion)
	}
	return nil
}

// backoff is the wait after the given failed attempt (1-based).
func (r *Runner) backoff(attempt int) time.Duration {
	b, limit := r.Backoff, r.MaxBackoff
	if b <= 0 {
		b = DefaultBackoff
	}
	if limit <= 0 {
		limit = DefaultMaxBackoff
	}
	for i := 1; i < attempt && b < limit; i++ {
		b *= 2
	}
	return min(b, limit)
}

func (r *Runner) wait(ctx context.Context, d time.Duration) error {
	if r.sleep != nil {
		return r.sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *Runner) grace() time.Duration {
	if r.Grace > 0 {
		return r.Grace
	}
	return DefaultGrace
}

// logf writes one line to the log. Lines of concurrent experiments must
// not interleave mid-line, hence the lock.
func (r *Runner) logf(id, format string, args ...any) {
	if r.Log == nil {
		return
	}
	line := fmt.Sprintf(format, args...)
	r.logMu.Lock()
	defer r.logMu.Unlock()
	fmt.Fprintf(r.Log, "exec %s: %s\n", id, line)
}

// attempt runs the program once.
func (r *Runner) attempt(ctx context.Context, req Request, e algorithms.Experiment, timeout time.Duration) (algorithms.Observation, error) {
	prefix := req.ExperimentID
	if req.Attempt > 1 {
		prefix = fmt.Sprintf("%s (attempt %d)", req.ExperimentID, req.Attempt)
	}
	env := append(procattr.Environ(),
		"SOFTALLOC_EXPERIMENT_ID="+req.ExperimentID,
		fmt.Sprintf("SOFTALLOC_ATTEMPT=%d", req.Attempt),
		fmt.Sprintf("SOFTALLOC_PROTOCOL_VERSION=%d", req.ProtocolVersion))
	limit := r.stdoutLimit
	if limit == 0 {
		limit = maxStdout
	}
	res, err := runProcess(ctx, process{
		argv:    r.Command,
		env:     env,
		stdin:   req,
		timeout: timeout,
		grace:   r.grace(),
		limit:   limit,
		line:    func(s string) { r.logf(prefix, "%s", s) },
		note:    func(format string, args ...any) { r.logf(prefix, format, args...) },
	})
	if err != nil {
		return algorithms.Observation{}, err
	}
	if res.overflow {
		return algorithms.Observation{}, withTail(fmt.Errorf("stdout: more than %d bytes; want one observation", limit), res.tail)
	}
	obs, _, err := parseResponse(res.stdout, e, req.ProtocolVersion, false)
	if err != nil {
		return algorithms.Observation{}, withTail(err, res.tail)
	}
	return obs, nil
}

// withTail adds the stderr tail to a failure, where the reason usually is.
func withTail(err error, tail []string) error {
	if len(tail) == 0 {
		return err
	}
	return &tailError{err: err, tail: tail}
}

type tailError struct {
	err  error
	tail []string
}

func (e *tailError) Error() string {
	return fmt.Sprintf("%v; stderr (last %d lines): %s", e.err, len(e.tail), strings.Join(e.tail, " | "))
}

func (e *tailError) Unwrap() error { return e.err }
