package receiver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/internal/signature"
	"github.com/batchhook/batchhook/internal/testutil"
	"github.com/batchhook/batchhook/store"
)

const (
	payPath   = "/webhooks/payments"
	paySecret = "pay secret\twith tab "
)

var defaultDedup = [][]string{{"transaction", "id"}, {"transaction", "status"}, {"transaction", "updated_at"}}

// opensslSign computes the provider's signature with openssl, never with
// our code: HMAC-SHA256 of body under secret as lowercase hex
// (`openssl dgst -sha256 -hmac KEY -r`), then that hex text in Base64
// (`openssl base64 -A`).
func opensslSign(t *testing.T, secret string, body []byte) string {
	t.Helper()
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl not installed: the signature vectors come from it")
	}
	dgst := exec.Command("openssl", "dgst", "-sha256", "-hmac", secret, "-r")
	dgst.Stdin = bytes.NewReader(body)
	out, err := dgst.Output()
	if err != nil {
		t.Fatalf("openssl dgst: %v", err)
	}
	hexSum, _, _ := strings.Cut(string(out), " ")
	if len(hexSum) != 64 {
		t.Fatalf("openssl dgst printed %q", out)
	}
	b64 := exec.Command("openssl", "base64", "-A")
	b64.Stdin = strings.NewReader(hexSum)
	sig, err := b64.Output()
	if err != nil {
		t.Fatalf("openssl base64: %v", err)
	}
	return strings.TrimSpace(string(sig))
}

type payObserver struct {
	mu       sync.Mutex
	outcomes map[string]int
}

func (o *payObserver) PaymentHandled(outcome string, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.outcomes == nil {
		o.outcomes = map[string]int{}
	}
	o.outcomes[outcome]++
}

func (o *payObserver) count(outcome string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.outcomes[outcome]
}

type payEnv struct {
	*env
	pobs *payObserver
}

