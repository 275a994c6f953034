package receiver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
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
	testPath   = "/webhooks/batch-completed"
	testSecret = "whsec_test secret "
)

type env struct {
	obs   *countingObserver
	url   string
	store *store.Store
	logs  *testutil.SyncBuffer
}

func start(t *testing.T, rec Recorder) *env {
	t.Helper()
	return startWithLimits(t, rec, Limits{})
}

type countingObserver struct {
	mu       sync.Mutex
	outcomes map[string]int
}

func (o *countingObserver) WebhookHandled(outcome string, took time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.outcomes == nil {
		o.outcomes = map[string]int{}
	}
	o.outcomes[outcome]++
}

func (o *countingObserver) count(outcome string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.outcomes[outcome]
}

func startWithLimits(t *testing.T, rec Recorder, limits Limits) *env {
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
	obs := &countingObserver{}
	srv, err := New(Options{
		Path: testPath, MaxBodyBytes: 4096, Secret: func() []byte { return []byte(testSecret) },
		Store: rec, Logger: zerolog.New(logs), Limits: limits, Observer: obs, RejectBurst: 5,
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Serve(ln)
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	return &env{obs: obs, url: "http://" + ln.Addr().String(), store: st, logs: logs}
}

func body(id, status string) []byte {
	return []byte(fmt.Sprintf(`{"event":"batch.completed","batch_id":%q,"status":%q,"total_requested":3,"total_found":2,"total_not_found":1,"completed_at":"2026-11-22T10:00:00Z"}`, id, status))
}

type result struct {
	code int
	body map[string]string
	hdr  http.Header
}

func (e *env) post(t *testing.T, path string, b []byte, headers map[string]string) result {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.url+path, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := map[string]string{}
	_ = json.Unmarshal(raw, &out)
	return result{resp.StatusCode, out, resp.Header}
}

func signed(b []byte) map[string]string {
	return map[string]string{signature.Header: signature.Sign([]byte(testSecret), b), "X-Service-Attempt": "1"}
}

func TestAcceptThenDuplicate(t *testing.T) {
	e := start(t, nil)
	b := body("b_1", "partial")
	r := e.post(t, testPath, b, signed(b))
	if r.code != 200 || r.body["result"] != "accepted" || r.body["batch_id"] != "b_1" {
		t.Fatalf("first delivery: %d %v", r.code, r.body)
	}
	rec, err := e.store.Get("b_1")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rec.Notification.Raw, b) || rec.State != store.StateQueued || rec.Notification.Status != "partial" ||
		rec.Notification.Attempt != 1 || rec.Notification.Source != store.SourceWebhook {
		t.Fatalf("record = %+v", rec)
	}
	h := signed(b)
	h["X-Service-Attempt"] = "2"
	r = e.post(t, testPath, b, h)
	if r.code != 200 || r.body["result"] != "duplicate" {
		t.Fatalf("replay: %d %v", r.code, r.body)
	}
	again, _ := e.store.Get("b_1")
	if again.Notification.Attempt != 1 || !again.UpdatedAt.Equal(rec.UpdatedAt) {
		t.Fatalf("replay changed the record: %+v", again)
	}
	if !strings.Contains(e.logs.String(), `"event":"webhook_duplicate"`) || !strings.Contains(e.logs.String(), `"delivery_attempt":2`) {
		t.Fatalf("duplicate not logged with its attempt:\n%s", e.logs.String())
	}
}

func TestConcurrentDeliveriesOfOneBatchAcceptOnce(t *testing.T) {
	e := start(t, nil)
	b := body("b_race", "completed")
	var wg sync.WaitGroup
	results := make(chan string, 16)
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results <- e.post(t, testPath, b, signed(b)).body["result"]
		}()
	}
	wg.Wait()
	close(results)
	counts := map[string]int{}
	for r := range results {
		counts[r]++
	}
	if counts["accepted"] != 1 || counts["duplicate"] != 15 {
		t.Fatalf("results = %v, want 1 accepted and 15 duplicates", counts)
	}
}

