package demo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
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

	"github.com/batchhook/batchhook/internal/signature"
	"github.com/batchhook/batchhook/lookupsim"
)

const (
	testAPIKey         = "key-demo-test"
	testPaymentsSecret = "payments secret of the demo's tests"
)

// dayFileWriter stands in for the daemon's payments endpoint and file
// sink: it verifies each webhook with the payments secret and appends the
// line the payments file sink writes (one event a line, with its body's hash) to dir/<UTC day>.ndjson.
type dayFileWriter struct {
	mu  sync.Mutex
	dir string
	seq int
}

func (w *dayFileWriter) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	if signature.Verify([]byte(testPaymentsSecret), raw, r.Header.Get(signature.Header)) != signature.OK {
		rw.WriteHeader(http.StatusUnauthorized)
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seq++
	var body bytes.Buffer
	_ = json.Compact(&body, raw)
	sum := sha256.Sum256(raw)
	now := time.Now().UTC()
	line := fmt.Sprintf(`{"seq":%d,"received_at":%q,"event":%q,"attempt":%s,"body_sha256":"%x","body":%s}`+"\n",
		w.seq, now.Format(time.RFC3339Nano), r.Header.Get("X-Service-Event"), r.Header.Get("X-Service-Attempt"), sum, body.Bytes())
	f, err := os.OpenFile(filepath.Join(w.dir, now.Format("2006-01-02")+".ndjson"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err == nil {
		_, err = f.WriteString(line)
		f.Close()
	}
	if err != nil {
		rw.WriteHeader(http.StatusInternalServerError)
	}
}

// TestDemoPaymentFlowsAndDayFileCheck: the demo's flows go through the
// simulator and its webhooks; the demo's check accepts day files holding
// each event once and refuses a missing, a doubled or a altered line.
func TestDemoPaymentFlowsAndDayFileCheck(t *testing.T) {
	dir := t.TempDir()
	srv := httptest.NewServer(&dayFileWriter{dir: dir})
	defer srv.Close()
	sim, err := lookupsim.New(lookupsim.Options{APIKey: testAPIKey, PaymentsWebhookURL: srv.URL + "/webhooks/payments",
		PaymentsSigningSecret: []byte(testPaymentsSecret), RetryBackoff: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer sim.Close(context.Background())

	var out bytes.Buffer
	flows, err := runPaymentFlows(context.Background(), sim, &out)
	if err != nil {
		t.Fatal(err)
	}
	if len(flows) != 3 || flows[0].Event != "transaction.paid" || flows[1].Event != "transaction.paid" || flows[2].Event != "transaction.failed" {
		t.Fatalf("flows %+v", flows)
	}
	if n := strings.Count(out.String(), "sandbox: "); n != 3 || strings.Contains(out.String(), "Ana") || strings.Contains(out.String(), demoCPF) {
		t.Fatalf("demo output:\n%s", out.String())
	}
	files, err := WaitPaymentDayFiles(context.Background(), dir, flows, 10*time.Second)
	if err != nil || len(files) == 0 {
		t.Fatalf("day files %v: %v", files, err)
	}

	// One day file, rewritten three ways: each must be refused.
	orig, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(orig), "\n") // each with its "\n", then ""
	lines = lines[:len(lines)-1]
	if len(lines) != 3 {
		t.Fatalf("%d lines in %s", len(lines), files[0])
	}
	// Webhooks are sent concurrently: find each flow's line by its id.
	lineOf := func(txID string) string {
		for _, l := range lines {
			if strings.Contains(l, txID) {
				return l
			}
		}
		t.Fatalf("no line for %s", txID)
		return ""
	}
	for name, c := range map[string][2]string{
		"a line removed":  {strings.Replace(string(orig), lineOf(flows[2].TxID), "", 1), "missing [withdrawal failed]"},
		"a line doubled":  {string(orig) + lineOf(flows[1].TxID), "more than once [withdrawal paid]"},
		"another name":    {strings.Replace(string(orig), `"event":"transaction.failed"`, `"event":"transaction.paid"`, 1), "not its name or body"},
		"another body":    {strings.Replace(string(orig), `"status":"failed"`, `"status":"paid"`, 1), "not its name or body"},
		"a line not JSON": {string(orig) + "{\n", "not JSON"},
	} {
		if err := os.WriteFile(files[0], []byte(c[0]), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := checkPaymentDayFiles(dir, flows); err == nil || !strings.Contains(err.Error(), c[1]) {
			t.Errorf("%s: check said %v, want %q", name, err, c[1])
		}
	}
}
