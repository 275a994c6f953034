package cli

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/admin"
	"github.com/batchhook/batchhook/store"
)

// paymentsAdmin serves the real admin API over a real store, with the
// payment log wired as the daemon wires it.
func paymentsAdmin(t *testing.T, enabled bool) (string, *store.Store) {
	t.Helper()
	t.Setenv("BATCHHOOK_ADMIN_TOKEN", "")
	os.Unsetenv("BATCHHOOK_ADMIN_TOKEN")
	st := openStore(t)
	return serveAdmin(t, st, "", func(o *admin.Options) { o.Payments, o.PaymentsEnabled = st, enabled }), st
}

func TestPaymentsCommands(t *testing.T) {
	base, st := paymentsAdmin(t, true)
	st.SetPaymentSinks([]string{"file", "kafka"})
	at := time.Date(2026, 11, 24, 9, 30, 0, 0, time.UTC)
	for i, key := range []string{`fields:["t1","paid","u"]`, "sha256:abc", "k3"} {
		if _, _, err := st.RecordPayment(store.PaymentEvent{ReceivedAt: at.Add(time.Duration(i) * time.Minute), Event: "transaction.paid",
			Attempt: i + 1, DedupKey: key, BodySHA256: "sum"}, []byte(`{"transaction":{"first_name":"Maria"}}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.PaymentsDelivered("file", 1, at); err != nil {
		t.Fatal(err)
	}
	if err := st.RetryPayment("kafka", 1, at.Add(time.Hour), "transient", "broker down", true); err != nil {
		t.Fatal(err)
	}

	out, errOut, code := runIn(t, paymentsCmd, "list", "--limit", "2", "--admin", base)
	if code != 0 || !regexpLine(out, `^SEQ\s+RECEIVED\s+EVENT`) || !regexpLine(out, `^1\s+2026-11-24T09:30:00Z\s+transaction.paid\s+1\s+38 bytes\s+fields:\["t1","paid","u"\]`) ||
		!regexpLine(out, `^2\s+.*sha256:abc`) || strings.Contains(out, "\n3 ") || !strings.Contains(out, "more: --since 2") {
		t.Fatalf("list = %d\n%s%s", code, out, errOut)
	}
	if strings.Contains(out, "Maria") {
		t.Fatal("list shows a body")
	}
	out, _, code = runIn(t, paymentsCmd, "list", "--since", "2", "--admin", base)
	if code != 0 || !regexpLine(out, `^3\s+`) || regexpLine(out, `^[12]\s+`) || strings.Contains(out, "more:") {
		t.Fatalf("list --since 2 = %d\n%s", code, out)
	}
	out, _, code = runIn(t, paymentsCmd, "list", "--json", "--admin", base)
	var page struct {
		Items []struct {
			Seq uint64 `json:"seq"`
		} `json:"items"`
		Enabled bool `json:"payments_enabled"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &page) != nil || len(page.Items) != 3 || !page.Enabled {
		t.Fatalf("list --json = %d\n%s", code, out)
	}
	out, errOut, code = runIn(t, paymentsCmd, "show", "1", "--admin", base)
	if code != 0 || !regexpLine(out, `^dedup key:\s+fields:\["t1","paid","u"\]`) || !regexpLine(out, `^file\s+delivered\s+-\s*$`) ||
		!regexpLine(out, `^kafka\s+pending\s+1\s+broker down`) {
		t.Fatalf("show 1 = %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code = runIn(t, paymentsCmd, "show", "9", "--admin", base); code != 1 || !strings.Contains(errOut, "404") {
		t.Fatalf("show unknown = %d %s", code, errOut)
	}
	if _, _, code = runIn(t, paymentsCmd, "show", "x", "--admin", base); code != 2 {
		t.Fatalf("show x = %d, want 2", code)
	}
	if _, errOut, code = runIn(t, paymentsCmd, "list", "--limit", "0", "--admin", base); code != 1 || !strings.Contains(errOut, "limit") {
		t.Fatalf("list --limit 0 = %d %s", code, errOut)
	}
	if out, _, code = runIn(t, paymentsCmd, "--help"); code != 0 || !strings.Contains(out, "batchhook payments list") {
		t.Fatalf("--help = %d %s", code, out)
	}
	if _, _, code = runIn(t, paymentsCmd); code != 2 {
		t.Fatalf("no arguments = %d", code)
	}
}

func TestPaymentsListSaysWhenPaymentsAreOff(t *testing.T) {
	base, st := paymentsAdmin(t, false)
	if err := st.Quarantine(store.Quarantined{ID: "q1", Reason: "body is not a JSON object", ReceivedAt: time.Now(),
		Raw: []byte(`["Maria"]`), Product: store.ProductPayments}); err != nil {
		t.Fatal(err)
	}
	out, _, code := runIn(t, paymentsCmd, "list", "--admin", base)
	if code != 0 || !strings.HasPrefix(out, "payments are off") {
		t.Fatalf("list while off = %d\n%s", code, out)
	}
	out, _, code = runIn(t, quarantineCmd, "list", "--admin", base)
	if code != 0 || !regexpLine(out, `^q1\s+payments\s+`) {
		t.Fatalf("quarantine list = %d\n%s", code, out)
	}
	out, _, code = runIn(t, quarantineCmd, "show", "q1", "--admin", base)
	if code != 0 || !regexpLine(out, `^product:\s+payments`) || strings.Contains(out, "Maria") {
		t.Fatalf("quarantine show = %d\n%s", code, out)
	}
}
