package main

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
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batchhook/batchhook/internal/signature"
	"github.com/batchhook/batchhook/lookupsim"
)

// dayFileWriter stands in for the daemon's payments endpoint and file
// sink: it verifies each webhook with the payments secret and appends the
// line issue 13 specifies to dir/<UTC day>.ndjson.
type dayFileWriter struct {
	mu  sync.Mutex
	dir string
	seq int
}

func (w *dayFileWriter) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	if signature.Verify([]byte(sbPaymentsSecret), raw, r.Header.Get(signature.Header)) != signature.OK {
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
	sim, err := lookupsim.New(lookupsim.Options{APIKey: e2eKey, PaymentsWebhookURL: srv.URL + "/webhooks/payments",
		PaymentsSigningSecret: []byte(sbPaymentsSecret), RetryBackoff: 20 * time.Millisecond})
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
	if len(flows) != 3 || flows[0].event != "transaction.paid" || flows[1].event != "transaction.paid" || flows[2].event != "transaction.failed" {
		t.Fatalf("flows %+v", flows)
	}
	if n := strings.Count(out.String(), "sandbox: "); n != 3 || strings.Contains(out.String(), "Ana") || strings.Contains(out.String(), demoCPF) {
		t.Fatalf("demo output:\n%s", out.String())
	}
	files, err := waitPaymentDayFiles(context.Background(), dir, flows, 10*time.Second)
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
		"a line removed":  {strings.Replace(string(orig), lineOf(flows[2].txID), "", 1), "missing [withdrawal failed]"},
		"a line doubled":  {string(orig) + lineOf(flows[1].txID), "more than once [withdrawal paid]"},
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

// TestDemoPayments: `demo --payments --keep` end to end with the real binary.
func TestDemoPayments(t *testing.T) {
	cmd := exec.Command(binary, "demo", "--payments", "-cpfs", "20", "--keep")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("demo --payments: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[len(lines)-1], "export: ") {
		t.Fatalf("stdout:\n%s", stdout.String())
	}
	t.Cleanup(func() {
		os.RemoveAll(filepath.Dir(filepath.Dir(filepath.Dir(strings.TrimPrefix(lines[len(lines)-1], "export: ")))))
	})
	re := regexp.MustCompile(`^payments: /\S+/payments/\d{4}-\d{2}-\d{2}\.ndjson.* \(3 events: deposit paid, withdrawal paid, withdrawal failed; each once, bytes as signed\)$`)
	if payments := lineWithPrefix(lines, "payments: "); !re.MatchString(payments) {
		t.Fatalf("payments line %q, want %s", payments, re)
	}
	checkDemoPaymentsServe(t, lines)
}

// checkDemoPaymentsServe: the kept directory holds the payments secret as
// a 0600 file, and the printed serve command names it, so the daemon run
// as printed still has payments on and shows the demo's events.
func checkDemoPaymentsServe(t *testing.T, lines []string) {
	t.Helper()
	var serve string
	for _, l := range lines {
		if strings.HasSuffix(l, " batchhook serve") {
			serve = strings.TrimSpace(strings.TrimSuffix(l, " batchhook serve"))
		}
	}
	env := map[string]string{}
	for _, w := range strings.Fields(serve) {
		if k, v, ok := strings.Cut(w, "="); ok && k != "BATCHHOOK_LISTEN_ADDR" && k != "BATCHHOOK_ADMIN_ADDR" {
			env[k] = v
		}
	}
	file := env["BATCHHOOK_PAYMENTS_SIGNING_SECRET_FILE"]
	if file == "" {
		t.Fatalf("the serve command %q does not name the payments secret", serve)
	}
	if st, err := os.Stat(file); err != nil || st.Mode().Perm() != 0o600 || st.Size() == 0 {
		t.Fatalf("payments secret file %s: %v %v, want a non-empty 0600 file", file, st, err)
	}
	env["BATCHHOOK_LOG_FORMAT"] = "json" // startDaemon reads the JSON start line
	d := startDaemon(t, freePort(t), env)
	defer d.stop(t)
	out, stderr, code := runCLI(t, d, 30*time.Second, "payments", "list")
	if code != 0 || strings.Contains(out, "payments are off") || strings.Count(out, "transaction.") < 3 {
		t.Fatalf("payments list on the kept directory: exit %d\n%s\n%s", code, out, stderr)
	}
}
