package cli

import (
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/receiver"
)

// listeners serves the daemon's two HTTP edges over one real store on
// loopback, as the daemon wires them: the admin API (with token) and the
// webhook listener. It returns their base URLs.
func listeners(t *testing.T, token string) (adminURL, webhookURL string) {
	t.Helper()
	st := openStore(t)
	adminURL = serveAdmin(t, st, token, nil)
	rs, err := receiver.New(receiver.Options{Path: "/webhooks/batch-completed", MaxBodyBytes: 4096,
		Secret: func() []byte { return []byte("webhook-secret") }, Store: st, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewServer(rs.Handler())
	t.Cleanup(w.Close)
	return adminURL, w.URL
}

// TestCLIPointedAtTheWebhookListener: the webhook listener answers 404 to
// /admin/… in the same JSON shape as the admin API's "no such batch"; the
// CLI must say that --admin is not the admin API, not that the batch is
// missing.
func TestCLIPointedAtTheWebhookListener(t *testing.T) {
	adminURL, webhookURL := listeners(t, "cli-test-admin-token")
	t.Setenv("BATCHHOOK_ADMIN_TOKEN", "cli-test-admin-token")

	_, errOut, code := runIn(t, batchesCmd, "show", "b_x", "--admin", webhookURL)
	want := webhookURL + " does not look like batchhook's admin API (GET /admin/batches/b_x answered 404 without the admin API's Batchhook-Api header)"
	if code != 1 || !strings.Contains(errOut, want) || !strings.Contains(errOut, "BATCHHOOK_ADMIN_ADDR") || strings.Contains(errOut, "no such") {
		t.Fatalf("batches show against the webhook listener = %d\n%s\nwant %q", code, errOut, want)
	}
	// Commands that name what a 404 lacked say the same.
	if _, errOut, code = runIn(t, paymentsCmd, "show", "1", "--admin", webhookURL); code != 1 ||
		!strings.Contains(errOut, "does not look like batchhook's admin API") || strings.Contains(errOut, "no payment event") {
		t.Fatalf("payments show against the webhook listener = %d\n%s", code, errOut)
	}
	// The admin API's own 404 is still "no such batch".
	if _, errOut, code = runIn(t, batchesCmd, "show", "b_x", "--admin", adminURL); code != 1 ||
		!strings.Contains(errOut, "HTTP 404: not_found (no such batch or entry)") || strings.Contains(errOut, "does not look like") {
		t.Fatalf("batches show of an unknown batch = %d\n%s", code, errOut)
	}
}

// TestCLISaysWhichTokenProblem: no token and a wrong token are two
// different mistakes with two different fixes; the token never shows.
func TestCLISaysWhichTokenProblem(t *testing.T) {
	adminURL, _ := listeners(t, "the-daemons-token")

	t.Setenv("BATCHHOOK_ADMIN_TOKEN", "")
	os.Unsetenv("BATCHHOOK_ADMIN_TOKEN")
	_, errOut, code := runIn(t, batchesCmd, "list", "--admin", adminURL)
	if code != 1 || !strings.Contains(errOut, "HTTP 401: token_missing (the admin API needs a token: set BATCHHOOK_ADMIN_TOKEN or BATCHHOOK_ADMIN_TOKEN_FILE for the CLI too") {
		t.Fatalf("batches list without a token = %d\n%s", code, errOut)
	}

	t.Setenv("BATCHHOOK_ADMIN_TOKEN", "a-wrong-token")
	_, errOut, code = runIn(t, batchesCmd, "list", "--admin", adminURL)
	if code != 1 || !strings.Contains(errOut, "HTTP 401: token_mismatch (the admin API refused the token: the CLI's BATCHHOOK_ADMIN_TOKEN") ||
		strings.Contains(errOut, "a-wrong-token") || strings.Contains(errOut, "the-daemons-token") {
		t.Fatalf("batches list with a wrong token = %d\n%s", code, errOut)
	}

	t.Setenv("BATCHHOOK_ADMIN_TOKEN", "the-daemons-token")
	if out, errOut, code := runIn(t, batchesCmd, "list", "--admin", adminURL); code != 0 || !strings.HasPrefix(out, "BATCH") {
		t.Fatalf("batches list with the token = %d\n%s%s", code, out, errOut)
	}
}
