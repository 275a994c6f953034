package e2e

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/batchhook/batchhook/lookupsim"
)

// A correctly signed batch.completed with a status outside the four is
// quarantined, so its batch is never recorded or fetched: the daemon that
// did so is not healthy. On the real binary, GET /admin/status warns with
// the reason and where to look, batchhook status exits 1 with that
// warning, and batchhook_quarantined_total counts it for the alert.
func TestQuarantinedNotificationIsAStatusWarning(t *testing.T) {
	t.Parallel()
	s := newSetup(t, lookupsim.Options{})
	d := startDaemon(t, s.addr, s.env)
	if _, errOut, code := runCLI(t, d, waitBound, "status"); code != 0 {
		t.Fatalf("status of a fresh daemon: exit %d\n%s", code, errOut)
	}
	if code, _ := postSigned(t, s.addr, []byte(`{"event":"batch.completed","batch_id":"b_bogus","status":"bogus"}`), 1); code != 400 {
		t.Fatalf("bogus status: %d, want 400", code)
	}
	var v struct {
		Warnings []string `json:"warnings"`
	}
	var warning string
	waitFor(t, func() bool {
		_, body := get(t, d.admin+"/admin/status", "")
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			t.Fatalf("status: %v\n%s", err, body)
		}
		for _, w := range v.Warnings {
			if strings.Contains(w, "quarantined") {
				warning = w
			}
		}
		return warning != ""
	})
	for _, want := range []string{`status "bogus" is not one of`, "batchhook quarantine list", "GET /admin/quarantine", "console"} {
		if !strings.Contains(warning, want) {
			t.Errorf("the warning does not say %q: %s", want, warning)
		}
	}
	out, errOut, code := runCLI(t, d, waitBound, "status")
	if code != 1 || !regexpLine(out, `^  - 1 signed notification quarantined since start, the last \d+s ago`) ||
		!regexpLine(out, `^quarantined \(400\)\s+1 since start, last \d+s ago$`) {
		t.Fatalf("batchhook status after a quarantine: exit %d, want 1 with the warning\n%s%s", code, out, errOut)
	}
	_, metrics := get(t, d.admin+"/metrics", "")
	if !regexp.MustCompile(`(?m)^batchhook_quarantined_total\{product="batch"\} 1$`).MatchString(metrics) {
		t.Fatalf("no batchhook_quarantined_total{product=\"batch\"} 1 in the metrics:\n%s", grepLines(metrics, "quarantined"))
	}
}