func TestRejectedSignaturesStoreNothing(t *testing.T) {
	e := start(t, nil)
	b := body("b_forged", "completed")
	good := signature.Sign([]byte(testSecret), b)
	cases := map[string]string{
		"missing":  "",
		"44 chars": good[:44],
		"prefix":   "sha256=" + good,
		"mismatch": signature.Sign([]byte("other secret"), b),
	}
	for name, sig := range cases {
		h := map[string]string{}
		if sig != "" {
			h[signature.Header] = sig
		}
		r := e.post(t, testPath, b, h)
		if r.code != 401 || r.body["error"] == "" {
			t.Errorf("%s: %d %v, want 401", name, r.code, r.body)
		}
	}
	// A body that is not even JSON gets 401 too: the signature comes first.
	if r := e.post(t, testPath, []byte("not json"), nil); r.code != 401 {
		t.Errorf("unsigned garbage: %d, want 401", r.code)
	}
	if known, _ := e.store.Known("b_forged"); known {
		t.Fatal("a forged delivery was recorded")
	}
	if n, _ := e.store.CountQuarantined(); n != 0 {
		t.Fatalf("%d quarantine entries from unsigned requests", n)
	}
	logs := e.logs.String()
	for _, want := range []string{`"reason":"raw_digest_encoding"`, `"reason":"sha256_prefix"`, `"reason":"missing"`, `"reason":"mismatch"`, `"body_sha256"`, `"body_len"`, `"remote_addr"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("rejection logs lack %s", want)
		}
	}
	if strings.Contains(logs, testSecret) || strings.Contains(logs, good) {
		t.Fatal("logs contain the secret or the expected signature")
	}
}

func TestInvalidSignedBodyIsQuarantined(t *testing.T) {
	e := start(t, nil)
	b := body("b_bad", "unknown-status")
	for i := 0; i < 2; i++ {
		r := e.post(t, testPath, b, signed(b))
		if r.code != 400 || !strings.Contains(r.body["error"], "status") {
			t.Fatalf("invalid body: %d %v", r.code, r.body)
		}
	}
	if n, _ := e.store.CountQuarantined(); n != 1 {
		t.Fatalf("quarantine entries = %d, want 1 (deduplicated by body hash)", n)
	}
	if known, _ := e.store.Known("b_bad"); known {
		t.Fatal("an invalid notification was recorded as a batch")
	}
}

func TestOtherEventIsAuditedNotQueued(t *testing.T) {
	e := start(t, nil)
	b := []byte(`{"event":"batch.started","batch_id":"b_other"}`)
	r := e.post(t, testPath, b, signed(b))
	if r.code != 200 || r.body["result"] != "ignored" {
		t.Fatalf("other event: %d %v", r.code, r.body)
	}
	if known, _ := e.store.Known("b_other"); known {
		t.Fatal("another event created a batch")
	}
}

func TestSizeEncodingMethodAndPath(t *testing.T) {
	e := start(t, nil)
	big := append(body("b_big", "completed")[:0:0], body("b_big", "completed")...)
	big = append(big[:len(big)-1], []byte(`,"pad":"`+strings.Repeat("x", 5000)+`"}`)...)
	if r := e.post(t, testPath, big, signed(big)); r.code != 413 {
		t.Errorf("oversized body: %d, want 413", r.code)
	}
	if known, _ := e.store.Known("b_big"); known {
		t.Error("oversized body recorded")
	}
	b := body("b_gz", "completed")
	h := signed(b)
	h["Content-Encoding"] = "gzip"
	if r := e.post(t, testPath, b, h); r.code != 415 {
		t.Errorf("gzip-encoded: %d, want 415", r.code)
	}
	if !strings.Contains(e.logs.String(), `"event":"webhook_unsupported_encoding","content_encoding":"gzip"`) {
		t.Errorf("the 415 line does not name the encoding:\n%s", e.logs.String())
	}
	if r := e.post(t, "/elsewhere", b, signed(b)); r.code != 404 || r.body["error"] != "not_found" {
		t.Errorf("other path: %d %v, want 404", r.code, r.body)
	}
	resp, err := http.Get(e.url + testPath)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 || resp.Header.Get("Allow") != "POST" {
		t.Errorf("GET on webhook: %d Allow=%q, want 405 POST", resp.StatusCode, resp.Header.Get("Allow"))
	}
}

type failingStore struct{ *store.Store }

func (failingStore) RecordContext(context.Context, store.Notification) (bool, error) {
	return false, errors.New("disk on fire")
}

func TestStorageFailureIs503(t *testing.T) {
	st, err := store.Open(t.TempDir(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e := start(t, failingStore{st})
	b := body("b_503", "completed")
	r := e.post(t, testPath, b, signed(b))
	if r.code != 503 || r.body["error"] == "" {
		t.Fatalf("storage failure: %d %v, want 503", r.code, r.body)
	}
	if !strings.Contains(e.logs.String(), `"event":"webhook_store_failed"`) {
		t.Fatal("storage failure not logged")
	}
}

func TestSlowClientsAreCutOff(t *testing.T) {
	e := startWithLimits(t, nil, Limits{ReadHeaderTimeout: 200 * time.Millisecond, ReadTimeout: 400 * time.Millisecond,
		WriteTimeout: time.Second, IdleTimeout: time.Second, MaxHeaderBytes: 4096})
	addr := strings.TrimPrefix(e.url, "http://")

	// Headers dribbled and never finished: the server hangs up.
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\n", testPath)
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	_, err = io.ReadAll(conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("server kept a half-sent request open for 5s")
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("cut off after %s", took)
	}

	// A body that never arrives: cut off by the read timeout.
	conn2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close()
	fmt.Fprintf(conn2, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{", testPath)
	conn2.SetReadDeadline(time.Now().Add(5 * time.Second))
	start = time.Now()
	resp, _ := io.ReadAll(conn2)
	if bytes.Contains(resp, []byte("200 OK")) {
		t.Fatalf("a truncated body was acknowledged: %q", resp)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("a stalled body held the connection for %s; the read timeout is 400ms", took)
	}

	// Oversized headers: 431.
	req, _ := http.NewRequest(http.MethodPost, e.url+testPath, strings.NewReader("{}"))
	req.Header.Set("X-Pad", strings.Repeat("a", 64<<10))
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("64 KiB of headers: %d, want 431", r.StatusCode)
	}

	// Still serving.
	b := body("b_after", "completed")
	if res := e.post(t, testPath, b, signed(b)); res.code != 200 {
		t.Fatalf("after slow clients: %d", res.code)
	}
}

func TestOutcomesAreCountedAndRejectionLogsSampled(t *testing.T) {
	e := start(t, nil)
	b := body("b_obs", "completed")
	e.post(t, testPath, b, signed(b))
	e.post(t, testPath, b, signed(b))
	bad := body("b_obs2", "nope")
	e.post(t, testPath, bad, signed(bad))
	for i := 0; i < 100; i++ {
		e.post(t, testPath, b, map[string]string{signature.Header: "forged"})
	}
	for outcome, want := range map[string]int{"accepted": 1, "duplicate": 1, "invalid": 1, "unauthorized": 100} {
		if got := e.obs.count(outcome); got != want {
			t.Errorf("outcome %s counted %d times, want %d", outcome, got, want)
		}
	}
	lines := strings.Count(e.logs.String(), `"event":"webhook_rejected"`)
	if lines == 0 || lines > 20 {
		t.Fatalf("%d rejection lines for 100 forged requests, want a sample (1..20)", lines)
	}
}

type failingKnown struct{ *store.Store }

func (failingKnown) KnownContext(context.Context, string) (bool, error) {
	return false, errors.New("read failed")
}

type failingQuarantine struct{ *store.Store }

func (failingQuarantine) QuarantineContext(context.Context, store.Quarantined) error {
	return errors.New("disk full")
}

type failingAudit struct{ *store.Store }

func (failingAudit) AuditContext(context.Context, store.AuditEvent) error {
	return errors.New("disk full")
}

// Every storage failure is a 503, never a 2xx or a 400 that the provider
// would not retry.
func TestEveryStorageFailureIs503(t *testing.T) {
	st, err := store.Open(t.TempDir(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cases := []struct {
		name string
		rec  Recorder
		body []byte
	}{
		{"lookup", failingKnown{st}, body("b_k", "completed")},
		{"quarantine", failingQuarantine{st}, body("b_q", "bogus")},
		{"audit", failingAudit{st}, []byte(`{"event":"batch.started","batch_id":"b_a"}`)},
	}
	for _, c := range cases {
		e := start(t, c.rec)
		if r := e.post(t, testPath, c.body, signed(c.body)); r.code != 503 {
			t.Errorf("%s failure: %d %v, want 503", c.name, r.code, r.body)
		}
	}
}

func TestAuditKeepsTheRawBody(t *testing.T) {
	e := start(t, nil)
	b := []byte(`{"event":"batch.started","batch_id":"b_audit","extra":"kept"}`)
	if r := e.post(t, testPath, b, signed(b)); r.code != 200 || r.body["result"] != "ignored" {
		t.Fatalf("other event: %d %v", r.code, r.body)
	}
	sum := sha256.Sum256(b)
	got, err := e.store.GetAudit(hex.EncodeToString(sum[:]))
	if err != nil || !bytes.Equal(got.Raw, b) || got.Event != "batch.started" || got.BatchID != "b_audit" {
		t.Fatalf("audit entry = %+v, %v", got, err)
	}
}

func TestRejectionLogCarriesTheAttempt(t *testing.T) {
	e := start(t, nil)
	b := body("b_att", "completed")
	e.post(t, testPath, b, map[string]string{signature.Header: "bad", "X-Service-Attempt": "3"})
	if !strings.Contains(e.logs.String(), `"delivery_attempt":3`) {
		t.Fatalf("rejection line lacks the attempt:\n%s", e.logs.String())
	}
}

func TestBodyCapBoundaryAndIdentityEncoding(t *testing.T) {
	e := start(t, nil) // MaxBodyBytes 4096
	pad := func(id string, size int) []byte {
		b := body(id, "completed")
		b = append(b[:len(b)-1], []byte(`,"pad":"`)...)
		b = append(b, bytes.Repeat([]byte("x"), size-len(b)-2)...)
		return append(b, '"', '}')
	}
	exact, over := pad("b_exact", 4096), pad("b_over", 4097)
	if len(exact) != 4096 || len(over) != 4097 {
		t.Fatalf("padding: %d %d", len(exact), len(over))
	}
	if r := e.post(t, testPath, exact, signed(exact)); r.code != 200 {
		t.Errorf("body of exactly MaxBodyBytes: %d, want 200", r.code)
	}
	if r := e.post(t, testPath, over, signed(over)); r.code != 413 {
		t.Errorf("body of MaxBodyBytes+1: %d, want 413", r.code)
	}
	b := body("b_identity", "completed")
	h := signed(b)
	h["Content-Encoding"] = "identity"
	if r := e.post(t, testPath, b, h); r.code != 200 {
		t.Errorf("Content-Encoding identity: %d, want 200", r.code)
	}
}

