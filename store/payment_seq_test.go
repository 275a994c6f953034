package store

import (
	"errors"
	"testing"
	"time"
)

// TestRaisePaymentSeqLeavesAGapTheOutboxCrosses: after RaisePaymentSeq the
// next event is numbered above the floor; a sink that had the whole log
// jumps to the floor, and one still behind delivers its real events and
// then takes the event after the gap as its head (retry, fail, deliver),
// none refused as "not the head".
func TestRaisePaymentSeqLeavesAGapTheOutboxCrosses(t *testing.T) {
	s := openTest(t, t.TempDir())
	s.SetPaymentSinks([]string{"file", "http"})
	at := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for _, k := range []string{"a", "b", "c"} {
		recordPay(t, s, k, `{"k":"`+k+`"}`)
	}
	if err := s.PaymentsDelivered("file", 3, at); err != nil {
		t.Fatal(err)
	}
	if err := s.PaymentsDelivered("http", 1, at); err != nil {
		t.Fatal(err)
	}
	if before, raised, err := s.RaisePaymentSeq(2, at); err != nil || raised || before != 3 {
		t.Fatalf("raise below the log = %d %v %v; want nothing done", before, raised, err)
	}
	before, raised, err := s.RaisePaymentSeq(10, at)
	if err != nil || !raised || before != 3 {
		t.Fatalf("raise = %d %v %v", before, raised, err)
	}
	seq, _ := recordPay(t, s, "d", `{"k":"d"}`)
	if seq != 11 {
		t.Fatalf("the event after the raise is %d; want 11", seq)
	}
	if c, _ := s.PaymentCursor("file"); c.Through != 10 {
		t.Fatalf("file (had everything) is through %d; want 10", c.Through)
	}
	if c, _ := s.PaymentCursor("http"); c.Through != 1 {
		t.Fatalf("http (behind) is through %d; want 1, its events 2 and 3 still owed", c.Through)
	}
	if n, _, err := s.PaymentBacklog("file"); err != nil || n != 1 {
		t.Fatalf("file backlog = %d %v; want 1", n, err)
	}
	if err := s.PaymentsDelivered("http", 3, at); err != nil {
		t.Fatal(err)
	}
	if n, _, err := s.PaymentBacklog("http"); err != nil || n != 1 {
		t.Fatalf("http backlog past the gap = %d %v; want 1", n, err)
	}
	if err := s.RetryPayment("http", 11, at.Add(time.Minute), "http", "503", true); err != nil {
		t.Fatalf("retry of the head after the gap: %v", err)
	}
	ds, err := s.PaymentDeliveries(11)
	if err != nil || len(ds) != 2 || ds[1].State != DeliveryPending || ds[1].Attempts != 1 {
		t.Fatalf("deliveries of 11 = %+v %v; want http pending with its attempt", ds, err)
	}
	if err := s.RetryPayment("http", 12, at, "http", "x", true); !errors.Is(err, ErrNotFound) {
		t.Fatalf("retry of an unknown event = %v", err)
	}
	if err := s.FailPayment("http", 11, "http", "410", at); err != nil {
		t.Fatalf("fail of the head after the gap: %v", err)
	}
	if err := s.PaymentsDelivered("file", 11, at); err != nil {
		t.Fatal(err)
	}
	// The sequence goes on from there.
	recordPay(t, s, "e", `{"k":"e"}`)
	if last, _ := s.LastPaymentSeq(); last != 12 {
		t.Fatalf("last = %d; want 12", last)
	}
}
