package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batchhook/batchhook/lookupsim"
)

const e2ePaySecret = "payments secret e2e"

// postPayment signs body with secret through `batchhook sign` (checked
// against openssl's vectors in TestSignAndVerifyMatchOpenSSLVectors) and
// posts it to the payments path; it returns the status and the reply.
func postPayment(t *testing.T, addr string, body []byte, secret, attempt string) (int, map[string]any) {
	t.Helper()
	cmd := exec.Command(binary, "sign", "--secret-file", writeTemp(t, secret))
	cmd.Stdin = bytes.NewReader(body)
	sig, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/webhooks/payments", bytes.NewReader(body))
	req.Header.Set("x-service-webhook-signature", strings.TrimSpace(string(sig)))
	req.Header.Set("X-Service-Event", "transaction.paid")
	req.Header.Set("X-Service-Attempt", attempt)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// The payments webhook on the real binary: logged durably before the 200
// (a SIGKILL right after it loses nothing, and the retry is a duplicate),
// the batch secret refused, a non-object quarantined, and the CLI shows
// the log without a body.
func TestPaymentsWebhookEndToEnd(t *testing.T) {
	t.Parallel()
	s := newSetup(t, lookupsim.Options{})
	payFile := filepath.Join(t.TempDir(), "payments-secret")
	if err := os.WriteFile(payFile, []byte(e2ePaySecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.env["BATCHHOOK_PAYMENTS_SIGNING_SECRET_FILE"] = payFile
	s.env["BATCHHOOK_ADMIN_TOKEN"] = adminToken
	d := startDaemon(t, s.addr, s.env)
	if !strings.Contains(d.out.String(), `"payments_webhook_path":"/webhooks/payments"`) {
		t.Fatalf("start line:\n%s", d.out)
	}
	body := []byte(`{"transaction":{"id":"9f1c","status":"paid","updated_at":"2026-11-24T10:00:00+0000","document_number":"52998224725","first_name":"Maria"}}`)
	if code, _ := postPayment(t, s.addr, body, e2eSecret, "1"); code != 401 {
		t.Fatalf("signed with the batch secret: %d, want 401", code)
	}
	code, reply := postPayment(t, s.addr, body, e2ePaySecret, "1")
	if code != 200 || reply["result"] != "accepted" || reply["seq"] != 1.0 {
		t.Fatalf("first delivery: %d %v", code, reply)
	}
	d.kill() // SIGKILL right after the 200
	firstLog := d.out.String()
	d = startDaemon(t, s.addr, s.env)
	code, reply = postPayment(t, s.addr, body, e2ePaySecret, "2")
	if code != 200 || reply["result"] != "duplicate" || reply["seq"] != 1.0 {
		t.Fatalf("retry after a kill: %d %v, want duplicate of 1", code, reply)
	}
	if code, _ := postPayment(t, s.addr, []byte(`["52998224725"]`), e2ePaySecret, "1"); code != 400 {
		t.Fatalf("signed array: %d, want 400", code)
	}

	out, errOut, rc := cli(t, d, adminToken, "payments", "list")
	if rc != 0 || !regexpLine(out, `^1\s+\S+Z\s+transaction.paid\s+1\s+\d+ bytes\s+fields:\["9f1c","paid","2026-11-24T10:00:00\+0000"\]`) {
		t.Fatalf("payments list = %d\n%s%s", rc, out, errOut)
	}
	out, _, rc = cli(t, d, adminToken, "payments", "show", "1")
	if rc != 0 || !regexpLine(out, `^body sha256:\s+[0-9a-f]{64}$`) {
		t.Fatalf("payments show = %d\n%s", rc, out)
	}
	out, _, rc = cli(t, d, adminToken, "quarantine", "list")
	if rc != 0 || !regexpLine(out, `^[0-9a-f]{64}\s+payments\s+`) {
		t.Fatalf("quarantine list = %d\n%s", rc, out)
	}
	_, metrics := get(t, d.admin+"/metrics", adminToken)
	if !strings.Contains(metrics, `batchhook_payment_events_total{outcome="duplicate"} 1`) ||
		!strings.Contains(metrics, `batchhook_payment_events_total{outcome="invalid"} 1`) {
		t.Fatalf("metrics lack the payment outcomes:\n%s", metrics)
	}
	d.stop(t)
	for _, personal := range []string{"52998224725", "Maria", e2ePaySecret} { // the whole logs, both daemons gone
		if strings.Contains(firstLog+d.out.String(), personal) {
			t.Fatalf("the log holds %q", personal)
		}
	}
}
