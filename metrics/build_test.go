package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/internal/buildinfo"
	"github.com/batchhook/batchhook/store"
)

func TestBuildInfoSeries(t *testing.T) {
	st, err := store.Open(t.TempDir(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m := New(st, time.Now)
	m.BuildInfo(buildinfo.Info{Version: "v1.2.3", Commit: "abc123", Go: "go1.99"})
	want := `batchhook_build_info{commit="abc123",go="go1.99",version="v1.2.3"} 1` + "\n"
	if text := scrape(t, m); !strings.Contains(text, want) {
		t.Fatalf("want %q in\n%s", want, text)
	}
}

// The last-accepted gauge starts at the daemon's start (so a dead man's
// switch counts from there), moves on an accepted webhook only, and has a
// payments series only once the payments webhook is served.
func TestLastAcceptedGauge(t *testing.T) {
	st, err := store.Open(t.TempDir(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Unix(1700000000, 0)
	m := New(st, func() time.Time { return now })
	pay := m.Payments([]string{"accepted"})
	batch := `batchhook_last_accepted_timestamp_seconds{product="batch"} `
	payments := `batchhook_last_accepted_timestamp_seconds{product="payments"} `
	text := scrape(t, m)
	if !strings.Contains(text, batch+"1.7e+09\n") || strings.Contains(text, payments) {
		t.Fatalf("at start: want the batch series at the start and no payments series in\n%s", text)
	}
	if _, ok := m.LastAccepted(ProductBatch); ok {
		t.Fatal("LastAccepted says one was accepted before any was")
	}
	now = now.Add(90 * time.Second)
	m.WebhookHandled("duplicate", time.Millisecond)
	m.WebhookHandled(OutcomeNotFound, 0)
	if text := scrape(t, m); !strings.Contains(text, batch+"1.7e+09\n") {
		t.Fatalf("a duplicate or a wrong path moved the gauge:\n%s", text)
	}
	m.WebhookHandled("accepted", time.Millisecond)
	pay.Served()
	if text := scrape(t, m); !strings.Contains(text, batch+"1.70000009e+09\n") || !strings.Contains(text, payments+"1.7e+09\n") {
		t.Fatalf("after an accepted batch webhook: want batch at +90 s and payments at the start in\n%s", text)
	}
	now = now.Add(10 * time.Second)
	pay.PaymentHandled("accepted", 0)
	if text := scrape(t, m); !strings.Contains(text, payments+"1.7000001e+09\n") {
		t.Fatalf("after an accepted payment event: want payments at +100 s in\n%s", text)
	}
	if at, ok := m.LastAccepted(ProductPayments); !ok || !at.Equal(now) {
		t.Fatalf("LastAccepted(payments) = %v %v, want %v", at, ok, now)
	}
	// not_found is counted, never timed.
	if text := scrape(t, m); !strings.Contains(text, `batchhook_webhook_requests_total{outcome="not_found"} 1`) ||
		!strings.Contains(text, "batchhook_webhook_ack_seconds_count 2\n") {
		t.Fatalf("want not_found counted once and 2 timed replies in\n%s", text)
	}
	if n := m.NotFound().Count; n != 1 {
		t.Fatalf("NotFoundRequests = %d, want 1 as the series says", n)
	}
}

// The status summary warns of recent refusals and unknown paths only, so
// the metrics keep the time of the last of each beside the count: a 401
// of either webhook counts once, a not_found or any other outcome not at
// all as a refusal.
func TestLastRefusedAndNotFound(t *testing.T) {
	st, err := store.Open(t.TempDir(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	start := time.Unix(1700000000, 0)
	now := start
	m := New(st, func() time.Time { return now })
	pay := m.Payments([]string{"accepted", "unauthorized"})
	if (m.NotFound() != Seen{}) || (m.Unauthorized() != Seen{}) {
		t.Fatalf("at start: not found %+v, unauthorized %+v; want both zero", m.NotFound(), m.Unauthorized())
	}
	now = start.Add(time.Minute)
	m.WebhookHandled(OutcomeNotFound, 0)
	m.WebhookHandled(OutcomeUnauthorized, time.Millisecond)
	now = start.Add(2 * time.Minute)
	m.WebhookHandled("accepted", time.Millisecond)
	m.WebhookHandled("invalid", time.Millisecond)
	pay.PaymentHandled("accepted", 0)
	if got := m.NotFound(); got.Count != 1 || !got.Last.Equal(start.Add(time.Minute)) {
		t.Fatalf("NotFound = %+v, want 1 at +1m", got)
	}
	if got := m.Unauthorized(); got.Count != 1 || !got.Last.Equal(start.Add(time.Minute)) {
		t.Fatalf("Unauthorized = %+v, want 1 at +1m (accepted and invalid are no refusals)", got)
	}
	now = start.Add(3 * time.Minute)
	pay.PaymentHandled(OutcomeUnauthorized, 0)
	if got := m.Unauthorized(); got.Count != 2 || !got.Last.Equal(now) {
		t.Fatalf("Unauthorized after a payments 401 = %+v, want 2 at +3m", got)
	}
	if n := m.NotFound().Count; n != 1 {
		t.Fatalf("NotFoundRequests = %d, want 1", n)
	}
	text := scrape(t, m)
	for _, want := range []string{`batchhook_webhook_requests_total{outcome="unauthorized"} 1`, `batchhook_payment_events_total{outcome="unauthorized"} 1`} {
		if !strings.Contains(text, want) {
			t.Fatalf("want %q in\n%s", want, text)
		}
	}
}
