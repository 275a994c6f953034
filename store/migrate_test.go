package store

import (
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestOpenBackfillsAbandonedBatchesIntoTheAwaitingIndex: a database written
// before the awaiting index listed abandoned batches has
// a batch abandoned before any notification and missing from the index.
// The next Open puts it back, once, so its late genuine webhook is queued;
// a batch abandoned after its notification stays known.
func TestOpenBackfillsAbandonedBatchesIntoTheAwaitingIndex(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.Track("gone", t0, t0)
	if err := s.AbandonAwaiting("gone", "retention elapsed", t0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Record(note("done", t0)); err != nil {
		t.Fatal(err)
	}
	if b, _, err := s.Lease(t0); err != nil || b == nil {
		t.Fatalf("Lease = %v, %v", b, err)
	}
	if err := s.Finish("done", StateAbandoned, "", "gone", 0, t0); err != nil {
		t.Fatal(err)
	}
	// What an earlier version left: no index entry, no marker.
	if err := s.db.Update(func(tx *bolt.Tx) error {
		aw := tx.Bucket(bucketAwaiting)
		if err := aw.Delete([]byte("gone")); err != nil {
			return err
		}
		return aw.Delete(awaitingBackfilled)
	}); err != nil {
		t.Fatal(err)
	}
	if known, _ := s.Known("gone"); !known {
		t.Fatal("setup: the index entry was not removed")
	}
	s.Close()

	s = openTest(t, dir)
	if known, err := s.Known("gone"); err != nil || known {
		t.Fatalf("after Open: Known(gone) = %v, %v; want false (a late webhook must be accepted)", known, err)
	}
	if known, _ := s.Known("done"); !known {
		t.Fatal("a batch abandoned after its notification is no longer known")
	}
	if created, err := s.Record(note("gone", t0)); err != nil || !created {
		t.Fatalf("late webhook = %v, %v; want accepted", created, err)
	}
}
