package exec

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"time"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/oneline"
	"github.com/softalloc/softalloc/internal/procattr"
)

// A ramp (protocol version 2) is one run of the program for the whole
// ramp: the experiment on its stdin as for a trial, then the program prints
// one observation per level's window on stdout, one line each, and after
// each reads the next step on stdin (RampStep): more users, the same users
// for another window, or 0 to end. softalloc decides the steps
// (algorithms.Ramper's next), so the program holds no campaign logic.

var _ algorithms.Ramper = (*Runner)(nil)

// CanRamp says why the program cannot run a ramp, or nil: it must have
// said it speaks version 2, since a version 1 program would read a ramp's
// first level as a trial's users and answer one observation.
func (r *Runner) CanRamp() error {
	if err := r.CheckProtocol(); err != nil {
		return err
	}
	if r.protocol() < RampProtocolVersion {
		return fmt.Errorf("the exec program speaks protocol version %d, and a ramp needs version %d: a program that runs ramps says so with runner.protocol: %d in the deployment file or --runner-protocol %d (docs/exec-protocol.md)",
			r.protocol(), RampProtocolVersion, RampProtocolVersion, RampProtocolVersion)
	}
	return nil
}

// errRampFatal marks a ramp's failure that a new attempt cannot mend: the
// campaign's own error, or a program that failed after the ramp ended.
type errRampFatal struct{ err error }

func (e *errRampFatal) Error() string { return e.err.Error() }
func (e *errRampFatal) Unwrap() error { return e.err }

// rampState is where a ramp is, across its attempts.
type rampState struct {
	users     int     // the level the program runs or was last asked for
	precision float64 // the next window's
	index     int     // the next window's index
	// offset is the runner's clock at the start of the current attempt (the
	// last window's end before it), lastEnd the program's at the last window.
	offset, lastEnd float64
}

// RunRamp runs the ramp in one process of the program. A failed attempt
// (the program exits or times out before the ramp ends, an invalid window)
// is retried as a new process from the level the ramp was at, with the
// same experiment id and the next attempt; the windows given stand. The
// timeout (Timeout, or DefaultTimeout of the ramp's timing) bounds each
// window, from the step that asked for it.
func (r *Runner) RunRamp(ctx context.Context, rp algorithms.Ramp, next func(algorithms.RampWindow) (algorithms.RampStep, error)) error {
	if len(r.Command) == 0 {
		return errors.New("exec: no program to run")
	}
	if err := r.CanRamp(); err != nil {
		return fmt.Errorf("exec %s: %w", r.Command[0], err)
	}
	if err := rp.Check(); err != nil {
		return fmt.Errorf("exec %s: %w", r.Command[0], err)
	}
	if r.Retries < 0 || r.Timeout < 0 {
		return fmt.Errorf("exec: want retries >= 0 and timeout >= 0, got %d and %v", r.Retries, r.Timeout)
	}
	e := algorithms.Experiment{Deployment: rp.Deployment, Allocation: rp.Allocation, Workload: algorithms.Workload{Users: rp.From}, Timing: rp.Timing}
	req, err := NewRampRequest(e)
	if err != nil {
		return fmt.Errorf("exec %s: %w", r.Command[0], err)
	}
	timeout := r.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout(rp.Timing)
	}
	what := fmt.Sprintf("exec %s, ramp %s", r.Command[0], req.ExperimentID)
	st := &rampState{users: rp.From, precision: rp.Timing.Precision}
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		req.Attempt, req.Workload.Users, req.Timing.Precision = attempt, st.users, st.precision
		err := r.rampAttempt(ctx, req, e, timeout, st, next)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: attempt %d: %w", what, attempt, ctx.Err())
		}
		var fatal *errRampFatal
		if errors.As(err, &fatal) {
			return fmt.Errorf("%s: %w", what, fatal.err)
		}
		if attempt > r.Retries {
			return fmt.Errorf("%s: attempt %d of %d: %w", what, attempt, r.Retries+1, err)
		}
		wait := r.backoff(attempt)
		r.logf(req.ExperimentID, "attempt %d of %d failed: %v; the ramp goes on in a new process from %d users (its load starts again) in %v",
			attempt, r.Retries+1, err, st.users, wait)
		if err := r.wait(ctx, wait); err != nil {
			return fmt.Errorf("%s: waiting to retry: %w", what, err)
		}
	}
}

