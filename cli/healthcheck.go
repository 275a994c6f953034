package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/batchhook/batchhook/config"
)

const healthcheckUsage = `Usage: batchhook healthcheck [--admin URL] [--ready] [--wait DURATION]

Exits 0 when the daemon's /healthz (or, with --ready, /readyz) answers 200,
1 otherwise: a HEALTHCHECK for images without a shell or curl.

With --wait (e.g. 30s, 2m) it asks again until the answer is 200 or the
time is up, then exits 1 naming what it saw last (connection refused, the
not-ready reason): for a script that starts the daemon and goes on once it
serves.
`

// healthPoll is how often healthcheck --wait asks again.
const healthPoll = 200 * time.Millisecond

// healthTimeout bounds one request.
const healthTimeout = 5 * time.Second

func healthcheckCmd(ctx context.Context, args []string, e Env) int {
	stdout, stderr := e.Stdout, e.Stderr
	fs := newFlags("healthcheck", healthcheckUsage, stderr)
	admin := fs.String("admin", "", "admin API URL (default $BATCHHOOK_ADMIN_URL or "+config.DefaultAdminURL+")")
	ready := fs.Bool("ready", false, "check /readyz instead of /healthz")
	wait := fs.Duration("wait", 0, "keep asking until OK or this long has passed (0: ask once)")
	if _, err := parseArgs(fs, args); err != nil {
		return 2
	}
	if *wait < 0 {
		fmt.Fprintf(stderr, "batchhook healthcheck: --wait must not be negative\n%s", healthcheckUsage)
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
	target := strings.TrimRight(base, "/") + path
	if *wait == 0 {
		code, status, body, err := probe(ctx, target, healthTimeout)
		if err != nil {
			fmt.Fprintf(stderr, "batchhook healthcheck: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "%s %s\n", status, body)
		if code != http.StatusOK {
			return 1
		}
		return 0
	}
	return waitHealthy(ctx, target, *wait, stdout, stderr)
}

// waitHealthy asks target until it answers 200 or wait has passed. It
// says once on stderr that it waits (a script's log then shows why it
// paused), and at the end what it saw last.
func waitHealthy(ctx context.Context, target string, wait time.Duration, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	said := false
	last := "no answer yet"
	for {
		code, status, body, err := probe(ctx, target, healthTimeout)
		switch {
		case err == nil && code == http.StatusOK:
			fmt.Fprintf(stdout, "%s %s\n", status, body)
			return 0
		case err != nil && ctx.Err() != nil:
			// The request was cut by the deadline: keep what was seen
			// before it, which says more than "context deadline".
		case err != nil:
			last = refusedOr(err)
		default:
			last = status + notReadyReason(body)
		}
		if !said {
			fmt.Fprintf(stderr, "batchhook healthcheck: waiting up to %s for %s (now: %s)\n", wait, target, last)
			said = true
		}
		select {
		case <-ctx.Done():
			fmt.Fprintf(stderr, "batchhook healthcheck: %s did not answer 200 within %s; last: %s\n", target, wait, last)
			return 1
		case <-time.After(healthPoll):
		}
	}
}

// probe asks target once: the HTTP status, its line ("200 OK") and the
// reply's first 4 KiB, trimmed.
func probe(ctx context.Context, target string, timeout time.Duration) (code int, status, body string, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return 0, "", "", fmt.Errorf("build request: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", "", err
	}
	defer resp.Body.Close()
	// The status decides; a body cut short only shortens what is shown.
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, resp.Status, strings.TrimSpace(string(raw)), nil
}

// refusedOr says "connection refused" for the common case of a daemon not
// listening yet, else the error.
func refusedOr(err error) string {
	if errors.Is(err, syscall.ECONNREFUSED) {
		return "connection refused"
	}
	return err.Error()
}

// notReadyReason is ": <reason>" from a /readyz 503 body, or "".
func notReadyReason(body string) string {
	var r struct {
		Reason string `json:"reason"`
	}
	if json.Unmarshal([]byte(body), &r) == nil && r.Reason != "" {
		return ": " + r.Reason
	}
	return ""
}
