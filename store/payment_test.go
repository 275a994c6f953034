package store

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

func recordPay(t *testing.T, s *Store, key string, body string) (uint64, bool) {
	t.Helper()
	seq, created, err := s.RecordPayment(PaymentEvent{DedupKey: key, Event: "transaction.paid", Attempt: 1,
		ReceivedAt: time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)}, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return seq, created
}

func TestPaymentLogNumbersInOrderAndDeduplicates(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir)
	s.SetPaymentSinks([]string{"file"})
	wake := s.PaymentWakeups("file")
	raw := "{\"a\": 1,\n \"b\":\"x\"}  "
	if seq, created := recordPay(t, s, "k1", raw); seq != 1 || !created {
		t.Fatalf("first event: seq %d created %v, want 1 true", seq, created)
	}
	select {
	case <-wake:
	default:
		t.Fatal("no wakeup after an appended event")
	}
	if seq, created := recordPay(t, s, "k2", "{}"); seq != 2 || !created {
		t.Fatalf("second event: seq %d created %v, want 2 true", seq, created)
	}
	if seq, created := recordPay(t, s, "k1", "{\"other\":true}"); seq != 1 || created {
		t.Fatalf("replayed key: seq %d created %v, want 1 false", seq, created)
	}
	if seq, ok, err := s.PaymentKnown("k2"); err != nil || !ok || seq != 2 {
		t.Fatalf("PaymentKnown(k2) = %d %v %v", seq, ok, err)
	}
	if _, ok, err := s.PaymentKnown("k3"); err != nil || ok {
		t.Fatalf("PaymentKnown(k3) = %v %v, want unknown", ok, err)
	}
	s.Close()
	s = openTest(t, dir)
	body, err := s.PaymentBody(1)
	if err != nil || !bytes.Equal(body, []byte(raw)) {
		t.Fatalf("body after reopen = %q %v, want the bytes as given", body, err)
	}
	evs, err := s.PaymentEvents(1, 10)
	if err != nil || len(evs) != 1 || evs[0].Seq != 2 || evs[0].BodyLen != 2 {
		t.Fatalf("PaymentEvents(since 1) = %+v %v", evs, err)
	}
	if last, err := s.LastPaymentSeq(); err != nil || last != 2 {
		t.Fatalf("LastPaymentSeq = %d %v", last, err)
	}
	if _, err := s.PaymentBody(9); !errors.Is(err, ErrNotFound) {
		t.Fatalf("PaymentBody(9) err = %v, want ErrNotFound", err)
	}
}

func TestPaymentOutboxCursor(t *testing.T) {
	s := openTest(t, t.TempDir())
	s.SetPaymentSinks([]string{"file", "http"})
	for i, k := range []string{"a", "b", "c"} {
		recordPay(t, s, k, `{"n":`+string(rune('1'+i))+`}`)
	}
	now := time.Date(2026, 11, 24, 13, 0, 0, 0, time.UTC)
	recs, _, err := s.NextPayments("http", now, 2)
	if err != nil || len(recs) != 2 || recs[0].Seq != 1 || string(recs[1].Body) != `{"n":2}` {
		t.Fatalf("NextPayments = %+v %v", recs, err)
	}
	// A transient failure holds the head and everything after it.
	if err := s.RetryPayment("http", 1, now.Add(time.Minute), "status", "HTTP 503", true); err != nil {
		t.Fatal(err)
	}
	if recs, next, _ := s.NextPayments("http", now, 2); len(recs) != 0 || !next.Equal(now.Add(time.Minute)) {
		t.Fatalf("during backoff: %d events, next %v", len(recs), next)
	}
	if err := s.RetryPayment("http", 2, now, "", "", true); !errors.Is(err, ErrState) {
		t.Fatalf("retry of a non-head event: %v, want ErrState", err)
	}
	// A permanent failure is recorded and passed.
	if err := s.FailPayment("http", 1, "status", "HTTP 400", now); err != nil {
		t.Fatal(err)
	}
	if err := s.PaymentsDelivered("http", 3, now); err != nil {
		t.Fatal(err)
	}
	if err := s.PaymentsDelivered("http", 2, now); !errors.Is(err, ErrState) {
		t.Fatalf("going back: %v, want ErrState", err)
	}
	if err := s.PaymentsDelivered("file", 1, now); err != nil {
		t.Fatal(err)
	}
	want := map[uint64][2]DeliveryState{
		1: {DeliveryDelivered, DeliveryFailed},
		2: {DeliveryPending, DeliveryDelivered},
		3: {DeliveryPending, DeliveryDelivered},
	}
	for seq, w := range want {
		ds, err := s.PaymentDeliveries(seq)
		if err != nil || len(ds) != 2 || ds[0].State != w[0] || ds[1].State != w[1] {
			t.Fatalf("deliveries of %d = %+v %v, want file %s http %s", seq, ds, err, w[0], w[1])
		}
	}
	if ds, _ := s.PaymentDeliveries(1); ds[1].Attempts != 2 || ds[1].LastError != "HTTP 400" {
		t.Fatalf("failed delivery = %+v, want 2 attempts and the reason", ds[1])
	}
	if n, oldest, err := s.PaymentBacklog("file"); err != nil || n != 2 || oldest.IsZero() {
		t.Fatalf("file backlog = %d %v %v, want 2 with a time", n, oldest, err)
	}
	if n, _, _ := s.PaymentBacklog("http"); n != 0 {
		t.Fatalf("http backlog = %d, want 0", n)
	}
	if fs, err := s.PaymentFailures(""); err != nil || len(fs) != 1 || fs[0].Seq != 1 {
		t.Fatalf("failures = %+v %v", fs, err)
	}
}