// rampAttempt runs one process of a ramp until the ramp ends (nil), the
// process fails (an error a new attempt may mend) or next fails (fatal).
func (r *Runner) rampAttempt(ctx context.Context, req Request, e algorithms.Experiment, timeout time.Duration, st *rampState,
	next func(algorithms.RampWindow) (algorithms.RampStep, error)) error {
	prefix := req.ExperimentID
	if req.Attempt > 1 {
		prefix = fmt.Sprintf("%s (attempt %d)", req.ExperimentID, req.Attempt)
	}
	note := func(format string, args ...any) { r.logf(prefix, format, args...) }
	payload, err := json.Marshal(req)
	if err != nil {
		return &errRampFatal{fmt.Errorf("encode experiment: %w", err)}
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("stdin pipe: %w", err)
	}
	defer inW.Close()
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		return fmt.Errorf("stdout pipe: %w", err)
	}
	defer outR.Close()
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		outW.Close()
		return fmt.Errorf("stderr pipe: %w", err)
	}
	defer errR.Close()
	cmd := osexec.Command(r.Command[0], r.Command[1:]...)
	cmd.Env = append(procattr.Environ(),
		"SOFTALLOC_EXPERIMENT_ID="+req.ExperimentID,
		fmt.Sprintf("SOFTALLOC_ATTEMPT=%d", req.Attempt),
		fmt.Sprintf("SOFTALLOC_PROTOCOL_VERSION=%d", req.ProtocolVersion))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.SysProcAttr = procattr.Child()
	startErr := cmd.Start()
	inR.Close()
	outW.Close()
	errW.Close()
	if startErr != nil {
		return fmt.Errorf("start %s: %w", r.Command[0], startErr)
	}
	pgid := cmd.Process.Pid
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	tail := &tailBuffer{max: tailLines}
	errDone := make(chan struct{})
	go func() {
		streamLines(errR, func(s string) {
			note("%s", s)
			tail.add(s)
		})
		close(errDone)
	}()
	limit := r.stdoutLimit
	if limit == 0 {
		limit = maxStdout
	}
	lines := make(chan []byte)
	lineErr := make(chan error, 1)
	quit := make(chan struct{})
	defer close(quit)
	go func() {
		defer close(lines)
		br := bufio.NewReaderSize(outR, 64<<10)
		for {
			b, err := readLine(br, limit)
			if len(bytes.TrimSpace(b)) > 0 {
				select {
				case lines <- b:
				case <-quit:
					return
				}
			}
			if err != nil {
				if !errors.Is(err, io.EOF) {
					lineErr <- err
				}
				return
			}
		}
	}()

	// stop ends the group (SIGTERM, then SIGKILL) and waits for the leader.
	leaderDone := false
	var exitErr error
	stop := func() {
		if !leaderDone {
			exitErr = stopGroup(pgid, r.grace(), exited, note)
			leaderDone = true
		} else if groupAlive(pgid) {
			stopGroup(pgid, r.grace(), nil, note)
		}
	}
	failed := func(err error) error { return withTail(err, tail.lines()) }
	_, werr := inW.Write(append(payload, '\n'))
	unread := werr != nil

	// The next attempt's clock goes on from this one's last window.
	defer func() { st.offset, st.lastEnd = st.offset+st.lastEnd, 0 }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	ended := false
	for {
		if leaderDone && lines == nil {
			break
		}
		var exitedCh <-chan error
		if !leaderDone {
			exitedCh = exited
		}
		select {
		case b, ok := <-lines:
			if !ok {
				lines = nil
				continue
			}
			if ended {
				stop()
				return &errRampFatal{failed(fmt.Errorf("stdout after the ramp ended: want nothing more, got %q", oneline.Shorten(string(b), 120)))}
			}
			ex := e
			ex.Workload.Users = st.users
			ex.Timing.Precision = st.precision
			o, pos, err := ParseWindow(b, ex)
			if err != nil {
				stop()
				return failed(fmt.Errorf("window %d at %d users: %w", st.index, st.users, err))
			}
			w := algorithms.RampWindow{Index: st.index, Users: st.users, Start: st.offset + pos.StartSeconds, End: st.offset + pos.EndSeconds,
				Elapsed: pos.EndSeconds - st.lastEnd, Observation: o}
			st.lastEnd = pos.EndSeconds
			step, err := next(w)
			if err == nil && step.Users != 0 && step.Users < st.users {
				err = fmt.Errorf("a step from %d down to %d users; a ramp only rises", st.users, step.Users)
			}
			if err == nil && step.Precision != 0 && !(step.Precision > 0 && step.Precision < 1) {
				err = fmt.Errorf("a step's precision %g: want a share in (0, 1)", step.Precision)
			}
			if err != nil {
				stop()
				return &errRampFatal{err}
			}
			st.index++
			msg, _ := json.Marshal(RampStep{Users: step.Users, Precision: step.Precision})
			// A program that died meanwhile breaks the pipe: its exit says why.
			_, _ = inW.Write(append(msg, '\n'))
			if step.Users == 0 {
				ended = true
				inW.Close()
			} else {
				st.users, st.precision = step.Users, e.Timing.Precision
				if step.Precision > 0 {
					st.precision = step.Precision
				}
			}
			timer.Reset(timeout)
		case exitErr = <-exitedCh:
			leaderDone = true
			if groupAlive(pgid) {
				note("the program exited but left processes in its group; stopping them")
				stopGroup(pgid, r.grace(), nil, note)
			}
			// Its last lines may still be in the pipe: read them before
			// judging the exit (a grandchild that kept stdout is not waited for).
			timer.Reset(r.grace())
		case <-ctx.Done():
			note("%v; stopping the program's process group", ctx.Err())
			stop()
			return ctx.Err()
		case <-timer.C:
			if leaderDone {
				note("a process outside the program's group still holds its output; not waiting for it")
				outR.Close()
				lines = nil
				continue
			}
			if ended {
				note("still running %v after the ramp ended; stopping the program's process group", timeout)
				stop()
				return &errRampFatal{failed(fmt.Errorf("%w: the program did not exit within %v of the ramp's end", ErrTimeout, timeout))}
			}
			note("no window %v after the step; stopping the program's process group", timeout)
			stop()
			return failed(fmt.Errorf("%w: no window at %d users within %v", ErrTimeout, st.users, timeout))
		}
	}
	select {
	case <-errDone:
	case <-time.After(r.grace()):
	}
	select {
	case err := <-lineErr:
		return failed(fmt.Errorf("stdout: %w", err))
	default:
	}
	switch {
	case ended && exitErr != nil:
		return &errRampFatal{failed(fmt.Errorf("the program failed after the ramp ended: %w", exitErr))}
	case ended:
		return nil
	case exitErr != nil:
		return failed(fmt.Errorf("program failed before the ramp ended (at %d users): %w", st.users, exitErr))
	case unread:
		return failed(errors.New("the program exited without reading its experiment from stdin; it must read the experiment, one JSON line, to know what to run"))
	}
	return failed(fmt.Errorf("the program exited before the ramp ended (at %d users, awaiting a window): a ramp ends when softalloc writes {\"users\": 0}", st.users))
}

// readLine reads one line of at most limit bytes, without its line ending.
func readLine(br *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		b, err := br.ReadSlice('\n')
		line = append(line, b...)
		if len(line) > limit {
			return nil, fmt.Errorf("a line of more than %d bytes; want one observation per line", limit)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if len(line) > 0 && line[len(line)-1] == '\n' {
			line = line[:len(line)-1]
		}
		return line, err
	}
}
