package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/batchhook/batchhook/admin"
)

// TestPrintErasurePaymentSinks: the erasure itself removes a payment
// event's line from the file sink's day files, so the file sink is reported
// as done; only the other sinks are left for the operator to erase.
func TestPrintErasurePaymentSinks(t *testing.T) {
	var r admin.ErasureView
	raw := `{"id":"e1","state":"done","touched":true,"payments":[
		{"seq":1,"sinks":["file"]},
		{"seq":2,"sinks":["file","http"]},
		{"seq":3,"sinks":[]}]}`
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := printErasure(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	lines := map[uint64]string{}
	for _, l := range strings.Split(out, "\n") {
		for _, seq := range []uint64{1, 2, 3} {
			if strings.Contains(l, "event "+string(rune('0'+seq))+":") {
				lines[seq] = l
			}
		}
	}
	if l := lines[1]; !strings.Contains(l, "removed from EXPORT_DIR/payments") || strings.Contains(l, "erase there too") {
		t.Errorf("file-only event: %q\n%s", l, out)
	}
	if l := lines[2]; !strings.Contains(l, "removed from EXPORT_DIR/payments") || !strings.Contains(l, "already received by http: erase there too") || strings.Contains(l, "file:") || strings.Contains(l, "file,") {
		t.Errorf("file+http event: %q\n%s", l, out)
	}
	if l := lines[3]; strings.Contains(l, "EXPORT_DIR") || strings.Contains(l, "erase there too") {
		t.Errorf("undelivered event: %q\n%s", l, out)
	}
}
