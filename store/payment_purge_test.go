package store

import (
	"fmt"
	"testing"
	"time"
)

var payT0 = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)

// logAt appends an event received at at with a body naming it.
func logAt(t *testing.T, s *Store, key string, at time.Time) uint64 {
	t.Helper()
	seq, created, err := s.RecordPayment(PaymentEvent{DedupKey: key, ReceivedAt: at, BodySHA256: "sum-" + key}, []byte(`{"k":"`+key+`"}`))
	if err != nil || !created {
		t.Fatalf("record %s: %v %v", key, created, err)
	}
	return seq
}

func hasBody(t *testing.T, s *Store, seq uint64) bool {
	t.Helper()
	b, err := s.PaymentBody(seq)
	if err != nil {
		t.Fatal(err)
	}
	return b != nil
}

func TestPurgePaymentBodiesKeepsTombstonesAndDedup(t *testing.T) {
	s := openTest(t, t.TempDir())
	for i := range 5 {
		logAt(t, s, fmt.Sprint("k", i), payT0.Add(time.Duration(i)*time.Hour))
	}
	now := payT0.Add(100 * time.Hour)
	// Due: the events received at or before t0+2h (seqs 1 to 3), two a call.
	n, more, held, err := s.PurgePaymentBodies(payT0.Add(2*time.Hour), 2, now)
	if err != nil || n != 2 || !more || held {
		t.Fatalf("first call: %d more=%v held=%v %v", n, more, held, err)
	}
	n, more, held, err = s.PurgePaymentBodies(payT0.Add(2*time.Hour), 2, now)
	if err != nil || n != 1 || more || held {
		t.Fatalf("second call: %d more=%v held=%v %v", n, more, held, err)
	}
	for seq := uint64(1); seq <= 5; seq++ {
		e, err := s.PaymentEvent(seq)
		if err != nil {
			t.Fatal(err)
		}
		dropped := seq <= 3
		if hasBody(t, s, seq) == dropped || e.BodyDroppedAt.IsZero() != !dropped {
			t.Errorf("seq %d: body kept %v, dropped at %v", seq, hasBody(t, s, seq), e.BodyDroppedAt)
		}
		if dropped && (!e.BodyDroppedAt.Equal(now) || e.BodySHA256 != fmt.Sprint("sum-k", seq-1) || e.DedupKey != fmt.Sprint("k", seq-1) || e.BodyLen == 0) {
			t.Errorf("seq %d tombstone = %+v", seq, e)
		}
	}
	// A replay of a purged event is still a duplicate.
	if seq, known, err := s.PaymentKnown("k0"); err != nil || !known || seq != 1 {
		t.Fatalf("purged k0 known = %d %v %v", seq, known, err)
	}
	if seq, created, _ := s.RecordPayment(PaymentEvent{DedupKey: "k0", ReceivedAt: now}, []byte("{}")); created || seq != 1 {
		t.Fatalf("replay of a purged event: seq %d created %v", seq, created)
	}
	// Nothing more due: nothing done.
	if n, more, _, err := s.PurgePaymentBodies(payT0.Add(2*time.Hour), 2, now); n != 0 || more || err != nil {
		t.Fatalf("third call: %d %v %v", n, more, err)
	}
}

func TestPurgePaymentBodiesKeepsWhatASinkStillOwes(t *testing.T) {
	s := openTest(t, t.TempDir())
	s.SetPaymentSinks([]string{"file", "http"})
	for i := range 4 {
		logAt(t, s, fmt.Sprint("k", i), payT0)
	}
	now := payT0.Add(time.Hour)
	if err := s.PaymentsDelivered("file", 4, now); err != nil {
		t.Fatal(err)
	}
	if err := s.PaymentsDelivered("http", 2, now); err != nil {
		t.Fatal(err)
	}
	n, more, held, err := s.PurgePaymentBodies(now, 500, now)
	if err != nil || n != 2 || more || !held {
		t.Fatalf("purge with http through 2: %d more=%v held=%v %v", n, more, held, err)
	}
	if hasBody(t, s, 2) || !hasBody(t, s, 3) || !hasBody(t, s, 4) {
		t.Fatal("purged a body the http sink has not handled, or kept one it has")
	}
	// A permanent failure also moves the cursor: the body may go.
	if err := s.FailPayment("http", 3, "rejected", "400", now); err != nil {
		t.Fatal(err)
	}
	if n, _, held, _ := s.PurgePaymentBodies(now, 500, now); n != 1 || !held || hasBody(t, s, 3) {
		t.Fatalf("after http failed 3: dropped %d held=%v", n, held)
	}
}

func TestPaymentDayPending(t *testing.T) {
	s := openTest(t, t.TempDir())
	day := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	logAt(t, s, "a", day.Add(10*time.Hour))
	logAt(t, s, "b", day.Add(23*time.Hour+59*time.Minute))
	logAt(t, s, "c", day.Add(24*time.Hour)) // the next day
	pending := func(sink string, from time.Time) bool {
		t.Helper()
		p, err := s.PaymentDayPending(sink, from, from.Add(24*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if pending("file", day) {
		t.Fatal("pending for a sink that is not a payment sink")
	}
	s.SetPaymentSinks([]string{"file"})
	if !pending("file", day) || !pending("file", day.Add(24*time.Hour)) {
		t.Fatal("nothing delivered yet, but no day pending")
	}
	if err := s.PaymentsDelivered("file", 1, day); err != nil {
		t.Fatal(err)
	}
	if !pending("file", day) {
		t.Fatal("event b of the day is not delivered, yet the day is not pending")
	}
	if err := s.PaymentsDelivered("file", 2, day); err != nil {
		t.Fatal(err)
	}
	if pending("file", day) || !pending("file", day.Add(24*time.Hour)) || pending("file", day.Add(-24*time.Hour)) {
		t.Fatal("wrong days pending after b was delivered")
	}
}
