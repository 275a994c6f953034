package store

import (
	"errors"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestBulkLoadLeavesWhatThePipelineLeaves: a batch loaded as exported has
// the counts and indexes of one recorded, leased and finished by the
// daemon's own methods; a loaded tombstone is purged and no purge pass
// finds it again; a record or dedup key loaded twice fails the load.
func TestBulkLoadLeavesWhatThePipelineLeaves(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	live := openTest(t, t.TempDir())
	if _, err := live.Record(Notification{Event: "batch.completed", BatchID: "b_live", Status: "completed", ReceivedAt: t0, Source: SourceWebhook}); err != nil {
		t.Fatal(err)
	}
	if b, _, err := live.Lease(t0); err != nil || b == nil {
		t.Fatalf("lease: %v %v", b, err)
	}
	if err := live.Finish("b_live", StateExported, "/x/b_live", "", 0, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}

	s := openTest(t, t.TempDir())
	n := Notification{Event: "batch.completed", BatchID: "b_load", Status: "completed", ReceivedAt: t0, Source: SourceWebhook, Raw: []byte(`{"a":1}`)}
	reduced := Batch{ID: "b_old", State: StatePurged, Notification: Notification{Event: "batch.completed", BatchID: "b_old", ReceivedAt: t0.Add(-time.Hour)},
		CreatedAt: t0.Add(-time.Hour), FinishedAt: t0.Add(-time.Hour), Tombstone: &Tombstone{PurgedAt: t0, RecordPurgedAt: t0}}
	err := s.BulkLoad(func(l *Loader) error {
		if err := l.Positions([]string{"b_old", "b_load"}); err != nil {
			return err
		}
		if err := l.AddBatch(reduced); err != nil {
			return err
		}
		if err := l.AddBatch(Batch{ID: "b_load", State: StateExported, Notification: n, CreatedAt: t0, FinishedAt: t0.Add(time.Minute)}); err != nil {
			return err
		}
		return l.AddPayment(PaymentEvent{ReceivedAt: t0, Event: "transaction.paid", DedupKey: "k1"}, []byte(`{}`))
	})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := live.Counts()
	want[StatePurged] = 1
	got, _ := s.Counts()
	for _, st := range States {
		if got[st] != want[st] {
			t.Errorf("%s: %d, want %d", st, got[st], want[st])
		}
	}
	if _, ok, _ := s.OldestPending(); ok {
		t.Error("a pending entry is left")
	}
	// The by-state index holds each batch once, in its last state: its
	// counts equal the batch counts, so List by state trusts it.
	err = s.db.View(func(tx *bolt.Tx) error {
		if !stateIndexed(tx) {
			return errors.New("the by-state index is not trusted after the load")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if list, _, err := s.List(StateQueued, 10, ""); err != nil || len(list) != 0 {
		t.Fatalf("List(queued) after the load: %d batches, %v", len(list), err)
	}
	for _, st := range []*Store{live, s} {
		c, _, err := st.ExportPurgeCandidates(t0.Add(time.Hour), "", 10)
		if err != nil || len(c) != 1 || c[0].State != StateExported {
			t.Fatalf("export purge candidates: %v %v", c, err)
		}
	}
	if n, _, err := s.PurgeRecords(t0.Add(time.Hour), "", 10, t0.Add(time.Hour)); err != nil || n != 1 {
		t.Fatalf("PurgeRecords reduced %d (%v), want only b_load", n, err)
	}
	if known, err := s.Known("b_old"); err != nil || !known {
		t.Fatalf("a loaded tombstone is not known: %v %v", known, err)
	}
	if seq, ok, err := s.PaymentKnown("k1"); err != nil || !ok || seq != 1 {
		t.Fatalf("dedup key: %d %v %v", seq, ok, err)
	}
	if err := s.BulkLoad(func(l *Loader) error { return l.AddBatch(reduced) }); !errors.Is(err, ErrExists) {
		t.Fatalf("a batch loaded twice: %v", err)
	}
	err = s.BulkLoad(func(l *Loader) error { return l.AddPayment(PaymentEvent{ReceivedAt: t0, DedupKey: "k1"}, nil) })
	if !errors.Is(err, ErrExists) {
		t.Fatalf("a dedup key loaded twice: %v", err)
	}
}

// BulkLoad moves each batch through its states in one transaction: the
// by-state index must still hold it once, under its last state, and be
// complete, so that a built database needs no backfill at its first start.
func TestBulkLoadLeavesTheStateIndexComplete(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	s := openTest(t, t.TempDir())
	ids := []string{"b_exported", "b_purged", "b_queued"}
	err := s.BulkLoad(func(l *Loader) error {
		if err := l.Positions(ids); err != nil {
			return err
		}
		for i, st := range []State{StateExported, StatePurged, StateQueued} {
			at := t0.Add(time.Duration(i) * time.Minute)
			b := Batch{ID: ids[i], State: st, CreatedAt: at, FinishedAt: at,
				Notification: Notification{Event: "batch.completed", BatchID: ids[i], Status: "completed", ReceivedAt: at, Source: SourceWebhook}}
			if st == StateQueued {
				b.FinishedAt = time.Time{}
			}
			if st == StatePurged {
				b.Tombstone = &Tombstone{PurgedAt: at}
			}
			if err := l.AddBatch(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := s.StateIndexComplete(); err != nil || !ok {
		t.Fatalf("state index complete = %v %v, want true", ok, err)
	}
	for i, st := range []State{StateExported, StatePurged, StateQueued} {
		got, _, err := s.List(st, 10, "")
		if err != nil || len(got) != 1 || got[0].ID != ids[i] {
			t.Fatalf("list %s = %v %v, want %s alone", st, got, err, ids[i])
		}
	}
	if got, _, _ := s.List(StateFetching, 10, ""); len(got) != 0 {
		t.Fatalf("list fetching = %v, want none", got)
	}
}
