package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/lookupsim"
)

// A submitted or tracked batch, whose notification has
// not come, never shows received_at as 0001-01-01: the CLI table shows "-",
// show has a submitted/tracked row instead, the JSON omits the field.
func TestSubmittedAndTrackedBatchesShowNoZeroReceivedTime(t *testing.T) {
	t.Parallel()
	s := newSetup(t, lookupsim.Options{ProcessingDelay: time.Hour})
	d := startDaemon(t, s.addr, s.env)
	if out, errOut, code := cli(t, d, "", "track", "b_elsewhere1"); code != 0 {
		t.Fatalf("track: %d %s %s", code, out, errOut)
	}
	file := writeTemp(t, strings.Join(lookupsim.SampleCPFs(3, 5), "\n")+"\n")
	out, errOut, code := cli(t, d, "", "submit", file)
	if code != 0 {
		t.Fatalf("submit: %d %s %s", code, out, errOut)
	}
	submitted := strings.TrimSpace(out)
	if !strings.HasPrefix(submitted, "b_") {
		t.Fatalf("submit printed %q, want the batch id", out)
	}
	out, _, code = cli(t, d, "", "batches", "list")
	if code != 0 || !strings.Contains(out, "b_elsewhere1") || !strings.Contains(out, submitted) || strings.Contains(out, "0001-01-01") {
		t.Fatalf("batches list: %d\n%s", code, out)
	}
	for id, label := range map[string]string{"b_elsewhere1": "tracked", submitted: "submitted"} {
		out, _, code = cli(t, d, "", "batches", "show", id)
		if code != 0 || strings.Contains(out, "0001-01-01") || strings.Contains(out, "received") || !strings.Contains(out, label+":") {
			t.Fatalf("batches show %s: %d\n%s", id, code, out)
		}
		out, _, code = cli(t, d, "", "batches", "show", id, "--json")
		var v map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &v) != nil {
			t.Fatalf("batches show --json: %d %s", code, out)
		}
		if _, has := v["received_at"]; has || v["submitted_at"] == nil {
			t.Fatalf("%s JSON: received_at %v, submitted_at %v; want none and a time", id, v["received_at"], v["submitted_at"])
		}
	}
}
