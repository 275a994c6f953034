// Package cli is batchhook's command line: every command but the daemon's
// start, the admin API client they share, and the usage, dispatch and
// shell completion, all three read from one table of commands
// (commands.go), so a command is added in one place.
//
// The commands talk to a running daemon through its admin API (decoding
// its replies into admin's own view types), to the provider's sandbox
// through internal/gateway, or, with the daemon stopped, to its files.
package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/batchhook/batchhook/internal/buildinfo"
)

// Env is what main hands to a command: the standard streams and the
// SIGHUP reload requests (serve's alone).
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Reloads        <-chan struct{}
}

// RunFunc runs one command with the arguments after its name and returns
// the process exit code.
type RunFunc func(ctx context.Context, args []string, e Env) int

// Command is one row of the table.
type Command struct {
	Name string
	// Synopsis is what follows "batchhook " on the command's line of the
	// usage; empty when the command shares the line of the one before it
	// (sign | verify).
	Synopsis string
	Summary  string // the rest of that line
	Run      RunFunc
	// Subs and Flags are the words shell completion offers after the
	// command's name: its subcommands and its flags (as "name", completed
	// as --name). TestCompletionListsEveryFlag holds Flags to what the
	// command's --help lists.
	Subs, Flags []string
}

const usageHead = `batchhook receives the CPF Batch Lookup Service's signed batch.completed
webhooks, records each batch durably, pages its results from the provider's
API and exports them as files.

Usage:
`

const usageTail = `
"batchhook COMMAND --help" lists a command's flags and the environment
variables that set them.
`

// usageText is the program's usage: one line a command, in the table's
// order.
func usageText(cmds []Command) string {
	var b strings.Builder
	b.WriteString(usageHead)
	for i, c := range cmds {
		if c.Synopsis == "" {
			continue
		}
		synopsis := "batchhook " + c.Synopsis
		if i+1 < len(cmds) && cmds[i+1].Synopsis == "" {
			synopsis += " | " + cmds[i+1].Name
		}
		pad := "   "
		if len(synopsis) <= 30 {
			pad = strings.Repeat(" ", 32-len(synopsis))
		}
		fmt.Fprintf(&b, "  %s%s%s\n", synopsis, pad, c.Summary)
	}
	b.WriteString(usageTail)
	return b.String()
}

// Run runs the command args[0] with the rest of args and returns the
// process exit code. serve is the daemon's start, which the program's main
// package owns and hands in.
func Run(ctx context.Context, args []string, e Env, serve RunFunc) int {
	cmds := commands(serve)
	if len(args) == 0 {
		fmt.Fprint(e.Stderr, usageText(cmds))
		return 2
	}
	if helpWanted(args[1:]) {
		return commandHelp(ctx, cmds, args, e)
	}
	return dispatch(ctx, cmds, args, e)
}

// helpWanted reports whether a command's arguments ask for its usage: -h,
// -help or --help anywhere before a "--".
func helpWanted(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

// commandHelp runs the command for its usage. Every command parses its
// flags before it does anything, and Go's flag package stops at an
// undefined -help (printing the usage and every flag with its default), so
// nothing runs: the usage goes to stdout and asking for it exits 0, as
// "batchhook help" does. A command that prints its usage itself already
// exits 0.
func commandHelp(ctx context.Context, cmds []Command, args []string, e Env) int {
	e.Stderr = e.Stdout
	code := dispatch(ctx, cmds, args, e)
	if code == 2 {
		return 0
	}
	return code
}

// dispatch runs the command args[0] with the rest of args.
func dispatch(ctx context.Context, cmds []Command, args []string, e Env) int {
	name := args[0]
	if name == "-h" || name == "-help" || name == "--help" {
		name = "help"
	}
	for _, c := range cmds {
		if c.Name == name {
			return c.Run(ctx, args[1:], e)
		}
	}
	fmt.Fprintf(e.Stderr, "batchhook: unknown command %q\n\n%s", args[0], usageText(cmds))
	return 2
}

// helpCmd is "batchhook help": the usage, on stdout.
func helpCmd(cmds []Command) RunFunc {
	return func(_ context.Context, _ []string, e Env) int {
		fmt.Fprint(e.Stdout, usageText(cmds))
		return 0
	}
}

func versionCmd(_ context.Context, _ []string, e Env) int {
	fmt.Fprintln(e.Stdout, versionLine())
	return 0
}

func versionLine() string {
	b := buildinfo.Read()
	return fmt.Sprintf("batchhook %s commit %s %s", b.Version, b.Commit, b.Go)
}
