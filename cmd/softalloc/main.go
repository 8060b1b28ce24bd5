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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], cli.StandardStreams())
	stop()
	os.Exit(code)
}
