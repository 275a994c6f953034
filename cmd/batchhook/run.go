package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

const usage = `batchhook receives the CPF Batch Lookup Service's signed batch.completed
webhooks, records each batch durably, pages its results from the provider's
API and exports them as files.

Usage:
  batchhook serve      run the daemon (configured by BATCHHOOK_* variables; see README)
  batchhook demo       run the daemon against the built-in provider simulator on
                       loopback, export one sample batch, print its path
  batchhook version    print version information
  batchhook help       this text
`

// run dispatches a subcommand and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], stdout, stderr)
	case "demo":
		return demo(ctx, args[1:], stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, versionLine())
		return 0
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "batchhook: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}

func versionLine() string {
	version, commit := "(devel)", "unknown"
	if info, ok := debug.ReadBuildInfo(); ok {
		if info.Main.Version != "" {
			version = info.Main.Version
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				commit = s.Value
			}
		}
	}
	return fmt.Sprintf("batchhook %s commit %s %s", version, commit, runtime.Version())
}
