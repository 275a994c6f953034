package cli

import (
	"context"
	"slices"

	"github.com/batchhook/batchhook/demo"
)

// adminWords are the flags adminFlags gives every admin API command.
var adminWords = []string{"admin", "json"}

// commands is the table of commands, in the order the usage lists them;
// the usage, the dispatch and the shell completion are all read from it.
// serve, the daemon's start, is handed in by the program's main package.
func commands(serve RunFunc) []Command {
	cmds := []Command{
		{Name: "serve", Synopsis: "serve [--env-file FILE]", Summary: `run the daemon (BATCHHOOK_* variables; docs/configuration.md)`,
			Run: serve, Flags: []string{"env-file"}},
		{Name: "config", Synopsis: "config check", Summary: "validate the configuration and print it (secrets as fingerprints)",
			Run: configCmd, Subs: []string{"check"}, Flags: []string{"env-file", "json"}},
		{Name: "demo", Synopsis: "demo", Summary: "the whole pipeline on loopback against the simulator", Run: demoCmd,
			Flags: []string{"cpfs", "keep", "payments", "sink", "timeout"}},
		{Name: "status", Synopsis: "status", Summary: "one screen of the running daemon's health and what needs attention",
			Run: statusCmd, Flags: adminWords},
		{Name: "batches", Synopsis: "batches list|show|refetch|retry|redeliver", Summary: "inspect batches; refetch, retry now or redeliver one (admin API)",
			Run: batchesCmd, Subs: []string{"list", "show", "refetch", "retry", "redeliver"}, Flags: with(adminWords, "cursor", "limit", "sink", "state")},
		{Name: "deliveries", Synopsis: "deliveries list --state S", Summary: "deliveries to the sinks by state (failed, pending, delivered)",
			Run: deliveriesCmd, Subs: []string{"list"}, Flags: with(adminWords, "cursor", "limit", "sink", "state")},
		{Name: "quarantine", Synopsis: "quarantine list|show", Summary: "signed deliveries rejected by validation (admin API)",
			Run: quarantineCmd, Subs: []string{"list", "show"}, Flags: with(adminWords, "cursor", "limit")},
		{Name: "rejected", Synopsis: "rejected list|show", Summary: "the last deliveries refused with 401, for verify --rejected (admin API)",
			Run: rejectedCmd, Subs: []string{"list", "show"}, Flags: with(adminWords, "rejected", "secret-file")},
		{Name: "payments", Synopsis: "payments list|show", Summary: "the payment event log: metadata and deliveries, never bodies (admin API)",
			Run: paymentsCmd, Subs: []string{"list", "show"}, Flags: with(adminWords, "limit", "since")},
		{Name: "submit", Synopsis: "submit FILE|-", Summary: "submit a file of CPFs through the daemon, within the provider's limits",
			Run: submitCmd, Flags: with(adminWords, "column", "dry-run", "no-wait", "poll", "strict")},
		{Name: "submissions", Synopsis: "submissions list|show|unknown", Summary: "the submissions; a submission's batches; chunks left submit_unknown",
			Run: submissionsCmd, Subs: []string{"list", "show", "unknown", "resend"}, Flags: with(adminWords, "cursor", "limit")},
		{Name: "track", Synopsis: "track ID...", Summary: "poll batches submitted elsewhere until final, then export them",
			Run: trackCmd, Flags: adminWords},
		{Name: "resubmit", Synopsis: "resubmit ID", Summary: "submit again the unresolved CPFs of an expired or partial batch",
			Run: resubmitCmd, Flags: adminWords},
		{Name: "erase", Synopsis: "erase --cpf CPF", Summary: "erase one person's data (LGPD art. 18); lists the sinks that had it",
			Run: eraseCmd, Flags: with(adminWords, "cpf")},
		{Name: "erasures", Synopsis: "erasures list", Summary: "the erasures made (keyed hash only, never the CPF)",
			Run: erasuresCmd, Subs: []string{"list"}, Flags: with(adminWords, "cpf")},
		// sign and verify share a line of the usage and their usage text,
		// so their words too.
		{Name: "sign", Synopsis: "sign", Summary: "compute or check a webhook signature",
			Run: signCmd, Flags: []string{"admin", "rejected", "secret-file", "signature"}},
		{Name: "verify", Run: verifyCmd, Flags: []string{"admin", "rejected", "secret-file", "signature"}},
		{Name: "fingerprint", Synopsis: "fingerprint", Summary: "a secret's fingerprint, exactly as the daemon logs it",
			Run: fingerprintCmd, Flags: []string{"secret-env", "secret-file"}},
		{Name: "sandbox", Synopsis: "sandbox deposit|withdraw|pay|receive|refund", Summary: "rehearse the provider's sandbox payments gateway",
			Run: sandboxCmd, Subs: []string{"deposit", "withdraw", "pay", "receive", "refund"},
			Flags: []string{"amount", "document-number", "email", "first-name", "ip-address", "json", "last-name",
				"merchant-transaction-id", "message", "phone-number", "pix-key-type", "pix-key-value", "pix-message"}},
		{Name: "backup", Synopsis: "backup FILE", Summary: "a consistent snapshot of the running daemon's database, checked",
			Run: backupCmd, Flags: with(adminWords, "force")},
		{Name: "restore", Synopsis: "restore FILE --data-dir DIR", Summary: "(daemon stopped) swap a backup in, keeping the current database",
			Run: restoreCmd, Flags: []string{"create", "data-dir"}},
		{Name: "compact", Synopsis: "compact", Summary: "(daemon stopped) rewrite the database without its free space",
			Run: compactCmd, Flags: []string{"data-dir", "keep"}},
		{Name: "healthcheck", Synopsis: "healthcheck", Summary: "exit 0 when /healthz (--ready: /readyz) answers; --wait D keeps asking",
			Run: healthcheckCmd, Flags: []string{"admin", "ready", "wait"}},
		{Name: "bench", Synopsis: "bench", Summary: "load a webhook endpoint (or --bare: the baseline)",
			Run: benchCmd, Flags: []string{"allow-remote", "bare", "count", "duration", "invalid", "json", "replay",
				"secret-file", "server-pid", "url"}},
		{Name: "version", Synopsis: "version", Summary: "version, commit and Go version", Run: versionCmd},
		{Name: "completion", Synopsis: "completion bash|zsh|fish", Summary: "a shell completion script, generated from the commands",
			Subs: shells},
		{Name: "help", Synopsis: "help", Summary: "this text"},
	}
	// The two that read the table itself.
	for i := range cmds {
		switch cmds[i].Name {
		case "completion":
			cmds[i].Run = completionCmd(cmds)
		case "help":
			cmds[i].Run = helpCmd(cmds)
		}
	}
	return cmds
}

// with is words and more, sorted as completion offers them.
func with(words []string, more ...string) []string {
	out := append(append([]string(nil), words...), more...)
	slices.Sort(out)
	return out
}

// demoCmd is "batchhook demo" (package demo).
func demoCmd(ctx context.Context, args []string, e Env) int {
	return demo.Run(ctx, args, e.Stdout, e.Stderr)
}
