// Command softalloc-man writes softalloc's man pages, one per command, from
// the commands' own help (`make man`, or go run ./cmd/softalloc-man -out man).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/softalloc/softalloc/internal/cli"
)

func main() {
	out := flag.String("out", "man", "directory for the man pages")
	flag.Parse()
	if err := cli.WriteManPages(*out); err != nil {
		fmt.Fprintln(os.Stderr, "softalloc-man:", err)
		os.Exit(1)
	}
}
