package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/config"
	"github.com/batchhook/batchhook/internal/testutil"
)

// A SIGHUP that would make the payments secret equal to the batch secret
// is refused as a whole (start refuses it too): the old secrets stay, and
// the batch secret still gets 401 on the payments path.
func TestReloadRefusesThePaymentsSecretEqualToTheBatchSecret(t *testing.T) {
	dir := t.TempDir()
	cfg, ln, _ := testConfig(t, dir)
	file := filepath.Join(dir, "payments-secret")
	if err := os.WriteFile(file, []byte("pay-one\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.PaymentsSigningSecretFile = file
	cfg.PaymentsSigningSecret, _ = config.ReadSecretFile(file)
	if err := cfg.Validate(SinkRules()); err != nil {
		t.Fatal(err)
	}
	logs := &testutil.SyncBuffer{}
	d := New(cfg, zerolog.New(logs))
	if err := d.Start(ln); err != nil {
		t.Fatal(err)
	}
	defer d.Stop(context.Background())
	if err := os.WriteFile(file, append([]byte(cfg.SigningSecret), '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := d.Reload(); err == nil || !strings.Contains(err.Error(), "PAYMENTS_SIGNING_SECRET") {
		t.Fatalf("reload to the batch secret: %v; want refused", err)
	}
	url := "http://" + d.Addr().String() + cfg.PaymentsWebhookPath
	body := []byte(`{"transaction":{"id":"t1","status":"paid","updated_at":"u"}}`)
	if code, _ := postPayment(t, url, []byte(cfg.SigningSecret), body); code != 401 {
		t.Fatalf("batch secret on the payments path after the refused reload: %d; want 401", code)
	}
	if code, _ := postPayment(t, url, []byte("pay-one"), body); code != 200 {
		t.Fatalf("the old payments secret after the refused reload: %d; want 200", code)
	}
	if !strings.Contains(logs.String(), `"event":"secret_reload_failed"`) {
		t.Fatalf("no secret_reload_failed line:\n%s", logs)
	}
}
