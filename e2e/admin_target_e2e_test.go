package e2e

import (
	"strings"
	"testing"

	"github.com/batchhook/batchhook/lookupsim"
)

// TestCLISaysWhatIsWrongWithItsTarget: the real CLI against the real
// daemon tells "this is the webhook listener, not the admin API", "no
// token" and "a token that is not the daemon's" apart, each with its fix.
func TestCLISaysWhatIsWrongWithItsTarget(t *testing.T) {
	t.Parallel()
	s := newSetup(t, lookupsim.Options{})
	s.env["BATCHHOOK_ADMIN_TOKEN"] = adminToken
	d := startDaemon(t, s.addr, s.env)

	webhook := "http://" + s.addr
	_, errOut, code := cli(t, d, adminToken, "batches", "show", "b_x", "--admin", webhook)
	if code != 1 || !strings.Contains(errOut, webhook+" does not look like batchhook's admin API") ||
		!strings.Contains(errOut, "BATCHHOOK_ADMIN_ADDR") || strings.Contains(errOut, "no such batch") {
		t.Fatalf("batches show against the webhook listener: exit %d\n%s", code, errOut)
	}
	if _, errOut, code = cli(t, d, "", "batches", "list"); code != 1 || !strings.Contains(errOut, "token_missing (the admin API needs a token") {
		t.Fatalf("batches list without a token: exit %d\n%s", code, errOut)
	}
	if _, errOut, code = cli(t, d, "not-"+adminToken, "batches", "list"); code != 1 ||
		!strings.Contains(errOut, "token_mismatch (the admin API refused the token") || strings.Contains(errOut, adminToken) {
		t.Fatalf("batches list with a wrong token: exit %d\n%s", code, errOut)
	}
	if _, errOut, code = cli(t, d, adminToken, "batches", "show", "b_x"); code != 1 || !strings.Contains(errOut, "no such batch or entry") {
		t.Fatalf("batches show of an unknown batch: exit %d\n%s", code, errOut)
	}
}