// startPayments serves both webhooks over a real bbolt store; rec
// replaces the payments store when not nil; enabled=false leaves payments
// off.
func startPayments(t *testing.T, enabled bool, rec PaymentRecorder) *payEnv {
	t.Helper()
	st, err := store.Open(t.TempDir(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if rec == nil {
		rec = st
	}
	logs := &testutil.SyncBuffer{}
	obs, pobs := &countingObserver{}, &payObserver{}
	opts := Options{
		Path: testPath, MaxBodyBytes: 4096, Secret: func() []byte { return []byte(testSecret) },
		Store: st, Logger: zerolog.New(logs), Observer: obs, RejectBurst: 50,
		Now: func() time.Time { return time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC) },
	}
	if enabled {
		opts.Payments = &PaymentOptions{Path: payPath, Secret: func() []byte { return []byte(paySecret) },
			DedupFields: defaultDedup, Store: rec, Observer: pobs}
	}
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Serve(ln)
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	return &payEnv{env: &env{obs: obs, url: "http://" + ln.Addr().String(), store: st, logs: logs}, pobs: pobs}
}

func paySigned(t *testing.T, b []byte, attempt string) map[string]string {
	return map[string]string{signature.Header: opensslSign(t, paySecret, b), "X-Service-Attempt": attempt,
		"X-Service-Event": "transaction.paid"}
}

// payResult is a reply of the payments webhook (seq is a number).
type payResult struct {
	code   int
	result string
	seq    uint64
	errMsg string
}

func (e *payEnv) pay(t *testing.T, b []byte, h map[string]string) payResult {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.url+payPath, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Result string `json:"result"`
		Seq    uint64 `json:"seq"`
		Error  string `json:"error"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return payResult{resp.StatusCode, out.Result, out.Seq, out.Error}
}

func (e *payEnv) lastSeq(t *testing.T) uint64 {
	t.Helper()
	n, err := e.store.LastPaymentSeq()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

const payBody = `{"transaction":{"id":"7d1c","status":"paid","updated_at":"2026-11-24T10:00:00+0000","document_number":"52998224725","first_name":"Maria"}}`

func TestPaymentCrossProductSignaturesAreRejectedBothWays(t *testing.T) {
	e := startPayments(t, true, nil)
	pay := []byte(payBody)
	// A payment event signed with the batch secret: 401 on the payments path.
	h := map[string]string{signature.Header: opensslSign(t, testSecret, pay), "X-Service-Attempt": "1"}
	if r := e.pay(t, pay, h); r.code != 401 || r.errMsg != "invalid_signature" {
		t.Fatalf("payments path, batch secret: %d %q, want 401", r.code, r.errMsg)
	}
	// A genuine batch notification signed with the payments secret: 401 on
	// the batch path.
	b := body("b_cross", "completed")
	if r := e.post(t, testPath, b, map[string]string{signature.Header: opensslSign(t, paySecret, b)}); r.code != 401 {
		t.Fatalf("batch path, payments secret: %d %v, want 401", r.code, r.body)
	}
	if n := e.lastSeq(t); n != 0 {
		t.Fatalf("a payment event was logged from a wrong signature (last seq %d)", n)
	}
	if known, _ := e.store.Known("b_cross"); known {
		t.Fatal("a batch was recorded from the payments secret")
	}
	if n, _ := e.store.CountQuarantined(); n != 0 {
		t.Fatalf("%d quarantine entries from rejected signatures", n)
	}
	if !strings.Contains(e.logs.String(), `"event":"payment_rejected"`) || !strings.Contains(e.logs.String(), `"event":"webhook_rejected"`) {
		t.Fatalf("rejections not logged under their events:\n%s", e.logs)
	}
	// The same bodies with their own product's secret go through.
	if r := e.pay(t, pay, paySigned(t, pay, "1")); r.code != 200 || r.result != "accepted" {
		t.Fatalf("payments path, payments secret: %d %q", r.code, r.result)
	}
	if r := e.post(t, testPath, b, map[string]string{signature.Header: opensslSign(t, testSecret, b)}); r.code != 200 {
		t.Fatalf("batch path, batch secret: %d %v", r.code, r.body)
	}
	if e.pobs.count(outcomeUnauthorized) != 1 || e.pobs.count(ResultAccepted) != 1 || e.obs.count(outcomeUnauthorized) != 1 {
		t.Fatalf("outcomes: payments %v, batches %v", e.pobs.outcomes, e.obs.outcomes)
	}
}

func TestPaymentAcceptedThenDuplicate(t *testing.T) {
	e := startPayments(t, true, nil)
	b := []byte(payBody)
	r := e.pay(t, b, paySigned(t, b, "1"))
	if r.code != 200 || r.result != "accepted" || r.seq != 1 {
		t.Fatalf("first: %+v", r)
	}
	r = e.pay(t, b, paySigned(t, b, "2"))
	if r.code != 200 || r.result != "duplicate" || r.seq != 1 {
		t.Fatalf("retry: %+v, want duplicate of seq 1", r)
	}
	ev, err := e.store.PaymentEvent(1)
	if err != nil {
		t.Fatal(err)
	}
	want := store.PaymentEvent{Seq: 1, ReceivedAt: time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC), Event: "transaction.paid",
		Attempt: 1, DedupKey: `fields:["7d1c","paid","2026-11-24T10:00:00+0000"]`, BodySHA256: sha(b), BodyLen: len(b),
		TransactionID: "7d1c"}
	if *ev != want {
		t.Fatalf("event = %+v\nwant    %+v", *ev, want)
	}
	if n := e.lastSeq(t); n != 1 {
		t.Fatalf("the retry wrote an event: last seq %d", n)
	}
	// The status moves on: a new event of the same transaction.
	paid := bytes.Replace(b, []byte(`"paid"`), []byte(`"refunded"`), 1)
	if r := e.pay(t, paid, paySigned(t, paid, "1")); r.result != "accepted" || r.seq != 2 {
		t.Fatalf("status change: %+v, want accepted seq 2", r)
	}
	logs := e.logs.String()
	for _, want := range []string{`"event":"payment_accepted"`, `"event":"payment_duplicate"`, `"seq":1`, `"delivery_attempt":2`,
		`"body_sha256":"` + sha(b) + `"`, `"webhook_event":"transaction.paid"`, `"product":"payments"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %s", want)
		}
	}
	for _, personal := range []string{"52998224725", "Maria"} {
		if strings.Contains(logs, personal) {
			t.Errorf("logs hold a body field (%s)", personal)
		}
	}
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func TestPaymentRawBytesAreKeptExactly(t *testing.T) {
	e := startPayments(t, true, nil)
	// Odd spacing, key order, escapes and a trailing newline: what a
	// re-serialisation would change.
	b := []byte("{ \"zeta\" :1,\n\t\"transaction\":{\"updated_at\":\"x\",\"status\":\"paid\" , \"id\":\"t\\u0031\"},\"amount\":10.50, \"name\":\"Jo\\u00e3o\"}\n")
	r := e.pay(t, b, paySigned(t, b, "1"))
	if r.code != 200 || r.result != "accepted" {
		t.Fatalf("%+v", r)
	}
	raw, err := e.store.PaymentBody(r.seq)
	if err != nil {
		t.Fatal(err)
	}
	ev, _ := e.store.PaymentEvent(r.seq)
	if !bytes.Equal(raw, b) || sha(raw) != ev.BodySHA256 || ev.BodyLen != len(b) {
		t.Fatalf("stored %q (sha %s, event says %s), want the bytes as sent", raw, sha(raw), ev.BodySHA256)
	}
	if ev.TransactionID != "t1" || ev.DedupKey != `fields:["t\u0031","paid","x"]` {
		t.Fatalf("transaction id %q, key %q", ev.TransactionID, ev.DedupKey)
	}
}

