// Command softalloc sizes the thread and connection pools of an n-tier web
// application, tier by tier, for the hardware it has.
package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/softalloc/softalloc/internal/cli"
)

func main() {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigs
		// A second signal kills at once: the journal survives a torn line.
		signal.Stop(sigs)
		cancel(cli.Signaled{Signal: s})
	}()
	code := cli.Run(ctx, os.Args[1:], watchPipes(cli.StandardStreams(), cancel))
	cancel(nil)
	os.Exit(code)
}

// watchPipes: a reader that went away (tee, stopped by the same Ctrl-C)
// makes every write to stdout or stderr fail; by default Go then dies of
// SIGPIPE at the first one, mid-way through stopping a trial, whose
// processes ran on. With SIGPIPE notified, such a write fails with EPIPE
// instead, and the run stops as if interrupted: the trial's group stopped,
// the journal closed.
//
// The notification itself says nothing: once SIGPIPE is notified, Go
// delivers it for a broken pipe on any descriptor (os/signal, "SIGPIPE"),
// the runner's write to a program that exited without reading its stdin
// included, and that is the program's failure, retried as any other (issue
// 35: /bin/false stopped 2 of 12 campaigns). So the signal is drained, and
// only a write to our own stdout or stderr that fails with EPIPE cancels.
// Notify rather than Ignore: an ignored SIGPIPE would be inherited by the
// programs the runners start.
func watchPipes(s cli.Streams, cancel context.CancelCauseFunc) cli.Streams {
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	go func() {
		for range pipe {
		}
	}()
	broken := func() { cancel(cli.Signaled{Signal: syscall.SIGPIPE}) }
	s.Out = pipeWriter{s.Out, broken}
	s.Err = pipeWriter{s.Err, broken}
	return s
}

// pipeWriter calls broken when a write finds its reader gone.
type pipeWriter struct {
	w      io.Writer
	broken func()
}

func (p pipeWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	if errors.Is(err, syscall.EPIPE) {
		p.broken()
	}
	return n, err
}
