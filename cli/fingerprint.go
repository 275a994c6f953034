package cli

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/batchhook/batchhook/config"
)

const fingerprintUsage = `Usage:
  batchhook fingerprint --secret-file F
  batchhook fingerprint --secret-env NAME

Prints the fingerprint batchhook logs for a secret (the started line's
*_fingerprint fields, secret_reloaded's old and new ones): the first 8 hex
characters of its SHA-256, computed by the same function, after the same
reading rules: a file loses one final line ending, an environment variable
is used byte for byte. Compare it with the log to know which secret the
daemon holds, without printing either.
`

// fingerprintCmd prints a secret's fingerprint as the daemon logs it.
func fingerprintCmd(_ context.Context, args []string, e Env) int {
	stdout, stderr := e.Stdout, e.Stderr
	fs := newFlags("fingerprint", fingerprintUsage, stderr)
	file := fs.String("secret-file", "", "file holding the secret (the *_FILE rule: one final line ending dropped)")
	envName := fs.String("secret-env", "", "environment variable holding the secret, such as BATCHHOOK_SIGNING_SECRET")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) > 0 || (*file == "") == (*envName == "") {
		fmt.Fprintf(stderr, "batchhook fingerprint: give one of --secret-file or --secret-env, and no other argument\n%s", fingerprintUsage)
		return 2
	}
	var secret config.Secret
	if *file != "" {
		if secret, err = config.ReadSecretFile(*file); err != nil {
			fmt.Fprintf(stderr, "batchhook fingerprint: %v\n", err)
			return 1
		}
	} else {
		v, ok := os.LookupEnv(*envName)
		if !ok || v == "" {
			fmt.Fprintf(stderr, "batchhook fingerprint: %s is not set or empty\n", *envName)
			return 1
		}
		if strings.TrimRight(v, " \t\r\n") != v {
			fmt.Fprintf(stderr, "batchhook fingerprint: note: %s ends with whitespace, which is part of the secret\n", *envName)
		}
		secret = config.Secret(v)
	}
	fmt.Fprintln(stdout, secret.Fingerprint())
	return 0
}
