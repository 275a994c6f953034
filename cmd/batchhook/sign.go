package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

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

func signCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sign", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, signUsage); fs.PrintDefaults() }
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

func verifyCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, signUsage); fs.PrintDefaults() }
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

const healthcheckUsage = `Usage: batchhook healthcheck [--admin URL] [--ready]

Exits 0 when the daemon's /healthz (or, with --ready, /readyz) answers 200,
1 otherwise: a HEALTHCHECK for images without a shell or curl.
`

func healthcheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("healthcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, healthcheckUsage); fs.PrintDefaults() }
	admin := fs.String("admin", "", "admin API URL (default $BATCHHOOK_ADMIN_URL or "+config.DefaultAdminURL+")")
	ready := fs.Bool("ready", false, "check /readyz instead of /healthz")
	if _, err := parseArgs(fs, args); err != nil {
		return 2
	}
	env, err := config.LoadClient()
	if err != nil {
		fmt.Fprintf(stderr, "batchhook healthcheck: %v\n", err)
		return 1
	}
	base := env.AdminURL
	if *admin != "" {
		base = *admin
	}
	path := "/healthz"
	if *ready {
		path = "/readyz"
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+path, nil)
	if err != nil {
		fmt.Fprintf(stderr, "batchhook healthcheck: %v\n", err)
		return 1
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "batchhook healthcheck: %v\n", err)
		return 1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	fmt.Fprintf(stdout, "%s %s\n", resp.Status, strings.TrimSpace(string(body)))
	if resp.StatusCode != http.StatusOK {
		return 1
	}
	return 0
}