func TestPaymentDedupRulesEndToEnd(t *testing.T) {
	e := startPayments(t, true, nil)
	send := func(b string) payResult {
		return e.pay(t, []byte(b), paySigned(t, []byte(b), "1"))
	}
	// Every field present: other bytes with the same values are the same
	// event.
	if r := send(`{"transaction":{"id":"a","status":"paid","updated_at":"t1"}}`); r.result != "accepted" || r.seq != 1 {
		t.Fatalf("first: %+v", r)
	}
	if r := send(`{"transaction":{"updated_at":"t1","id":"a","status":"paid"},"note":"re-sent"}`); r.result != "duplicate" || r.seq != 1 {
		t.Fatalf("same fields, other bytes: %+v, want duplicate of 1", r)
	}
	if r := send(`{"transaction":{"id":"a","status":"paid","updated_at":"t2"}}`); r.result != "accepted" || r.seq != 2 {
		t.Fatalf("later update: %+v, want accepted 2", r)
	}
	// A field missing, or null: the body's SHA-256 decides.
	for i, b := range []string{
		`{"transaction":{"id":"a","status":"paid"}}`,
		`{"transaction":{"id":"a","status":"paid","updated_at":null}}`,
	} {
		r := send(b)
		if r.result != "accepted" || r.seq != uint64(3+i) {
			t.Fatalf("%s: %+v, want accepted %d", b, r, 3+i)
		}
		if r := send(b); r.result != "duplicate" || r.seq != uint64(3+i) {
			t.Fatalf("%s again: %+v, want duplicate", b, r)
		}
		ev, _ := e.store.PaymentEvent(uint64(3 + i))
		if ev.DedupKey != "sha256:"+sha([]byte(b)) {
			t.Fatalf("%s: key %q, want the body's sha256", b, ev.DedupKey)
		}
	}
	if r := send(`{"transaction":{"status":"paid","id":"a"}}`); r.result != "accepted" {
		t.Fatalf("missing field, other bytes: %+v, want a new event", r)
	}
}

func TestPaymentSignedNonObjectIsQuarantined(t *testing.T) {
	e := startPayments(t, true, nil)
	for _, b := range []string{`[{"transaction":{}}]`, `"text"`, `null`, `{"transaction":`, "\xef\xbb\xbf{}", `{"a":1,"A":2}`, `{} {}`} {
		r := e.pay(t, []byte(b), paySigned(t, []byte(b), "1"))
		if r.code != 400 || r.errMsg == "" {
			t.Errorf("%q: %+v, want 400", b, r)
			continue
		}
		q, err := e.store.GetQuarantined(sha([]byte(b)))
		if err != nil {
			t.Errorf("%q: not quarantined: %v", b, err)
			continue
		}
		if q.Product != store.ProductPayments || !bytes.Equal(q.Raw, []byte(b)) {
			t.Errorf("%q: quarantined as %+v", b, q)
		}
	}
	if n := e.lastSeq(t); n != 0 {
		t.Fatalf("a non-object was logged (last seq %d)", n)
	}
	if e.pobs.count(outcomeInvalid) != 7 || !strings.Contains(e.logs.String(), `"event":"payment_invalid"`) {
		t.Fatalf("invalid outcomes %d; logs:\n%s", e.pobs.count(outcomeInvalid), e.logs)
	}
	// Unsigned garbage is 401 and never quarantined.
	if r := e.pay(t, []byte(`[1]`), nil); r.code != 401 {
		t.Fatalf("unsigned: %+v", r)
	}
	if n, _ := e.store.CountQuarantined(); n != 7 {
		t.Fatalf("quarantine holds %d entries, want 7", n)
	}
}

