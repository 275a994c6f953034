// Command batchhook is the daemon (serve), its demo, and the tools around
// it. main is tiny on purpose: it owns the signals and the exit code;
// package cli runs every command from its table, and serve, the daemon's
// start, is handed to it from here.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/batchhook/batchhook/cli"
)

func main() {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	ctx, cancel := context.WithCancel(context.Background())
	reloads := make(chan struct{}, 1)
	done := make(chan int, 1)
	go func() {
		done <- cli.Run(ctx, os.Args[1:], cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Reloads: reloads}, serve)
	}()
	stopping := false
	for {
		select {
		case code := <-done:
			os.Exit(code)
		case s := <-sigs:
			switch {
			case s == syscall.SIGHUP:
				select {
				case reloads <- struct{}{}:
				default: // a reload is already pending
				}
			case stopping:
				fmt.Fprintln(os.Stderr, "batchhook: second signal; exiting at once")
				os.Exit(130)
			default:
				stopping = true
				cancel()
			}
		}
	}
}
