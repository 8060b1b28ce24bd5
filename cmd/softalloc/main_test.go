package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/cli"
	"github.com/softalloc/softalloc/internal/runner/exec"
)

// Issue 35: a program that exited before reading its stdin aborted the
// whole campaign ("interrupted: ... context canceled", exit 141, never
// retried) in 2 of 12 runs of --runner-cmd /bin/false: the SIGPIPE of the
// runner's write to the child's stdin was taken for a broken stdout. A
// broken pipe to a child is the child's failure; the run goes on.
func TestABrokenPipeToAChildDoesNotStopTheRun(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	var out, errs bytes.Buffer
	watchPipes(cli.Streams{Out: &out, Err: &errs}, cancel)

	// The write that broke the pipe to the child, made here for certain.
	r, w, err := os.Pipe()
	require.NoError(t, err)
	require.NoError(t, r.Close())
	_, err = w.Write([]byte("{}\n"))
	require.ErrorIs(t, err, syscall.EPIPE)
	require.NoError(t, w.Close())

	// And real programs that exit without reading: each attempt fails on
	// its own, none stops the run. /bin/false's exit beats the runner's
	// write to its stdin now and then, so run it often.
	e := algorithms.Experiment{
		Deployment: algorithms.Deployment{Topology: "1", Tiers: []algorithms.Tier{{Name: "web", Role: algorithms.RoleWeb, Replicas: 1, Cores: 1}}},
		Workload:   algorithms.Workload{Users: 1},
		Timing:     algorithms.Timing{Runtime: time.Second},
	}
	x := &exec.Runner{Command: []string{"/bin/false"}}
	for i := range 100 {
		_, err := x.RunExperiment(ctx, e)
		require.Error(t, err)
		require.False(t, errors.Is(err, context.Canceled), "attempt %d: %v", i, err)
		require.ErrorContains(t, err, "exit status 1")
	}
	require.NoError(t, ctx.Err(), "the run was stopped: %v", context.Cause(ctx))
}

// A broken stdout or stderr still stops the run, as if interrupted: the
// write that found it broken cancels, with SIGPIPE as the cause (exit 141).
func TestABrokenStdoutStopsTheRun(t *testing.T) {
	for _, stream := range []string{"stdout", "stderr"} {
		ctx, cancel := context.WithCancelCause(context.Background())
		r, w, err := os.Pipe()
		require.NoError(t, err)
		require.NoError(t, r.Close())
		s := cli.Streams{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}
		if stream == "stdout" {
			s.Out = w
		} else {
			s.Err = w
		}
		s = watchPipes(s, cancel)
		target := s.Out
		if stream == "stderr" {
			target = s.Err
		}
		_, err = target.Write([]byte("answer\n"))
		require.ErrorIs(t, err, syscall.EPIPE, stream)
		require.Error(t, ctx.Err(), "%s broken: the run stops", stream)
		var sig cli.Signaled
		require.ErrorAs(t, context.Cause(ctx), &sig)
		assert.Equal(t, syscall.SIGPIPE, sig.Signal)
		require.NoError(t, w.Close())
		cancel(nil)
	}
}
