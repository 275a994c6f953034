package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// A commit under way (made through bbolt directly, marking what it writes
// as the store's writes do, so the store has not seen it return) wrote
// b_new and payment k-new. Lookups of records that were durable before
// answer at once: they depend on no commit under way. Lookups of what it
// wrote wait for it, here past their deadline (ErrSlowCommit), and answer
// "known" once it has returned.
func TestLookupWaitsOnlyForTheCommitThatWroteIt(t *testing.T) {
	s := openTest(t, t.TempDir())
	if _, err := s.Record(note("b_durable", t0)); err != nil {
		t.Fatal(err)
	}
	recordPay(t, s, "k-durable", "{}")
	if err := s.Quarantine(Quarantined{ID: "q-durable", Reason: "not JSON", ReceivedAt: t0}); err != nil {
		t.Fatal(err)
	}
	var id int
	if err := s.db.DB.Update(func(tx *bolt.Tx) error {
		id = tx.ID()
		s.db.mark(tx, lookupKey(bucketBatches, "b_new"))
		if _, err := recordTx(tx, note("b_new", t0)); err != nil {
			return err
		}
		s.db.mark(tx, lookupKey(bucketPaymentDedup, "k-new"))
		return tx.Bucket(bucketPaymentDedup).Put([]byte("k-new"), seqKey(99))
	}); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if known, err := s.KnownContext(ctx, "b_durable"); err != nil || !known {
		t.Fatalf("Known of a durable batch while another commit syncs: %v, %v", known, err)
	}
	if seq, known, err := s.PaymentKnownContext(ctx, "k-durable"); err != nil || !known || seq != 1 {
		t.Fatalf("PaymentKnown of a durable event while another commit syncs: %d %v %v", seq, known, err)
	}
	if err := s.QuarantineContext(ctx, Quarantined{ID: "q-durable", Reason: "not JSON", ReceivedAt: t0}); err != nil {
		t.Fatalf("Quarantine of an entry kept before, while another commit syncs: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the lookups of durable records waited for the commit under way")
	}

	short, cancelShort := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancelShort()
	if known, err := s.KnownContext(short, "b_new"); !errors.Is(err, ErrSlowCommit) {
		t.Fatalf("Known of the batch the commit under way wrote = %v, %v; want ErrSlowCommit", known, err)
	}
	if _, known, err := s.PaymentKnownContext(short, "k-new"); !errors.Is(err, ErrSlowCommit) {
		t.Fatalf("PaymentKnown of the event the commit under way wrote = %v, %v; want ErrSlowCommit", known, err)
	}

	s.db.committed(id, true)
	s.db.unmark()
	if known, err := s.KnownContext(context.Background(), "b_new"); err != nil || !known {
		t.Fatalf("Known once the commit returned: %v, %v", known, err)
	}
	if seq, known, err := s.PaymentKnownContext(context.Background(), "k-new"); err != nil || !known || seq != 99 {
		t.Fatalf("PaymentKnown once the commit returned: %d %v %v", seq, known, err)
	}
}

// eventually waits up to 10 s for cond, checking every 10 ms.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The disk is slow: the commit under way holds the write lock (the test
// takes it, as a commit whose fdatasync takes seconds would). A webhook's
// write with a deadline answers ErrSlowCommit by its deadline instead of
// waiting; its commit goes on once the lock is free, and a retry then finds
// the record.
func TestSlowCommitAnswersByTheDeadlineAndGoesOn(t *testing.T) {
	s := openTest(t, t.TempDir())
	s.db.writeMu.Lock()
	locked := true
	defer func() {
		if locked {
			s.db.writeMu.Unlock()
		}
	}()
	const budget = 200 * time.Millisecond
	within := func(what string, call func(ctx context.Context) error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), budget)
		defer cancel()
		start := time.Now()
		err := call(ctx)
		if !errors.Is(err, ErrSlowCommit) {
			t.Fatalf("%s behind a slow commit = %v, want ErrSlowCommit", what, err)
		}
		if took := time.Since(start); took > budget+2*time.Second {
			t.Fatalf("%s answered after %s, its deadline was %s", what, took, budget)
		}
	}
	within("RecordPayment", func(ctx context.Context) error {
		_, _, err := s.RecordPaymentContext(ctx, PaymentEvent{DedupKey: "k-slow", Event: "transaction.paid"}, []byte(`{"a":1}`))
		return err
	})
	within("Record", func(ctx context.Context) error {
		_, err := s.RecordContext(ctx, note("b_slow", t0))
		return err
	})
	within("Quarantine", func(ctx context.Context) error {
		return s.QuarantineContext(ctx, Quarantined{ID: "q-slow", Reason: "not JSON", ReceivedAt: t0})
	})
	s.db.writeMu.Unlock()
	locked = false

	eventually(t, "the payment event logged", func() bool {
		_, known, err := s.PaymentKnown("k-slow")
		return err == nil && known
	})
	eventually(t, "the batch recorded", func() bool {
		known, err := s.Known("b_slow")
		return err == nil && known
	})
	eventually(t, "the quarantine entry kept", func() bool {
		_, err := s.GetQuarantined("q-slow")
		return err == nil
	})
	seq, created, err := s.RecordPayment(PaymentEvent{DedupKey: "k-slow", Event: "transaction.paid"}, []byte(`{"a":1}`))
	if err != nil || created || seq != 1 {
		t.Fatalf("the sender's retry: seq %d created %v %v; want the event logged once, as 1", seq, created, err)
	}
	if body, err := s.PaymentBody(1); err != nil || string(body) != `{"a":1}` {
		t.Fatalf("body of the event committed after its caller left: %q %v", body, err)
	}
}

// Payment events that queue while a commit runs share the next one (the
// group commit): each gets its own seq, and a key sent twice is logged once.
func TestPaymentEventsShareCommits(t *testing.T) {
	s := openTest(t, t.TempDir())
	const n = 20
	s.db.mu.Lock()
	before := s.db.durable
	s.db.mu.Unlock()
	// The test holds the write lock, as a long commit would, while the
	// events queue; the writer takes some and waits for the lock.
	s.db.writeMu.Lock()
	dones := make([]chan writeRes, n+1)
	for i := range dones {
		key := fmt.Sprintf("k%d", i%n) // the last one repeats k0
		dones[i] = make(chan writeRes, 1)
		s.records <- writeReq{apply: s.appendPayment(PaymentEvent{DedupKey: key}, []byte("{}")), what: key, done: dones[i]}
	}
	s.db.writeMu.Unlock()
	seqs := map[uint64]bool{}
	created := 0
	for _, done := range dones {
		r := <-done
		if r.err != nil {
			t.Fatal(r.err)
		}
		seqs[r.seq] = true
		if r.created {
			created++
		}
	}
	if created != n || len(seqs) != n {
		t.Fatalf("%d created, %d seqs, want %d each (the repeated key logged once)", created, len(seqs), n)
	}
	s.db.mu.Lock()
	commits := s.db.durable - before
	s.db.mu.Unlock()
	if commits > 2 {
		t.Errorf("%d events took %d commits; those that queued behind a commit should share the next", n+1, commits)
	}
}
