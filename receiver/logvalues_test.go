package receiver

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// leaksCPF reports whether text holds the test CPF in any of the forms
// the requests below send it in (or its first nine digits, which give the
// rest away).
func leaksCPF(text string) bool {
	for _, form := range []string{"529982247", "529.982.247", "529 982 247"} {
		if strings.Contains(text, form) {
			return true
		}
	}
	return false
}

// Every value a sender chooses that reaches a log
// line (a batch_id, a status or key in a refusal reason, an event name,
// the X-Service-Event header, Content-Encoding) comes out without the CPF
// it held and at a bounded length; a batch_id that is a CPF is refused and
// neither kept with the quarantine entry nor logged.
func TestNetworkValuesReachLogsScrubbedAndBounded(t *testing.T) {
	e := startPayments(t, true, nil)
	long := strings.Repeat("x", 3000) // under the body cap (4 KiB) and the header limit
	batch := []struct {
		name string
		body string
		hdr  map[string]string
		code int
	}{
		{"a batch_id that is a CPF", `{"event":"batch.completed","batch_id":"52998224725","status":"completed","total_requested":1,"total_found":1,"total_not_found":0}`, nil, 400},
		{"a punctuated one", `{"event":"batch.completed","batch_id":"529.982.247-25","status":"completed","total_requested":1,"total_found":1,"total_not_found":0}`, nil, 400},
		{"a status that is a CPF", `{"event":"batch.completed","batch_id":"b_ok1","status":"529 982 247 25","total_requested":1,"total_found":1,"total_not_found":0}`, nil, 400},
		{"a repeated key that is a CPF", `{"event":"batch.completed","batch_id":"b_ok2","52998224725":1,"52998224725":2}`, nil, 400},
		{"an event name with a CPF", `{"event":"cpf 529.982.247-25 ` + long + `","batch_id":"b_ok3"}`, nil, 200},
		{"a Content-Encoding with a CPF", `{"event":"batch.completed"}`, map[string]string{"Content-Encoding": "52998224725" + long}, 415},
	}
	for _, c := range batch {
		b := []byte(c.body)
		h := signed(b)
		for k, v := range c.hdr {
			h[k] = v
		}
		if r := e.post(t, testPath, b, h); r.code != c.code {
			t.Fatalf("%s: %d, want %d", c.name, r.code, c.code)
		}
	}
	for _, b := range [][]byte{[]byte(batch[0].body), []byte(batch[1].body)} {
		sum := sha256.Sum256(b)
		q, err := e.store.GetQuarantined(hex.EncodeToString(sum[:]))
		if err != nil {
			t.Fatalf("a batch_id that is a CPF was not quarantined: %v", err)
		}
		if q.BatchID != "" || !strings.Contains(q.Reason, "is a valid CPF") || leaksCPF(q.Reason) {
			t.Fatalf("quarantine entry batch_id %q, reason %q: want no batch_id and a reason naming the rule without the value", q.BatchID, q.Reason)
		}
	}
	pay := []byte(`{"transaction":{"id":"t-1"},"amount":1}`)
	h := paySigned(t, pay, "1")
	h["X-Service-Event"] = "cpf 529.982.247-25 " + long
	if r := e.pay(t, pay, h); r.code != 200 {
		t.Fatalf("payment: %d %s", r.code, r.errMsg)
	}

	logs := e.logs.String()
	if leaksCPF(logs) {
		t.Fatalf("a CPF a sender chose reached the log:\n%s", logs)
	}
	lines := strings.Split(strings.TrimSpace(logs), "\n")
	if len(lines) < len(batch)+1 {
		t.Fatalf("%d log lines for %d requests:\n%s", len(lines), len(batch)+1, logs)
	}
	for _, l := range lines {
		if len(l) > 2048 {
			t.Fatalf("a %d-byte log line for a request that sent %d-byte values: %.300s…", len(l), len(long), l)
		}
	}
	if !strings.Contains(logs, `"webhook_event":"cpf ***`) || !strings.Contains(logs, "bytes)") {
		t.Fatalf("the event header is not logged masked and cut:\n%s", logs)
	}
}
