package metrics

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/store"
)

func TestPaymentDeliveryMetrics(t *testing.T) {
	st, err := store.Open(t.TempDir(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	st.SetPaymentSinks([]string{"file", "http"})
	t0 := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	now := t0.Add(90 * time.Second)
	m := New(st, func() time.Time { return now })
	p := m.PaymentDeliveries(st, []string{"file", "http"})
	text := scrape(t, m)
	for _, want := range []string{
		`batchhook_payment_deliveries_total{outcome="failed",sink="file"} 0`,
		`batchhook_payment_deliveries_total{outcome="delivered",sink="http"} 0`,
		`batchhook_payment_backlog{sink="file"} 0`,
		`batchhook_payment_oldest_pending_seconds{sink="http"} 0`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("scrape lacks %q", want)
		}
	}
	for i := range 3 {
		if _, _, err := st.RecordPayment(store.PaymentEvent{ReceivedAt: t0.Add(time.Duration(i) * 30 * time.Second),
			Event: "e", Attempt: 1, DedupKey: fmt.Sprint(i)}, []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.PaymentsDelivered("file", 2, now); err != nil {
		t.Fatal(err)
	}
	p.PaymentOutcome("file", "delivered", 2)
	p.PaymentOutcome("http", "retry", 1)
	text = scrape(t, m)
	for _, want := range []string{
		`batchhook_payment_deliveries_total{outcome="delivered",sink="file"} 2`,
		`batchhook_payment_deliveries_total{outcome="retry",sink="http"} 1`,
		`batchhook_payment_backlog{sink="file"} 1`,
		`batchhook_payment_backlog{sink="http"} 3`,
		`batchhook_payment_oldest_pending_seconds{sink="file"} 30`,
		`batchhook_payment_oldest_pending_seconds{sink="http"} 90`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("scrape lacks %q", want)
		}
	}
}
