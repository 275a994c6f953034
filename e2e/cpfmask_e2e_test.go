package e2e

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/admin"
	"github.com/batchhook/batchhook/internal/signature"
	"github.com/batchhook/batchhook/lookupsim"
)

// cpfForms are the forms the hostile requests below write their CPFs in,
// and the first nine digits of each (which give the rest away): none may
// be read back from a log line, an admin reply or the CLI.
var cpfForms = []string{"52998224725", "529.982.247-25", "529982247", "529.982.247", "11144477735", "111.444.777-35", "111444777"}

func cpfLeak(text string) string {
	for _, f := range cpfForms {
		if strings.Contains(text, f) {
			return f
		}
	}
	return ""
}

// rawPost writes one request by hand (a Content-Length no client library
// would send for the bytes it has) and returns the status line's code.
func rawPost(t *testing.T, addr, path, contentLength, body string) int {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(waitBound))
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %s\r\nConnection: close\r\n\r\n%s", path, addr, contentLength, body)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("POST %s with Content-Length %s: %v", path, contentLength, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// postUnsigned sends body with a signature header of the sender's choice.
func postUnsigned(t *testing.T, addr, path, sig string, body []byte) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-service-webhook-signature", sig)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Every shape in which a sender can hand batchhook a CPF — as a batch_id,
// a status, a JSON key, a Content-Length, a counter, a signature header, a
// path, an event header, bare and formatted, on both webhooks — is sent to
// the real binary; then every log line, every admin reply a stranger's or
// a provider's values reach (status, batches, quarantine, rejected,
// payments, metrics) and the CLI's views of them are read for the CPF.
// None may hold it, and a stranger's requests cost a bounded number of
// log bytes each.
func TestNoCPFReadBackFromLogsOrAdmin(t *testing.T) {
	t.Parallel()
	s := newSetup(t, lookupsim.Options{})
	payFile := filepath.Join(t.TempDir(), "payments-secret")
	if err := os.WriteFile(payFile, []byte(e2ePaySecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.env["BATCHHOOK_PAYMENTS_SIGNING_SECRET_FILE"] = payFile
	d := startDaemon(t, s.addr, s.env)

	signedBatch := []struct {
		name, body string
		code       int
	}{
		{"batch_id bare", `{"event":"batch.completed","batch_id":"52998224725","status":"completed","total_requested":1,"total_found":1,"total_not_found":0}`, 400},
		{"batch_id formatted", `{"event":"batch.completed","batch_id":"529.982.247-25","status":"completed","total_requested":1,"total_found":1,"total_not_found":0}`, 400},
		{"status bare", `{"event":"batch.completed","batch_id":"b_st1","status":"52998224725"}`, 400},
		{"status formatted", `{"event":"batch.completed","batch_id":"b_st2","status":"cpf 111.444.777-35"}`, 400},
		{"a key", `{"event":"batch.completed","batch_id":"b_key","status":"bogus","52998224725":1}`, 400},
		{"a repeated key", `{"event":"batch.completed","batch_id":"b_key2","111.444.777-35":1,"111.444.777-35":2}`, 400},
		{"a value elsewhere", `{"event":"batch.completed","batch_id":"b_else","status":"bogus","note":"529.982.247-25"}`, 400},
		{"total_found", `{"event":"batch.completed","batch_id":"b_tf","status":"completed","total_requested":5,"total_found":52998224725,"total_not_found":2,"completed_at":"2026-11-24T10:00:00Z"}`, 200},
	}
	var quarantined []string
	for _, c := range signedBatch {
		if code, _ := postSigned(t, s.addr, []byte(c.body), 1); code != c.code {
			t.Fatalf("%s: %d, want %d", c.name, code, c.code)
		}
		if c.code == 400 {
			sum := sha256.Sum256([]byte(c.body))
			quarantined = append(quarantined, hex.EncodeToString(sum[:]))
		}
	}
	// Payments: a body that is not an object, an accepted event whose
	// name is a CPF.
	payBad := []byte(`["52998224725","529.982.247-25"]`)
	if code, _ := postPayment(t, s.addr, payBad, e2ePaySecret, "1"); code != 400 {
		t.Fatalf("payments non-object: %d", code)
	}
	sum := sha256.Sum256(payBad)
	quarantined = append(quarantined, hex.EncodeToString(sum[:]))
	payOK := []byte(`{"transaction":{"id":"t-cpf-1"},"amount":1}`)
	if code, _ := postPaymentEvent(t, s.addr, payOK, "52998224725"); code != 200 {
		t.Fatalf("payment with a CPF for its event: %d", code)
	}

	// Strangers: unsigned, oversized, wrong path.
	for _, path := range []string{e2ePath, "/webhooks/payments"} {
		if code := rawPost(t, s.addr, path, "52998224725", "{}"); code != 413 {
			t.Fatalf("Content-Length that is a CPF on %s: %d, want 413", path, code)
		}
	}
	if code := postUnsigned(t, s.addr, e2ePath, "52998224725", []byte(`{"event":"batch.completed","batch_id":"b_u","cpf":"529.982.247-25","n":11144477735}`)); code != 401 {
		t.Fatalf("unsigned body: %d, want 401", code)
	}
	if code := postUnsigned(t, s.addr, "/webhooks/529.982.247-25", "", []byte(`{}`)); code != 404 {
		t.Fatalf("a path with a CPF: %d, want 404", code)
	}
	waitLogLine(t, d, `"event":"webhook_accepted"`, `"batch_id":"b_tf"`)
	waitLogLine(t, d, `"event":"webhook_too_large"`)
	waitLogLine(t, d, `"event":"webhook_rejected"`)

	// What an operator can read back.
	type reply struct{ what, text string }
	var replies []reply
	read := func(path string) string {
		t.Helper()
		code, body := get(t, d.admin+path, "")
		if code != 200 {
			t.Fatalf("GET %s: %d %s", path, code, body)
		}
		replies = append(replies, reply{"GET " + path, body})
		return body
	}
	for _, path := range []string{"/admin/status", "/admin/batches", "/admin/batches/b_tf", "/admin/quarantine?limit=1000",
		"/admin/payments/events", "/metrics"} {
		read(path)
	}
	for _, id := range quarantined {
		read("/admin/quarantine/" + id)
	}
	var rejected admin.ListReply[admin.RejectedView]
	if err := json.Unmarshal([]byte(read("/admin/rejected")), &rejected); err != nil {
		t.Fatal(err)
	}
	if len(rejected.Items) == 0 {
		t.Fatal("the unsigned delivery was not kept as rejected")
	}
	for _, r := range rejected.Items {
		var v admin.RejectedView
		if err := json.Unmarshal([]byte(read(fmt.Sprintf("/admin/rejected/%d", r.ID))), &v); err != nil {
			t.Fatal(err)
		}
		replies = append(replies, reply{fmt.Sprintf("rejected %d's body (Base64 in the reply)", r.ID), string(v.Body)})
	}
	var events struct {
		Items []admin.PaymentEventView `json:"items"`
	}
	if err := json.Unmarshal([]byte(read("/admin/payments/events")), &events); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		read(fmt.Sprintf("/admin/payments/events/%d", e.Seq))
	}
	cmds := [][]string{{"status"}, {"batches", "list"}, {"batches", "show", "b_tf"}, {"quarantine", "list"}, {"rejected", "list"}, {"payments", "list"}}
	for _, id := range quarantined {
		cmds = append(cmds, []string{"quarantine", "show", id})
	}
	for _, r := range rejected.Items {
		cmds = append(cmds, []string{"rejected", "show", fmt.Sprint(r.ID)})
	}
	for _, args := range cmds {
		out, errOut, _ := cli(t, d, "", args...)
		replies = append(replies, reply{"batchhook " + strings.Join(args, " "), out + errOut})
	}
	for _, r := range replies {
		if f := cpfLeak(r.text); f != "" {
			t.Errorf("%s gives %q back:\n%s", r.what, f, oneLine(r.text, 4000))
		}
	}
	for _, line := range strings.Split(d.out.String(), "\n") {
		if f := cpfLeak(line); f != "" {
			t.Errorf("a log line holds %q: %s", f, line)
		}
	}

	// A stranger's requests cost bounded log bytes: a hundred oversized
	// and forged requests, each with a CPF, write a few lines between them
	// (the sampler) and none of them long.
	before := len(d.out.String())
	for i := range 100 {
		if i%2 == 0 {
			rawPost(t, s.addr, e2ePath, "52998224725", "{}")
		} else {
			postUnsigned(t, s.addr, e2ePath, "529.982.247-25", []byte(`{"cpf":"52998224725"}`))
		}
	}
	if code, _ := get(t, d.admin+"/readyz", ""); code != 200 {
		t.Fatalf("readyz after the strangers: %d", code)
	}
	grown := d.out.String()[before:]
	t.Logf("100 strangers' requests: %d log bytes, %d lines", len(grown), strings.Count(grown, "\n"))
	if per := len(grown) / 100; per > 512 {
		t.Errorf("%d log bytes per stranger's request (%d in all), want at most 512:\n%s", per, len(grown), oneLine(grown, 2000))
	}
	for _, line := range strings.Split(grown, "\n") {
		if len(line) > 2048 {
			t.Errorf("a %d-byte line for a stranger's request: %.300s", len(line), line)
		}
		if f := cpfLeak(line); f != "" {
			t.Errorf("a log line holds %q: %s", f, line)
		}
	}
}

// postPaymentEvent sends a signed payments body with event as its
// X-Service-Event.
func postPaymentEvent(t *testing.T, addr string, body []byte, event string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/webhooks/payments", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(signature.Header, signature.Sign([]byte(e2ePaySecret), body))
	req.Header.Set("X-Service-Event", event)
	req.Header.Set("X-Service-Attempt", "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw
}
