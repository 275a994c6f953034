package demo

import (
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
)

// The demo's secrets, as files in its directory: a kept directory can be
// served again without the secrets ever being printed.
const (
	demoSecretFile = "signing-secret"
	demoAPIKeyFile = "api-key"
	// demoPaymentsSecretFile holds the payments signing secret (--payments
	// only): without it the printed serve command would turn payments off.
	demoPaymentsSecretFile = "payments-signing-secret"
	// demoAdminTokenFile holds the admin token of the printed serve
	// command: the console lets nobody in without one, and the CLI then
	// sends it.
	demoAdminTokenFile = "admin-token"
)

// demoNextAddrs are the loopback addresses the printed serve command uses:
// README's "by hand" ones, which the CLI's default admin URL reaches.
const (
	demoNextListen  = "127.0.0.1:8080"
	demoNextAdmin   = "127.0.0.1:9090"
	demoNextAPIBase = "http://127.0.0.1:8081" // where ./bin/lookupsim listens by default
)

// printNextSteps tells a new user what to try after the demo: README's
// "by hand" section always, and with keep the exact command that serves
// the kept directory again (the demo's own daemon is gone once it
// returns) and the CLI commands that then reach it.
func printNextSteps(w io.Writer, dir string, res demoResult, keep bool) {
	const byHand = `README "The provider simulator, and batchhook by hand" runs the simulator and the daemon yourself`
	if !keep {
		fmt.Fprintf(w, "next: %s;\n  batchhook demo (without --keep=false) keeps this directory and prints how to run the daemon and the CLI on it\n", byHand)
		return
	}
	fmt.Fprintf(w, "next, on the kept directory (the demo's daemon and simulator have stopped):\n")
	fmt.Fprintf(w, "  the export: %s (results.ndjson, manifest.json)\n", res.exportPath)
	fmt.Fprintf(w, "  the daemon again, on its database (the batch is exported: no simulator needed):\n")
	fmt.Fprintf(w, "    %s batchhook serve\n", strings.Join(demoServeEnv(dir, res.payments), " "))
	tokenFile := shellQuote(filepath.Join(dir, demoAdminTokenFile))
	fmt.Fprintf(w, "  then, in another shell (the CLI's default admin URL is http://%s; it sends the token in the file):\n", demoNextAdmin)
	fmt.Fprintf(w, "    export BATCHHOOK_ADMIN_TOKEN_FILE=%s\n", tokenFile)
	fmt.Fprintf(w, "    batchhook batches list\n    batchhook batches show %s\n", res.batchID)
	fmt.Fprintf(w, "  the console: http://%s/ui/ in a browser on this machine; sign in with the token: cat %s\n", demoNextAdmin, tokenFile)
	fmt.Fprintf(w, "  Ctrl-C stops the daemon; rm -rf %s when done. (batchhook not found: README \"Install\".)\n", shellQuote(dir))
	fmt.Fprintf(w, "  %s\n", byHand)
}

// demoServeEnv is the environment printNextSteps gives "batchhook serve"
// on a kept demo directory, as shell assignments; with payments, the
// payments secret too, so that the daemon keeps receiving payment events.
func demoServeEnv(dir string, payments bool) []string {
	env := []string{
		"BATCHHOOK_DATA_DIR=" + shellQuote(filepath.Join(dir, "data")),
		"BATCHHOOK_SIGNING_SECRET_FILE=" + shellQuote(filepath.Join(dir, demoSecretFile)),
		"BATCHHOOK_API_KEY_FILE=" + shellQuote(filepath.Join(dir, demoAPIKeyFile)),
		"BATCHHOOK_API_BASE_URL=" + demoNextAPIBase,
		"BATCHHOOK_LISTEN_ADDR=" + demoNextListen,
		"BATCHHOOK_ADMIN_ADDR=" + demoNextAdmin,
		"BATCHHOOK_ADMIN_TOKEN_FILE=" + shellQuote(filepath.Join(dir, demoAdminTokenFile)),
		"BATCHHOOK_LOG_FORMAT=console",
	}
	if payments {
		env = append(env, "BATCHHOOK_PAYMENTS_SIGNING_SECRET_FILE="+shellQuote(filepath.Join(dir, demoPaymentsSecretFile)))
	}
	return env
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9/._+-]+$`)

// shellQuote returns s as one shell word.
func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