func TestPaymentsDisabledIs404(t *testing.T) {
	e := startPayments(t, false, nil)
	b := []byte(payBody)
	if r := e.pay(t, b, paySigned(t, b, "1")); r.code != 404 || r.errMsg != "not_found" {
		t.Fatalf("payments off: %+v, want 404 not_found", r)
	}
	if n := e.lastSeq(t); n != 0 {
		t.Fatal("logged while off")
	}
}

func TestPaymentSizeMethodAndEncoding(t *testing.T) {
	e := startPayments(t, true, nil)
	big := []byte(`{"transaction":{"id":"big"},"pad":"` + strings.Repeat("x", 4096) + `"}`)
	if r := e.pay(t, big, paySigned(t, big, "1")); r.code != 413 {
		t.Fatalf("over MAX_BODY_BYTES: %+v, want 413", r)
	}
	b := []byte(payBody)
	h := paySigned(t, b, "1")
	h["Content-Encoding"] = "gzip"
	if r := e.pay(t, b, h); r.code != 415 {
		t.Fatalf("gzip: %+v, want 415", r)
	}
	resp, err := http.Get(e.url + payPath)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 || resp.Header.Get("Allow") != "POST" {
		t.Fatalf("GET: %d", resp.StatusCode)
	}
	if n := e.lastSeq(t); n != 0 {
		t.Fatalf("logged %d events", n)
	}
	for _, o := range []string{outcomeTooLarge, outcomeUnsupported, outcomeMethod} {
		if e.pobs.count(o) != 1 {
			t.Errorf("outcome %s counted %d times", o, e.pobs.count(o))
		}
	}
}

type failingPayments struct{ *store.Store }

func (failingPayments) RecordPaymentContext(context.Context, store.PaymentEvent, []byte) (uint64, bool, error) {
	return 0, false, errors.New("disk on fire")
}

func TestPaymentStorageFailureIs503(t *testing.T) {
	st, err := store.Open(t.TempDir(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e := startPayments(t, true, failingPayments{st})
	b := []byte(payBody)
	if r := e.pay(t, b, paySigned(t, b, "1")); r.code != 503 || r.errMsg != "storage_unavailable" {
		t.Fatalf("%+v, want 503", r)
	}
	if e.pobs.count(outcomeError) != 1 || !strings.Contains(e.logs.String(), `"event":"webhook_store_failed"`) {
		t.Fatalf("store failure not counted or logged")
	}
}

func TestConcurrentDeliveriesOfOnePaymentLogItOnce(t *testing.T) {
	e := startPayments(t, true, nil)
	b := []byte(payBody)
	h := paySigned(t, b, "1")
	var wg sync.WaitGroup
	results := make(chan payResult, 12)
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results <- e.pay(t, b, h)
		}()
	}
	wg.Wait()
	close(results)
	counts := map[string]int{}
	for r := range results {
		if r.seq != 1 {
			t.Errorf("reply with seq %d", r.seq)
		}
		counts[r.result]++
	}
	if counts["accepted"] != 1 || counts["duplicate"] != 11 {
		t.Fatalf("results %v, want 1 accepted and 11 duplicates", counts)
	}
}

func TestPaymentOptionsAreChecked(t *testing.T) {
	st, err := store.Open(t.TempDir(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	base := Options{Path: testPath, MaxBodyBytes: 4096, Secret: func() []byte { return []byte("s") }, Store: st}
	for name, p := range map[string]PaymentOptions{
		"same path":  {Path: testPath, Secret: base.Secret, Store: st, DedupFields: defaultDedup},
		"no slash":   {Path: "pay", Secret: base.Secret, Store: st, DedupFields: defaultDedup},
		"no secret":  {Path: payPath, Store: st, DedupFields: defaultDedup},
		"no fields":  {Path: payPath, Secret: base.Secret, Store: st},
		"empty path": {Path: payPath, Secret: base.Secret, Store: st, DedupFields: [][]string{{""}}},
	} {
		o := base
		o.Payments = &p
		if _, err := New(o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
