// Command batchhook is the daemon (serve), its demo, and the tools around
// it. main is tiny on purpose: it owns the signals and the exit code, and
// run does the rest.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
