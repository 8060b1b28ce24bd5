// Command softalloc sizes the thread and connection pools of an n-tier web
// application, tier by tier, for the hardware it has.
package main

import (
	"context"
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
	// A reader that went away (tee, stopped by the same Ctrl-C) makes every
	// write to stdout or stderr fail; by default Go then dies of SIGPIPE at
	// the first one, mid-way through stopping a trial, whose processes ran
	// on. Caught, a write fails with EPIPE and the run stops as if
	// interrupted: the trial's group stopped, the journal closed.
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	go func() {
		<-pipe
		cancel(cli.Signaled{Signal: syscall.SIGPIPE})
	}()
	code := cli.Run(ctx, os.Args[1:], cli.StandardStreams())
	cancel(nil)
	os.Exit(code)
}
