package e2e

// End to end: the real binary's `sandbox` commands against the real
// simulator on loopback, whose payment webhooks go to a receiver here that
// verifies the payments signature. The daemon's payments endpoint is not
// needed (it is built elsewhere; `demo --payments` ties them together).

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/demo"
	"github.com/batchhook/batchhook/internal/signature"
	"github.com/batchhook/batchhook/lookupsim"
)

const (
	sbPaymentsSecret = "whsec payments e2e "
	sbCPF            = "52998224725"
)

// paymentHook is one verified payment webhook.
type paymentHook struct {
	event, attempt string
	body           struct {
		Event       string `json:"event"`
		Transaction struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"transaction"`
	}
}

// paymentReceiver verifies each delivery with the payments secret (401
// otherwise, counted) and passes the verified ones on.
func paymentReceiver(t *testing.T) (string, <-chan paymentHook, func() int) {
	t.Helper()
	ch := make(chan paymentHook, 16)
	rejected := make(chan struct{}, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if signature.Verify([]byte(sbPaymentsSecret), body, r.Header.Get(signature.Header)) != signature.OK {
			rejected <- struct{}{}
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var h paymentHook
		h.event, h.attempt = r.Header.Get("X-Service-Event"), r.Header.Get("X-Service-Attempt")
		if err := json.Unmarshal(body, &h.body); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		ch <- h
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/webhooks/payments", ch, func() int { return len(rejected) }
}

func nextHook(t *testing.T, ch <-chan paymentHook) paymentHook {
	t.Helper()
	select {
	case h := <-ch:
		return h
	case <-time.After(waitBound):
		t.Fatalf("no verified payment webhook within %s", waitBound)
		return paymentHook{}
	}
}

// runSandbox runs `batchhook sandbox args…` with exactly env.
func runSandbox(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	return runFrom(t, "", env, append([]string{"sandbox"}, args...)...)
}

func TestSandboxCLIEndToEnd(t *testing.T) {
	t.Parallel()
	hookURL, hooks, rejected := paymentReceiver(t)
	sim, err := lookupsim.New(lookupsim.Options{
		APIKey: e2eKey, SigningSecret: []byte(e2eSecret),
		PaymentsWebhookURL: hookURL, PaymentsSigningSecret: []byte(sbPaymentsSecret),
		GatewayAuthHeader: "X-Gateway-Key", GatewayAuthValue: []byte("gw válue"),
		RetryBackoff: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close(context.Background()) })
	valueFile := filepath.Join(t.TempDir(), "gateway-auth")
	if err := os.WriteFile(valueFile, []byte("gw válue\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	noAuth := []string{"BATCHHOOK_GATEWAY_URL=" + sim.URL(), "BATCHHOOK_SANDBOX_URL=" + sim.URL() + "/"}
	env := append(noAuth, "BATCHHOOK_GATEWAY_AUTH_HEADER=X-Gateway-Key", "BATCHHOOK_GATEWAY_AUTH_VALUE_FILE="+valueFile)
	person := []string{"--first-name", "João", "--last-name", "Silva", "--document-number", "529.982.247-25"}
	deposit := append([]string{"deposit", "--email", "joao@example.com", "--ip-address", "203.0.113.9", "--message", "hi"}, person...)

	// --help exits 0 with the usage on stdout; no subcommand is exit 2.
	if out, _, code := runSandbox(t, env, "--help"); code != 0 || !strings.Contains(out, "batchhook sandbox deposit") {
		t.Fatalf("sandbox --help: exit %d\n%s", code, out)
	}
	if _, _, code := runSandbox(t, env, "deposit", "--help"); code != 0 {
		t.Fatalf("sandbox deposit --help: exit %d", code)
	}
	if _, _, code := runSandbox(t, env); code != 2 {
		t.Fatalf("sandbox without a command: exit %d", code)
	}

	// Validation: exit 2 naming the flag, and no call reaches the gateway.
	for _, c := range []struct {
		args []string
		flag string
	}{
		{append(append([]string{}, deposit...), "--amount", "10.505"), "--amount"},
		{append(append([]string{}, deposit...), "--amount", "0"), "--amount"},
		{append(append([]string{}, deposit...), "--amount", "1e3"), "--amount"},
		{append(append(append([]string{}, deposit...), "--amount", "10.50"), "--document-number", "529.982.247-26"), "--document-number"},
		{[]string{"withdraw", "--amount", "5", "--pix-key-value", "k", "--first-name", "J", "--last-name", "S", "--document-number", "11111111111"}, "--document-number"},
	} {
		out, errOut, code := runSandbox(t, env, c.args...)
		if code != 2 || !strings.Contains(errOut, c.flag) || out != "" || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Fatalf("%v: exit %d, stdout %q, stderr %q; want exit 2 and one line naming %s", c.args, code, out, errOut, c.flag)
		}
		if strings.Contains(errOut, "529.982.247") || strings.Contains(errOut, "11111111111") {
			t.Fatalf("stderr %q echoes the CPF", errOut)
		}
	}
	if st := sim.Stats(); st.GatewayRequests != 0 || st.Simulations != 0 {
		t.Fatalf("validation errors reached the simulator: %+v", st)
	}

	// Gateway authentication missing: one line with the status and reason.
	_, errOut, code := runSandbox(t, noAuth, append(append([]string{}, deposit...), "--amount", "1")...)
	if code != 1 || !strings.Contains(errOut, "HTTP 401: unauthorized") || strings.Count(strings.TrimSpace(errOut), "\n") != 1 {
		t.Fatalf("without the auth header: exit %d, %q", code, errOut)
	}

	// Deposit (--json, generated merchant id) → pay → a verified transaction.paid.
	out, errOut, code := runSandbox(t, env, append(append([]string{}, deposit...), "--amount", "10.5", "--json")...)
	if code != 0 {
		t.Fatalf("deposit: exit %d %s", code, errOut)
	}
	m := regexp.MustCompile(`merchant_transaction_id: ([0-9a-f-]{36}) \(generated\)`).FindStringSubmatch(errOut)
	if m == nil {
		t.Fatalf("no generated merchant_transaction_id on stderr: %q", errOut)
	}
	var dep struct {
		Transaction struct {
			ID                    string `json:"id"`
			MerchantTransactionID string `json:"merchant_transaction_id"`
			DocumentNumber        string `json:"document_number"`
			Events                []struct {
				Amount                 string `json:"amount"`
				ProcessorTransactionID string `json:"processor_transaction_id"`
			} `json:"events"`
		} `json:"transaction"`
	}
	if err := json.Unmarshal([]byte(out), &dep); err != nil || len(dep.Transaction.Events) != 1 {
		t.Fatalf("deposit --json: %v\n%s", err, out)
	}
	if tx, _ := sim.Transaction(dep.Transaction.ID); out != `{"transaction":`+string(tx)+"}\n" {
		t.Fatalf("--json is not the reply as received:\n%s\nsimulator: %s", out, tx)
	}
	if dep.Transaction.MerchantTransactionID != m[1] || dep.Transaction.Events[0].Amount != "10.50" || dep.Transaction.DocumentNumber != sbCPF {
		t.Fatalf("deposit sent merchant id %q (generated %s), amount %q, document %q", dep.Transaction.MerchantTransactionID, m[1],
			dep.Transaction.Events[0].Amount, dep.Transaction.DocumentNumber)
	}
	out, errOut, code = runSandbox(t, env, "pay", dep.Transaction.Events[0].ProcessorTransactionID)
	if code != 0 || !regexp.MustCompile(`(?m)^status:\s+paid$`).MatchString(out) {
		t.Fatalf("pay: exit %d\n%s%s", code, out, errOut)
	}
	h := nextHook(t, hooks)
	if h.event != "transaction.paid" || h.attempt != "1" || h.body.Transaction.ID != dep.Transaction.ID || h.body.Transaction.Status != "paid" {
		t.Fatalf("after pay: %+v", h)
	}

	// Withdrawal (table) → receive with its qrcode URL.
	out, errOut, code = runSandbox(t, env, append([]string{"withdraw", "--amount", "3", "--pix-key-value", "joao@example.com",
		"--merchant-transaction-id", "m-w1"}, person...)...)
	if code != 0 {
		t.Fatalf("withdraw: exit %d %s", code, errOut)
	}
	for _, want := range []string{"merchant_transaction_id:  m-w1", "flow:", "cashout", "status:", "pending", "amount:", "3.00",
		"name:", "J. S.", "document:", "***.982.247-**", "next: batchhook sandbox receive "} {
		if !strings.Contains(out, want) {
			t.Fatalf("withdraw table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "João") || strings.Contains(out, "Silva") || strings.Contains(out, sbCPF) || strings.Contains(out, "982.247-25") {
		t.Fatalf("the table shows personal data in clear:\n%s", out)
	}
	qr := regexp.MustCompile(`(?m)^simulation URL:\s+(\S+)$`).FindStringSubmatch(out)
	if qr == nil || !strings.HasSuffix(qr[1], "/receive") {
		t.Fatalf("no simulation URL in:\n%s", out)
	}
	wdID := regexp.MustCompile(`(?m)^transaction:\s+(\S+)$`).FindStringSubmatch(out)[1]
	if _, errOut, code = runSandbox(t, env, "receive", qr[1]); code != 0 {
		t.Fatalf("receive: exit %d %s", code, errOut)
	}
	if h := nextHook(t, hooks); h.event != "transaction.paid" || h.body.Transaction.ID != wdID {
		t.Fatalf("after receive: %+v", h)
	}

	// Withdrawal → refund by REF (built on BATCHHOOK_SANDBOX_URL).
	out, errOut, code = runSandbox(t, env, append([]string{"withdraw", "--amount", "4.25", "--pix-key-value", "k", "--json"}, person...)...)
	if code != 0 {
		t.Fatalf("withdraw: exit %d %s", code, errOut)
	}
	var wd struct {
		Transaction struct{ ID string } `json:"transaction"`
	}
	if err := json.Unmarshal([]byte(out), &wd); err != nil || wd.Transaction.ID == "" {
		t.Fatalf("withdraw --json: %v %s", err, out)
	}
	out, errOut, code = runSandbox(t, env, "refund", wd.Transaction.ID, "--json")
	if code != 0 || !json.Valid([]byte(out)) || !strings.Contains(out, `"status":"failed"`) {
		t.Fatalf("refund: exit %d %s %s", code, out, errOut)
	}
	if h := nextHook(t, hooks); h.event != "transaction.failed" || h.body.Transaction.ID != wd.Transaction.ID || h.body.Transaction.Status != "failed" {
		t.Fatalf("after refund: %+v", h)
	}

	// The same simulation again: 409 from the sandbox, exit 1, one line.
	_, errOut, code = runSandbox(t, env, "refund", wd.Transaction.ID)
	if code != 1 || !strings.Contains(errOut, "HTTP 409: transaction is failed, not pending") {
		t.Fatalf("second refund: exit %d %q", code, errOut)
	}
	select {
	case h := <-hooks:
		t.Fatalf("unexpected webhook %+v", h)
	case <-time.After(200 * time.Millisecond):
	}
	if st := sim.Stats(); st.GatewayRequests != 4 || st.TransactionsCreated != 3 || st.Simulations != 4 || rejected() != 0 {
		t.Fatalf("simulator saw %+v, %d rejected webhooks", st, rejected())
	}
}

// TestSandboxCLIToDaemon: deposit → pay with the CLI, the simulator's
// payment webhook (and one duplicate) received by the real daemon's
// payments endpoint, logged once and delivered once to the day file with
// the provider's bytes. It runs once the payments endpoint is in the
// build; before, the daemon does not serve it.
func TestSandboxCLIToDaemon(t *testing.T) {
	t.Parallel()
	addr := freePort(t)
	sim, err := lookupsim.New(lookupsim.Options{
		APIKey: e2eKey, SigningSecret: []byte(e2eSecret), WebhookURL: "http://" + addr + e2ePath,
		PaymentsWebhookURL: "http://" + addr + "/webhooks/payments", PaymentsSigningSecret: []byte(sbPaymentsSecret),
		RetryBackoff: 100 * time.Millisecond, Faults: lookupsim.Faults{DuplicatePaymentDeliveries: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close(context.Background()) })
	dir, data := t.TempDir(), t.TempDir()
	write := func(name, v string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	d := startDaemon(t, addr, map[string]string{
		"BATCHHOOK_SIGNING_SECRET_FILE": write("secret", e2eSecret), "BATCHHOOK_API_KEY": e2eKey,
		"BATCHHOOK_API_BASE_URL": sim.URL(), "BATCHHOOK_DATA_DIR": data,
		"BATCHHOOK_PAYMENTS_SIGNING_SECRET_FILE": write("payments-secret", sbPaymentsSecret),
	})
	if !strings.Contains(d.out.String(), `"payments_webhook_path":"/webhooks/payments"`) {
		t.Fatalf("the daemon did not enable its payments endpoint:\n%s", d.out.String())
	}
	env := []string{"BATCHHOOK_GATEWAY_URL=" + sim.URL(), "BATCHHOOK_SANDBOX_URL=" + sim.URL()}
	out, errOut, code := runSandbox(t, env, "deposit", "--amount", "12.34", "--first-name", "Ana", "--last-name", "Lima",
		"--email", "ana@example.com", "--document-number", sbCPF)
	if code != 0 {
		t.Fatalf("deposit: exit %d %s", code, errOut)
	}
	ptid := regexp.MustCompile(`(?m)^next: batchhook sandbox pay (\S+)$`).FindStringSubmatch(out)
	txID := regexp.MustCompile(`(?m)^transaction:\s+(\S+)$`).FindStringSubmatch(out)
	if ptid == nil || txID == nil {
		t.Fatalf("deposit table:\n%s", out)
	}
	if _, errOut, code = runSandbox(t, env, "pay", ptid[1]); code != 0 {
		t.Fatalf("pay: exit %d %s", code, errOut)
	}
	sent := sim.PaymentEvents(txID[1])
	if len(sent) != 1 {
		t.Fatalf("simulator sent %d events", len(sent))
	}
	// The event and its duplicate both acknowledged by the daemon.
	waitFor(t, func() bool { st := sim.Stats(); return st.PaymentDeliveriesAcked == 2 })
	flows := []demo.PaymentFlow{{Name: "deposit paid", TxID: txID[1], Event: "transaction.paid", Body: sent[0]}}
	files, err := demo.WaitPaymentDayFiles(context.Background(), filepath.Join(data, "exports", demo.PaymentsDir), flows, waitBound)
	if err != nil {
		t.Fatalf("%v\n%s", err, d.out.String())
	}
	if st, err := os.Stat(files[0]); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("day file %s: %v %v", files[0], st.Mode(), err)
	}
	// Logged before each 200, but read through a pipe: wait for both
	// lines, then count them in the whole log once the daemon is gone.
	waitLogLine(t, d, `"event":"payment_accepted"`)
	waitLogLine(t, d, `"event":"payment_duplicate"`)
	d.stop(t)
	logs := d.out.String()
	if strings.Count(logs, `"event":"payment_accepted"`) != 1 || strings.Count(logs, `"event":"payment_duplicate"`) != 1 {
		t.Fatalf("want one payment_accepted and one payment_duplicate:\n%s", logs)
	}
	if strings.Contains(logs, "Lima") || strings.Contains(logs, sbCPF) || strings.Contains(logs, "ana@example.com") {
		t.Fatal("the daemon logged personal data from the payment body")
	}
}
