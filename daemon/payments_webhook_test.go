package daemon

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/config"
	"github.com/batchhook/batchhook/internal/signature"
	"github.com/batchhook/batchhook/internal/testutil"
)

func postPayment(t *testing.T, url string, secret, body []byte) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set(signature.Header, signature.Sign(secret, body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The payments webhook is served with its secret from a file, logged by
// fingerprint, counted, and re-read on SIGHUP: the next request needs the
// new secret.
func TestPaymentsWebhookIsWiredAndItsSecretReloaded(t *testing.T) {
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
	url := "http://" + d.Addr().String() + cfg.PaymentsWebhookPath
	body := []byte(`{"transaction":{"id":"t1","status":"paid","updated_at":"u"}}`)
	if code, reply := postPayment(t, url, []byte("pay-one"), body); code != 200 || reply != `{"result":"accepted","seq":1}`+"\n" {
		t.Fatalf("first: %d %s", code, reply)
	}
	if !strings.Contains(logs.String(), `"payments_signing_secret_fingerprint":"`+config.Secret("pay-one").Fingerprint()+`"`) {
		t.Fatalf("start line lacks the payments fingerprint:\n%s", logs)
	}
	if err := os.WriteFile(file, []byte("pay-two\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := d.Reload(); err != nil {
		t.Fatal(err)
	}
	other := []byte(`{"transaction":{"id":"t2","status":"paid","updated_at":"u"}}`)
	if code, _ := postPayment(t, url, []byte("pay-one"), other); code != 401 {
		t.Fatalf("old secret after reload: %d, want 401", code)
	}
	if code, reply := postPayment(t, url, []byte("pay-two"), other); code != 200 || !strings.Contains(reply, `"seq":2`) {
		t.Fatalf("new secret: %d %s", code, reply)
	}
	resp, err := http.Get("http://" + d.AdminAddr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`batchhook_payment_events_total{outcome="accepted"} 2`,
		`batchhook_payment_events_total{outcome="unauthorized"} 1`, `batchhook_payment_events_total{outcome="too_large"} 0`} {
		if !strings.Contains(string(m), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestPaymentsPathIs404WithoutASecret(t *testing.T) {
	dir := t.TempDir()
	cfg, ln, _ := testConfig(t, dir)
	d := New(cfg, zerolog.Nop())
	if err := d.Start(ln); err != nil {
		t.Fatal(err)
	}
	defer d.Stop(context.Background())
	body := []byte(`{"transaction":{"id":"t1"}}`)
	if code, _ := postPayment(t, "http://"+d.Addr().String()+cfg.PaymentsWebhookPath, []byte("s"), body); code != 404 {
		t.Fatalf("payments off: %d, want 404", code)
	}
}