func TestDefaultLimitsAreSet(t *testing.T) {
	l := DefaultLimits()
	for name, d := range map[string]time.Duration{"ReadHeaderTimeout": l.ReadHeaderTimeout, "ReadTimeout": l.ReadTimeout,
		"WriteTimeout": l.WriteTimeout, "IdleTimeout": l.IdleTimeout} {
		if d <= 0 || d > time.Minute {
			t.Errorf("%s = %s, want a deadline of at most a minute", name, d)
		}
	}
	if l.ReadTimeout > 10*time.Second {
		t.Errorf("ReadTimeout %s exceeds the provider's 10 s delivery timeout", l.ReadTimeout)
	}
	if l.MaxHeaderBytes <= 0 || l.MaxHeaderBytes > 64<<10 {
		t.Errorf("MaxHeaderBytes = %d", l.MaxHeaderBytes)
	}
}

// TestLateWebhookForABatchAbandonedWithoutOneIsQueued: the reconciler gave
// up on a tracked batch (404 past NOT_FOUND_GRACE) before any notification
// came; the provider's genuine batch.completed then queues it, and
// only a replay of it is a duplicate.
func TestLateWebhookForABatchAbandonedWithoutOneIsQueued(t *testing.T) {
	e := start(t, nil)
	now := time.Now().UTC()
	if _, _, err := e.store.Track("b_late", now, now); err != nil {
		t.Fatal(err)
	}
	if err := e.store.AbandonAwaiting("b_late", "provider answered 404 past NOT_FOUND_GRACE", now); err != nil {
		t.Fatal(err)
	}
	b := body("b_late", "completed")
	if r := e.post(t, testPath, b, signed(b)); r.code != 200 || r.body["result"] != "accepted" {
		t.Fatalf("late genuine delivery: %d %v, want 200 accepted", r.code, r.body)
	}
	if rec, err := e.store.Get("b_late"); err != nil || rec.State != store.StateQueued || !bytes.Equal(rec.Notification.Raw, b) {
		t.Fatalf("record after the late delivery = %+v, %v", rec, err)
	}
	if r := e.post(t, testPath, b, signed(b)); r.code != 200 || r.body["result"] != "duplicate" {
		t.Fatalf("replay: %d %v, want 200 duplicate", r.code, r.body)
	}
}
