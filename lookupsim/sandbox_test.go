package lookupsim

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/internal/signature"
)

const paymentsSecret = "whsec payments sécret "

// paymentSim starts a simulator that posts payment events to url.
func paymentSim(t *testing.T, url string, opts Options) *Server {
	t.Helper()
	opts.PaymentsWebhookURL, opts.PaymentsSigningSecret = url, []byte(paymentsSecret)
	if opts.SigningSecret == nil {
		opts.SigningSecret = []byte(testSecret)
	}
	return startSim(t, opts)
}

// created makes a deposit or withdrawal and returns its transaction.
func created(t *testing.T, s *Server, path string, body []byte) map[string]any {
	t.Helper()
	r := gw(t, http.MethodPost, s.URL()+path, body)
	if r.status != http.StatusCreated {
		t.Fatalf("%s: %d %s", path, r.status, r.body)
	}
	return txOf(t, r.body)
}

func qrcodeOf(tx map[string]any) string {
	return tx["events"].([]any)[0].(map[string]any)["qrcode"].(string)
}

// paymentEvent checks a delivered payment webhook: headers of 2.2, the
// payments secret's signature (and not the batch secret's), and the body.
func paymentEvent(t *testing.T, d delivery, event string, attempt int) map[string]any {
	t.Helper()
	if d.method != http.MethodPost || d.header.Get("Content-Type") != "application/json" ||
		d.header.Get("Content-Length") != strconv.Itoa(len(d.body)) {
		t.Fatalf("%s, Content-Type %q, Content-Length %q", d.method, d.header.Get("Content-Type"), d.header.Get("Content-Length"))
	}
	sig := d.header.Get(signature.Header)
	if r := signature.Verify([]byte(paymentsSecret), d.body, sig); r != signature.OK {
		t.Fatalf("payment webhook does not verify with the payments secret: %s", r)
	}
	if signature.Verify([]byte(testSecret), d.body, sig) == signature.OK {
		t.Fatal("payment webhook verifies with the batch secret")
	}
	if got := d.header.Get("X-Service-Event"); got != event {
		t.Fatalf("X-Service-Event %q, want %q", got, event)
	}
	if got := d.header.Get("X-Service-Attempt"); got != strconv.Itoa(attempt) {
		t.Fatalf("X-Service-Attempt %q, want %d", got, attempt)
	}
	var body struct {
		Event       string         `json:"event"`
		Transaction map[string]any `json:"transaction"`
	}
	dec := json.NewDecoder(strings.NewReader(string(d.body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil || body.Event != event {
		t.Fatalf("body %s: event %q, %v", d.body, body.Event, err)
	}
	return body.Transaction
}

func TestDepositPayPostsSignedEvent(t *testing.T) {
	clock := newFakeClock()
	url, ch := newReceiver(t, ok)
	s := paymentSim(t, url, Options{Now: clock.Now})
	tx := created(t, s, "/api/pix/charge", depositBody("25"))
	clock.Advance(90 * time.Second)
	r := gw(t, http.MethodGet, qrcodeOf(tx), nil)
	if r.status != http.StatusOK {
		t.Fatalf("pay: %d %s", r.status, r.body)
	}
	var rep SimulationResult
	if err := json.Unmarshal(r.body, &rep); err != nil || rep.Status != TxPaid || rep.TransactionID != tx["id"] || rep.Webhook != "queued" {
		t.Fatalf("pay reply %s (%v)", r.body, err)
	}
	d := next(t, ch)
	got := paymentEvent(t, d, EventTransactionPaid, 1)
	checkShape(t, got, "cashin", "auth", TxPaid)
	if sent := s.PaymentEvents(tx["id"].(string)); len(sent) != 1 || string(sent[0]) != string(d.body) {
		t.Fatalf("PaymentEvents %q, want the delivered body", sent)
	}
	if got["id"] != tx["id"] || got["created_at"] != tx["created_at"] || got["updated_at"] != "2026-11-22T10:01:30+0000" {
		t.Fatalf("event transaction id %v created %v updated %v", got["id"], got["created_at"], got["updated_at"])
	}
	// Repeating the simulation: 409, and no second event.
	r = gw(t, http.MethodGet, qrcodeOf(tx), nil)
	if r.status != http.StatusConflict || !strings.Contains(errorOf(t, r), "paid") {
		t.Fatalf("second pay: %d %s", r.status, r.body)
	}
	none(t, ch, 100*time.Millisecond)
	waitStats(t, s, func(st Stats) bool {
		return st.PaymentDeliveries == 1 && st.PaymentDeliveriesAcked == 1 && st.Deliveries == 0
	})
}

func TestWithdrawalReceiveAndRefund(t *testing.T) {
	url, ch := newReceiver(t, ok)
	s := paymentSim(t, url, Options{})
	a := created(t, s, "/api/pix/pay", withdrawalBody("3.2"))
	b := created(t, s, "/api/pix/pay", withdrawalBody("4"))
	// receive by POST (a tool), refund by GET (a browser): both accepted.
	if r := gw(t, http.MethodPost, qrcodeOf(a), nil); r.status != http.StatusOK {
		t.Fatalf("receive: %d %s", r.status, r.body)
	}
	got := paymentEvent(t, next(t, ch), EventTransactionPaid, 1)
	checkShape(t, got, "cashout", "payment", TxPaid)
	refund := strings.TrimSuffix(qrcodeOf(b), "/receive") + "/refund"
	if r := gw(t, http.MethodGet, refund, nil); r.status != http.StatusOK {
		t.Fatalf("refund: %d %s", r.status, r.body)
	}
	got = paymentEvent(t, next(t, ch), EventTransactionFailed, 1)
	checkShape(t, got, "cashout", "payment", TxFailed)
	if got["id"] != b["id"] || got["events"].([]any)[0].(map[string]any)["success"] != false {
		t.Fatalf("refund event for %v, success %v", got["id"], got["events"])
	}
	for name, u := range map[string]string{"refund after receive": strings.TrimSuffix(qrcodeOf(a), "/receive") + "/refund",
		"receive after refund": qrcodeOf(b)} {
		if r := gw(t, http.MethodGet, u, nil); r.status != http.StatusConflict {
			t.Fatalf("%s: %d %s", name, r.status, r.body)
		}
	}
	none(t, ch, 100*time.Millisecond)
}

func TestSimulationNotFound(t *testing.T) {
	s := startSim(t, Options{})
	dep := created(t, s, "/api/pix/charge", depositBody("1"))
	wd := created(t, s, "/api/pix/pay", withdrawalBody("1"))
	base := s.URL() + "/api/transactions/"
	for name, u := range map[string]string{
		"unknown id":                base + newUUID() + "/pay",
		"pay by transaction id":     base + dep["id"].(string) + "/pay",
		"pay a withdrawal":          base + wd["id"].(string) + "/pay",
		"receive a deposit":         base + dep["id"].(string) + "/receive",
		"refund by processor tx id": strings.Replace(qrcodeOf(dep), "/pay", "/refund", 1),
		"unknown action":            base + wd["id"].(string) + "/cancel",
	} {
		if r := gw(t, http.MethodGet, u, nil); r.status != http.StatusNotFound || errorOf(t, r) != "not_found" {
			t.Fatalf("%s: %d %s", name, r.status, r.body)
		}
	}
	if r := gw(t, http.MethodDelete, qrcodeOf(wd), nil); r.status != http.StatusMethodNotAllowed {
		t.Fatalf("DELETE: %d", r.status)
	}
	// No webhook URL: the transaction still moves on.
	r := gw(t, http.MethodGet, qrcodeOf(wd), nil)
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"webhook":"not_configured"`) {
		t.Fatalf("receive without a webhook URL: %d %s", r.status, r.body)
	}
	if b, _ := s.Transaction(wd["id"].(string)); !strings.Contains(string(b), `"status":"paid"`) {
		t.Fatalf("transaction after receive: %s", b)
	}
}

func TestPaymentWebhookRetriesWithRisingAttempts(t *testing.T) {
	url, ch := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n <= 2 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	s := paymentSim(t, url, Options{RetryBackoff: 30 * time.Millisecond})
	tx := created(t, s, "/api/pix/charge", depositBody("1"))
	if r := gw(t, http.MethodGet, qrcodeOf(tx), nil); r.status != http.StatusOK {
		t.Fatalf("pay: %d", r.status)
	}
	first := next(t, ch)
	paymentEvent(t, first, EventTransactionPaid, 1)
	prev := first
	for attempt := 2; attempt <= 3; attempt++ {
		d := next(t, ch)
		paymentEvent(t, d, EventTransactionPaid, attempt)
		if string(d.body) != string(first.body) || d.header.Get(signature.Header) != first.header.Get(signature.Header) {
			t.Fatal("a retry does not carry the same body and signature")
		}
		if gap := d.at.Sub(prev.at); gap < 30*time.Millisecond {
			t.Fatalf("attempt %d came %s after the previous one", attempt, gap)
		}
		prev = d
	}
	none(t, ch, 150*time.Millisecond)
	waitStats(t, s, func(st Stats) bool {
		return st.PaymentDeliveries == 3 && st.PaymentDeliveryFailures == 2 && st.PaymentDeliveriesAcked == 1
	})
}

func TestPaymentFaults(t *testing.T) {
	url, ch := newReceiver(t, ok)
	s := paymentSim(t, url, Options{Faults: Faults{DuplicatePaymentDeliveries: 2}})
	tx := created(t, s, "/api/pix/charge", depositBody("1"))
	gw(t, http.MethodGet, qrcodeOf(tx), nil)
	first := next(t, ch)
	paymentEvent(t, first, EventTransactionPaid, 1)
	for attempt := 2; attempt <= 3; attempt++ {
		if d := next(t, ch); string(d.body) != string(first.body) {
			t.Fatalf("duplicate %d carries another body", attempt)
		} else {
			paymentEvent(t, d, EventTransactionPaid, attempt)
		}
	}
	none(t, ch, 100*time.Millisecond)

	// Signed with the batch product's secret: a receiver must refuse it.
	if err := s.SetFaults(Faults{SignPaymentsWithBatchSecret: true}); err != nil {
		t.Fatal(err)
	}
	wd := created(t, s, "/api/pix/pay", withdrawalBody("1"))
	gw(t, http.MethodGet, qrcodeOf(wd), nil)
	d := next(t, ch)
	if signature.Verify([]byte(testSecret), d.body, d.header.Get(signature.Header)) != signature.OK ||
		signature.Verify([]byte(paymentsSecret), d.body, d.header.Get(signature.Header)) == signature.OK {
		t.Fatal("SignPaymentsWithBatchSecret did not sign with the batch secret only")
	}

	if err := s.SetFaults(Faults{DropPaymentNotifications: true}); err != nil {
		t.Fatal(err)
	}
	wd = created(t, s, "/api/pix/pay", withdrawalBody("1"))
	if r := gw(t, http.MethodGet, qrcodeOf(wd), nil); !strings.Contains(string(r.body), `"webhook":"dropped"`) {
		t.Fatalf("dropped: %s", r.body)
	}
	none(t, ch, 100*time.Millisecond)
}
