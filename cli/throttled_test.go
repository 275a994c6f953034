package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/admin"
)

// Past the admin API's limit of wrong tokens, the CLI says why it was
// refused (429) and what to check, and exits 1: a daemon did answer.
func TestStatusSaysWhenTheAddressIsThrottled(t *testing.T) {
	facts := admin.Facts{StartedAt: time.Now().Add(-time.Hour)}
	base := statusAdmin(t, "cli-status-admin-token", func() error { return nil }, facts)
	t.Setenv("BATCHHOOK_ADMIN_TOKEN", "a-wrong-admin-token")
	for range 5 {
		if _, errOut, code := runIn(t, statusCmd, "--admin", base); code != 1 || !strings.Contains(errOut, "HTTP 401") {
			t.Fatalf("a wrong token: %d %q", code, errOut)
		}
	}
	t.Setenv("BATCHHOOK_ADMIN_TOKEN", "cli-status-admin-token")
	_, errOut, code := runIn(t, statusCmd, "--admin", base)
	if code != 1 || !strings.Contains(errOut, "HTTP 429") || !strings.Contains(errOut, "too many wrong admin tokens") ||
		!strings.Contains(errOut, "try again in 10 s") {
		t.Fatalf("the right token from a throttled address = %d %q; want 1, saying why and when to try again", code, errOut)
	}
}
