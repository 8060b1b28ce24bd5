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
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/softalloc/softalloc/internal/oneline"
	"github.com/softalloc/softalloc/internal/procattr"
)

// process is one run of the program.
type process struct {
	argv    []string
	env     []string
	stdin   any // written as one JSON line
	timeout time.Duration
	grace   time.Duration
	limit   int                              // bytes of stdout kept
	line    func(string)                     // one line of stderr
	note    func(format string, args ...any) // the runner's own remarks
}

// result is what a finished run left.
type result struct {
	stdout   []byte
	overflow bool
	tail     []string // the last lines of stderr
}

// tailLines is how much of stderr a failure quotes.
const tailLines = 20

// runProcess starts the program in its own process group, feeds it, and
// waits for it; a timeout or ctx's end stops the whole group. It returns only
// once the program has been reaped and its output read, so nothing of an
// attempt outlives it (short of a process that left the group on purpose).
func runProcess(ctx context.Context, p process) (result, error) {
	payload, err := json.Marshal(p.stdin)
	if err != nil {
		return result{}, fmt.Errorf("encode experiment: %w", err)
	}
	payload = append(payload, '\n')

	// Our own pipes, not cmd.StdoutPipe and friends: with *os.File ends,
	// cmd.Wait waits for the process alone, never for copying goroutines
	// that a grandchild holding the pipe open could block for ever.
	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	pipe := func() (*os.File, *os.File, error) {
		r, w, err := os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return result{}, fmt.Errorf("stdin pipe: %w", err)
	}
	outR, outW, err := pipe()
	if err != nil {
		closeAll()
		return result{}, fmt.Errorf("stdout pipe: %w", err)
	}
	errR, errW, err := pipe()
	if err != nil {
		closeAll()
		return result{}, fmt.Errorf("stderr pipe: %w", err)
	}
	defer closeAll()

	cmd := osexec.Command(p.argv[0], p.argv[1:]...)
	cmd.Env = p.env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	// Its own process group, so that one signal reaches everything it starts.
	cmd.SysProcAttr = procattr.Child()
	startErr := cmd.Start()
	// The child has its copies; ours would keep the pipes from closing.
	inR.Close()
	outW.Close()
	errW.Close()
	if startErr != nil {
		return result{}, fmt.Errorf("start %s: %w", p.argv[0], startErr)
	}
	pgid := cmd.Process.Pid

	wrote := make(chan error, 1)
	go func() {
		// A program that exits without reading its stdin breaks the pipe:
		// the write fails with EPIPE (and SIGPIPE, which main drains).
		_, err := inW.Write(payload)
		inW.Close()
		wrote <- err
	}()
	out := &capped{limit: p.limit}
	outDone := make(chan struct{})
	go func() {
		_, _ = io.Copy(out, outR)
		close(outDone)
	}()
	tail := &tailBuffer{max: tailLines}
	errDone := make(chan struct{})
	go func() {
		streamLines(errR, func(s string) {
			p.line(s)
			tail.add(s)
		})
		close(errDone)
	}()
	pipesDone := make(chan struct{})
	go func() {
		<-outDone
		<-errDone
		close(pipesDone)
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	timer := time.NewTimer(p.timeout)
	defer timer.Stop()
	var waitErr, stopped error
	select {
	case waitErr = <-exited:
		// Anything still in the group is an orphan of the trial (a load
		// generator left behind): stop it too, or it would run into the
		// next experiment.
		if groupAlive(pgid) {
			p.note("the program exited but left processes in its group; stopping them")
			stopGroup(pgid, p.grace, nil, p.note)
		}
	case <-ctx.Done():
		stopped = ctx.Err()
		p.note("%v; stopping the program's process group", stopped)
		waitErr = stopGroup(pgid, p.grace, exited, p.note)
	case <-timer.C:
		stopped = fmt.Errorf("%w after %v", ErrTimeout, p.timeout)
		p.note("timed out after %v; stopping the program's process group", p.timeout)
		waitErr = stopGroup(pgid, p.grace, exited, p.note)
	}

	// The group is gone; the pipes close unless a process left the group
	// (setsid) and kept them. Do not wait on such a process for ever.
	select {
	case <-pipesDone:
	case <-time.After(p.grace):
		p.note("a process outside the program's group still holds its output; not waiting for it")
		outR.Close()
		errR.Close()
		<-pipesDone
	}
	inW.Close() // ends a write a process outside the group still blocks
	unread := errors.Is(<-wrote, syscall.EPIPE)

	res := result{stdout: out.buf.Bytes(), overflow: out.overflow, tail: tail.lines()}
	switch {
	case stopped != nil && errors.Is(stopped, ErrTimeout):
		return res, withTail(stopped, res.tail)
	case stopped != nil:
		return res, stopped
	case waitErr != nil:
		return res, withTail(fmt.Errorf("program failed: %w", waitErr), res.tail)
	case unread:
		// Whatever it printed, it did not measure the experiment it was
		// given (issue 35): the attempt failed, and is retried. (After a
		// failed exit the exit says it: a program that fails at once often
		// never reads, and whether the write came first is chance.)
		return res, withTail(errors.New("the program exited without reading its experiment from stdin (writing it: broken pipe); it must read the experiment, one JSON line, to know what to run"), res.tail)
	}
	return res, nil
}

// stopGroup sends SIGTERM to the process group, gives it grace to finish
// (the leader reaped, no member left), then sends SIGKILL to whatever is
// left. exited, when not nil, delivers the leader's exit; stopGroup returns it.
func stopGroup(pgid int, grace time.Duration, exited <-chan error, note func(string, ...any)) error {
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	// The group has no notification of becoming empty; polling it is cheap.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var waitErr error
	reaped := exited == nil
	leader := exited
wait:
	for {
		select {
		case waitErr = <-leader:
			reaped, leader = true, nil
		case <-tick.C:
		case <-deadline.C:
			break wait
		}
		if reaped && !groupAlive(pgid) {
			return waitErr // all gone on SIGTERM
		}
	}
	// A child that ignores SIGTERM may outlive the leader: kill the group.
	note("still running %v after SIGTERM; sending SIGKILL to its process group", grace)
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	if !reaped {
		waitErr = <-exited
	}
	return waitErr
}

// groupAlive reports whether a process of the group still runs. Zombies do
// not count: an orphan that died waits for init to collect it, and some
// inits (a container's) take seconds to, which would hold up every trial.
func groupAlive(pgid int) bool {
	if syscall.Kill(-pgid, 0) != nil {
		return false
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true // no /proc to look closer: believe kill
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) >= 3 && f[2] == strconv.Itoa(pgid) && f[0] != "Z" {
			return true
		}
	}
	return false
}

// streamLines calls f for each line of r, without its line ending. A line
// longer than the buffer comes in pieces rather than growing without bound.
func streamLines(r io.Reader, f func(string)) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		b, err := br.ReadSlice('\n')
		if len(b) > 0 {
			f(strings.TrimRight(string(b), "\r\n"))
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}

// capped keeps the first limit bytes and drops the rest, still reading, so
// that a program printing too much is not blocked on a full pipe.
type capped struct {
	buf      bytes.Buffer
	limit    int
	overflow bool
}

func (c *capped) Write(b []byte) (int, error) {
	if room := c.limit - c.buf.Len(); room < len(b) {
		c.overflow = true
		c.buf.Write(b[:max(room, 0)])
		return len(b), nil
	}
	return c.buf.Write(b)
}

// tailBuffer keeps the last max lines, each shortened.
type tailBuffer struct {
	max int
	buf []string
}

func (t *tailBuffer) add(s string) {
	if len(t.buf) == t.max {
		t.buf = t.buf[1:]
	}
	t.buf = append(t.buf, oneline.Shorten(s, 500))
}

func (t *tailBuffer) lines() []string { return append([]string(nil), t.buf...) }
