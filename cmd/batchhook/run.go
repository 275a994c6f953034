package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/batchhook/batchhook/demo"
)

// env is what main hands to run: the standard streams and the SIGHUP
// reload requests.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	reloads        <-chan struct{}
}

const usage = `batchhook receives the CPF Batch Lookup Service's signed batch.completed
webhooks, records each batch durably, pages its results from the provider's
API and exports them as files.

Usage:
  batchhook serve                 run the daemon (BATCHHOOK_* variables; README "Configuration")
  batchhook config check          validate the configuration and print it (secrets as fingerprints)
  batchhook demo                  the whole pipeline on loopback against the simulator
  batchhook batches list|show|refetch|redeliver   inspect batches, refetch or redeliver one (admin API)
  batchhook deliveries list --state S   deliveries to the sinks by state (failed, pending, delivered)
  batchhook quarantine list|show  signed deliveries rejected by validation (admin API)
  batchhook rejected list|show    the last deliveries refused with 401, for verify --rejected (admin API)
  batchhook payments list|show    the payment event log: metadata and deliveries, never bodies (admin API)
  batchhook submit FILE|-         submit a file of CPFs through the daemon, within the provider's limits
  batchhook submissions show|unknown   a submission's batches; chunks left submit_unknown
  batchhook track ID...           poll batches submitted elsewhere until final, then export them
  batchhook resubmit ID           submit again the unresolved CPFs of an expired or partial batch
  batchhook erase --cpf CPF       erase one person's data (LGPD art. 18); lists the sinks that had it
  batchhook erasures list         the erasures made (keyed hash only, never the CPF)
  batchhook sign | verify         compute or check a webhook signature
  batchhook fingerprint           a secret's fingerprint, exactly as the daemon logs it
  batchhook sandbox deposit|withdraw|pay|receive|refund   rehearse the provider's sandbox payments gateway
  batchhook backup FILE           a consistent snapshot of the running daemon's database, checked
  batchhook restore FILE --data-dir DIR   (daemon stopped) swap a backup in, keeping the current database
  batchhook compact               (daemon stopped) rewrite the database without its free space
  batchhook healthcheck           exit 0 when the daemon's /healthz answers
  batchhook bench                 load a webhook endpoint (or --bare: the baseline)
  batchhook version               version, commit and Go version
  batchhook completion bash|zsh|fish   a shell completion script, generated from the commands
  batchhook help                  this text

"batchhook COMMAND --help" lists a command's flags and the environment
variables that set them.
`

// run dispatches a subcommand and returns the process exit code.
func run(ctx context.Context, args []string, e env) int {
	if len(args) == 0 {
		fmt.Fprint(e.stderr, usage)
		return 2
	}
	if helpWanted(args[1:]) {
		return commandHelp(ctx, args, e)
	}
	return dispatch(ctx, args, e)
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
func commandHelp(ctx context.Context, args []string, e env) int {
	e.stderr = e.stdout
	code := dispatch(ctx, args, e)
	if code == 2 {
		return 0
	}
	return code
}

// dispatch runs the command args[0] with the rest of args.
func dispatch(ctx context.Context, args []string, e env) int {
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], e)
	case "config":
		return configCmd(args[1:], e.stdout, e.stderr)
	case "demo":
		return demo.Run(ctx, args[1:], e.stdout, e.stderr)
	case "batches":
		return batches(ctx, args[1:], e.stdout, e.stderr)
	case "quarantine":
		return quarantine(ctx, args[1:], e.stdout, e.stderr)
	case "payments":
		return paymentsCmd(ctx, args[1:], e.stdout, e.stderr)
	case "rejected":
		return rejectedCmd(ctx, args[1:], e.stdout, e.stderr)
	case "deliveries":
		return deliveriesCmd(ctx, args[1:], e.stdout, e.stderr)
	case "submit":
		return submitCmd(ctx, args[1:], e)
	case "submissions":
		return submissionsCmd(ctx, args[1:], e)
	case "track":
		return trackCmd(ctx, args[1:], e)
	case "resubmit":
		return resubmitCmd(ctx, args[1:], e)
	case "erase":
		return eraseCmd(ctx, args[1:], e)
	case "erasures":
		return erasuresCmd(ctx, args[1:], e)
	case "sandbox":
		return sandboxCmd(ctx, args[1:], e)
	case "sign":
		return signCmd(args[1:], e.stdin, e.stdout, e.stderr)
	case "verify":
		return verifyCmd(args[1:], e.stdin, e.stdout, e.stderr)
	case "fingerprint":
		return fingerprintCmd(args[1:], e.stdout, e.stderr)
	case "bench":
		return benchCmd(ctx, args[1:], e.stdout, e.stderr)
	case "backup":
		return backupCmd(ctx, args[1:], e.stdout, e.stderr)
	case "restore":
		return restoreCmd(args[1:], e.stdout, e.stderr)
	case "compact":
		return compactCmd(args[1:], e.stdout, e.stderr)
	case "healthcheck":
		return healthcheck(ctx, args[1:], e.stdout, e.stderr)
	case "completion":
		return completionCmd(ctx, args[1:], e)
	case "version":
		fmt.Fprintln(e.stdout, versionLine())
		return 0
	case "help", "-h", "-help", "--help":
		fmt.Fprint(e.stdout, usage)
		return 0
	default:
		fmt.Fprintf(e.stderr, "batchhook: unknown command %q\n\n%s", args[0], usage)
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
