package sink

import (
	"encoding/json"
	"errors"
	"os"
	"testing"
	"time"
)

// TestPaymentLine pins the line object against a body with spacing, a
// line break and escapes, whose digest openssl computed (testdata/README).
func TestPaymentLine(t *testing.T) {
	raw, err := os.ReadFile("testdata/payment_body.json")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 23, 21, 30, 0, 123000000, time.FixedZone("BRT", -3*3600))
	line, err := PaymentLine(42, at, "transaction.paid", 3, raw)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"seq":42,"received_at":"2026-11-24T00:30:00.123Z","event":"transaction.paid","attempt":3,` +
		`"body_sha256":"bd4f231ab2778a48cb720c0f5431e04801fe84ba95242003c6f7f917d92267ff",` +
		`"body":{"transaction":{"id":"9f0c1e2a","status":"paid","amount":"10.50","note":"a\u00e9 <b>"}}}`
	if string(line) != want {
		t.Fatalf("line\n%s\nwant\n%s", line, want)
	}
	if !json.Valid(line) {
		t.Fatal("the line is not valid JSON")
	}
	// An event name is a JSON string, whatever it holds.
	line, err = PaymentLine(1, at, "x\"\n", 1, []byte(`{}`))
	if err != nil || string(line) != `{"seq":1,"received_at":"2026-11-24T00:30:00.123Z","event":"x\"\n","attempt":1,`+
		`"body_sha256":"44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","body":{}}` {
		t.Fatalf("line %s %v", line, err)
	}
	for _, bad := range []string{"", "{", "{} {}", "not json"} {
		if _, err := PaymentLine(1, at, "e", 1, []byte(bad)); !errors.Is(err, ErrPaymentBody) {
			t.Errorf("body %q: %v", bad, err)
		}
	}
}
