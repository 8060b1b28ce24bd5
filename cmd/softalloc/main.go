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
	code := cli.Run(ctx, os.Args[1:], cli.StandardStreams())
	cancel(nil)
	os.Exit(code)
}
