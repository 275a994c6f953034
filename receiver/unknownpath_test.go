package receiver

import (
	"encoding/json"
	"strings"
	"testing"
)

// A webhook sent to the wrong path leaves a trace: the not_found outcome
// and a webhook_unknown_path line naming the method, the path (CPF masked,
// query left out) and the sender. The right path is not counted as one.
func TestUnknownPathIsCountedAndLogged(t *testing.T) {
	e := start(t, nil)
	b := body("b_1", "completed")
	if r := e.post(t, "/webhooks/batch-complete/52998224725?token=s3cr3t", b, signed(b)); r.code != 404 || r.body["error"] != "not_found" {
		t.Fatalf("wrong path: %d %v, want 404 not_found", r.code, r.body)
	}
	if got := e.obs.count(outcomeNotFound); got != 1 {
		t.Fatalf("not_found counted %d times, want 1", got)
	}
	if r := e.post(t, testPath, b, signed(b)); r.code != 200 {
		t.Fatalf("right path: %d %v", r.code, r.body)
	}
	if got := e.obs.count(outcomeNotFound); got != 1 {
		t.Fatalf("after the right path not_found is %d, want still 1", got)
	}
	var line map[string]any
	for _, l := range strings.Split(strings.TrimSpace(e.logs.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["event"] == eventUnknownPath {
			if line != nil {
				t.Fatalf("two webhook_unknown_path lines:\n%s", e.logs.String())
			}
			line = m
		}
	}
	if line == nil {
		t.Fatalf("no webhook_unknown_path line in:\n%s", e.logs.String())
	}
	if line["method"] != "POST" || line["path"] != "/webhooks/batch-complete/***********" ||
		!strings.HasPrefix(line["remote_addr"].(string), "127.0.0.1:") || line["webhook_path"] != testPath {
		t.Fatalf("line %v: want method, masked path, sender and the served path", line)
	}
	if raw := e.logs.String(); strings.Contains(raw, "s3cr3t") || strings.Contains(raw, "52998224725") {
		t.Fatalf("query or CPF reached the log:\n%s", raw)
	}
}
