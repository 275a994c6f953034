package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/batchhook/batchhook/config"
	"github.com/batchhook/batchhook/internal/signature"
)

const signUsage = `Usage:
  batchhook sign --secret-file F [BODY_FILE|-]
  batchhook verify --secret-file F --signature S [BODY_FILE|-]
  batchhook verify --secret-file F --rejected ID [--admin URL]

sign prints the x-service-webhook-signature value for a body: Base64 of the
lowercase hex HMAC-SHA256 (88 characters). verify says whether a signature
is valid for a body and, if not, why (a 44-character value is the raw digest
encoded; a sha256= prefix is not part of the scheme). The body is read byte
for byte from the file or standard input; the secret file loses one final
line ending, like BATCHHOOK_SIGNING_SECRET_FILE. With --rejected, the body
and signature are a kept rejected delivery's (batchhook rejected list),
read through the admin API.
`

// readBody reads the body argument: a file, or standard input for "-" or none.
func readBody(pos []string, stdin io.Reader) ([]byte, error) {
	if len(pos) > 1 {
		return nil, fmt.Errorf("one body file at most, got %d", len(pos))
	}
	if len(pos) == 0 || pos[0] == "-" {
		return io.ReadAll(io.LimitReader(stdin, 16<<20))
	}
	return os.ReadFile(pos[0])
}

func signCmd(_ context.Context, args []string, e Env) int {
	stdin, stdout, stderr := e.Stdin, e.Stdout, e.Stderr
	fs := newFlags("sign", signUsage, stderr)
	secretFile := fs.String("secret-file", "", "file holding the signing secret (required)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return 2
	}
	if *secretFile == "" {
		fmt.Fprintln(stderr, "batchhook sign: --secret-file is required")
		return 2
	}
	secret, err := config.ReadSecretFile(*secretFile)
	if err != nil {
		fmt.Fprintf(stderr, "batchhook sign: %v\n", err)
		return 1
	}
	body, err := readBody(pos, stdin)
	if err != nil {
		fmt.Fprintf(stderr, "batchhook sign: read body: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, signature.Sign(secret, body))
	return 0
}

func verifyCmd(_ context.Context, args []string, e Env) int {
	stdin, stdout, stderr := e.Stdin, e.Stdout, e.Stderr
	fs := newFlags("verify", signUsage, stderr)
	secretFile := fs.String("secret-file", "", "file holding the signing secret (required)")
	sig := fs.String("signature", "", "the x-service-webhook-signature value to check (required without --rejected)")
	rejected := fs.String("rejected", "", "check the kept rejected delivery ID instead (batchhook rejected list)")
	admin := fs.String("admin", "", "with --rejected: admin API URL (default $BATCHHOOK_ADMIN_URL or "+config.DefaultAdminURL+")")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return 2
	}
	if *secretFile == "" {
		fmt.Fprintln(stderr, "batchhook verify: --secret-file is required")
		return 2
	}
	if strings.TrimSpace(*sig) == "" && *rejected == "" {
		// A missing flag is a usage error, not an invalid signature.
		fmt.Fprintln(stderr, "batchhook verify: --signature (the x-service-webhook-signature value) or --rejected ID is required")
		return 2
	}
	secret, err := config.ReadSecretFile(*secretFile)
	if err != nil {
		fmt.Fprintf(stderr, "batchhook verify: %v\n", err)
		return 1
	}
	if *rejected != "" {
		if *sig != "" || len(pos) > 0 {
			fmt.Fprintln(stderr, "batchhook verify: --rejected takes the body and signature from the kept delivery; give neither")
			return 2
		}
		return verifyRejected(*rejected, secret, *admin, stdout, stderr)
	}
	body, err := readBody(pos, stdin)
	if err != nil {
		fmt.Fprintf(stderr, "batchhook verify: read body: %v\n", err)
		return 1
	}
	reason := signature.Verify(secret, body, strings.TrimSpace(*sig))
	if reason == signature.OK {
		fmt.Fprintln(stdout, "valid")
		return 0
	}
	fmt.Fprintf(stdout, "invalid: %s (%s)\n", reason.Explain(), reason)
	return 1
}
