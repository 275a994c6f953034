package httpsink_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batchhook/batchhook/sink"
	"github.com/batchhook/batchhook/sink/httpsink"
)

// testSecret is the first secret of testdata/signatures.txt.
const testSecret = "whsec_YmF0Y2hob29rLXRlc3Qta2V5LTAxMjM0NTY3ODlhYmM="

var exportedAt = time.Date(2026, 11, 24, 10, 0, 0, 123456789, time.UTC)

// request is one POST as the test receiver saw it.
type request struct {
	id, ts, sig, contentType, userAgent string
	body                                []byte
}

// receiver is a Standard Webhooks receiver written for the tests: it
// checks every signature with its own HMAC code (not the sink's Sign) and
// answers as its answer function says.
type receiver struct {
	t      *testing.T
	srv    *httptest.Server
	key    []byte
	answer func(n int, id string, w http.ResponseWriter, r *http.Request)

	mu   sync.Mutex
	reqs []request
	bad  []string
}

// newReceiver starts a receiver; answer (nil = 204) is called with the
// 0-based number of the request.
func newReceiver(t *testing.T, answer func(n int, id string, w http.ResponseWriter, r *http.Request)) *receiver {
	t.Helper()
	return startReceiver(t, testSecret, httptest.NewServer, answer)
}

// startReceiver is newReceiver with another secret or a TLS server.
func startReceiver(t *testing.T, secret string, start func(http.Handler) *httptest.Server, answer func(n int, id string, w http.ResponseWriter, r *http.Request)) *receiver {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		t.Fatal(err)
	}
	rc := &receiver{t: t, key: key, answer: answer}
	rc.srv = start(http.HandlerFunc(rc.serve))
	t.Cleanup(func() {
		rc.srv.Close()
		rc.mu.Lock()
		defer rc.mu.Unlock()
		for _, b := range rc.bad {
			t.Errorf("receiver: %s", b)
		}
	})
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		http.Error(w, "read", http.StatusBadRequest)
		return
	}
	q := request{
		id: r.Header.Get("webhook-id"), ts: r.Header.Get("webhook-timestamp"), sig: r.Header.Get("webhook-signature"),
		contentType: r.Header.Get("Content-Type"), userAgent: r.Header.Get("User-Agent"), body: body,
	}
	mac := hmac.New(sha256.New, rc.key)
	mac.Write([]byte(q.id + "." + q.ts + "."))
	mac.Write(body)
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	rc.mu.Lock()
	n := len(rc.reqs)
	rc.reqs = append(rc.reqs, q)
	ok := r.Method == http.MethodPost && hmac.Equal([]byte(q.sig), []byte(want))
	if !ok {
		rc.bad = append(rc.bad, fmt.Sprintf("request %d (%s %s): signature %q, want %q", n, r.Method, q.id, q.sig, want))
	}
	rc.mu.Unlock()
	if !ok {
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	if rc.answer == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	rc.answer(n, q.id, w, r)
}

func (rc *receiver) requests() []request {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]request(nil), rc.reqs...)
}

func (rc *receiver) ids() []string {
	var ids []string
	for _, q := range rc.requests() {
		ids = append(ids, q.id)
	}
	return ids
}

// payload is a part's body as a receiver decodes it; RawMessage keeps the
// items' bytes as sent.
type payload struct {
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"`
	Data      struct {
		BatchID  string            `json:"batch_id"`
		Part     int               `json:"part"`
		Parts    int               `json:"parts"`
		Manifest json.RawMessage   `json:"manifest"`
		Items    []json.RawMessage `json:"items"`
	} `json:"data"`
}

func decode(t *testing.T, body []byte) payload {
	t.Helper()
	var p payload
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("body is not the documented JSON: %v", err)
	}
	return p
}

// progress is a sink.Progress in memory that records every Mark and can
// be told to fail them.
type progress struct {
	mu       sync.Mutex
	done     int
	marks    []int
	failMark bool
}

func (p *progress) Done() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

func (p *progress) Mark(n int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.marks = append(p.marks, n)
	if p.failMark {
		return errors.New("bbolt: disk full")
	}
	p.done = n
	return nil
}

func (p *progress) recorded() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int(nil), p.marks...)
}

// cpfItem is a result line that looks like the provider's: it carries a
// formatted CPF, so a Reason that leaked an item would show it.
func cpfItem(i int) string {
	return fmt.Sprintf(`{"cpf":"529.982.%03d-%02d","index":%d,"found":true,"name":"Pessoa %d"}`, i%1000, i%100, i, i)
}

func cpfItems(n int) []string {
	items := make([]string, n)
	for i := range items {
		items[i] = cpfItem(i)
	}
	return items
}

// manifestFor is an indented manifest.json, so the test sees the sink
// compact it.
func manifestFor(batchID string, items int) []byte {
	return []byte(fmt.Sprintf("{\n  \"batch_id\": %q,\n  \"status\": \"completed\",\n  \"exported_at\": %q,\n  \"items\": %d,\n  \"flags\": [ \"x\" ]\n}\n",
		batchID, exportedAt.Format(time.RFC3339Nano), items))
}

// writeExport publishes items like the file export does and returns the
// sink's view of it.
func writeExport(t *testing.T, batchID string, items []string, version int) sink.Export {
	t.Helper()
	dir := t.TempDir()
	var results bytes.Buffer
	for _, it := range items {
		results.WriteString(it + "\n")
	}
	manifest := manifestFor(batchID, len(items))
	if err := os.WriteFile(filepath.Join(dir, "results.ndjson"), results.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), manifest, 0o600); err != nil {
		t.Fatal(err)
	}
	return sink.Export{
		BatchID: batchID, Status: "completed", Dir: dir, Manifest: manifest,
		Items: int64(len(items)), ExportedAt: exportedAt, Version: version,
		OpenItems: func() (io.ReadCloser, error) { return os.Open(filepath.Join(dir, "results.ndjson")) },
	}
}

// clock advances a minute on every reading, so each attempt has its own
// webhook-timestamp.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Minute)
	return c.t
}

func newSink(t *testing.T, url string, maxItems int, timeout time.Duration) (*httpsink.Sink, *clock) {
	t.Helper()
	key, err := httpsink.DecodeSecret(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	c := &clock{t: time.Now().Truncate(time.Second)}
	s, err := httpsink.New(httpsink.Options{
		URL: url, Key: func() []byte { return key }, MaxItems: maxItems, Timeout: timeout, Now: c.now,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}
