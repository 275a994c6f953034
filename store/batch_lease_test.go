package store

import (
	"errors"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

const week = 168 * time.Hour

// Issue 10 item 2: once the provider no longer keeps a batch's results, a
// refetch could only fail; it is refused with the reason.
func TestRefetchRefusedPastRetention(t *testing.T) {
	s := openTest(t, t.TempDir())
	completed := t0.Add(-time.Hour)
	n := note("b1", t0)
	n.CompletedAt = &completed
	if _, err := s.Record(n); err != nil {
		t.Fatal(err)
	}
	b, _, _ := s.Lease(t0)
	if err := s.Finish(b.ID, StateExported, "/x/b1", "", 0, t0); err != nil {
		t.Fatal(err)
	}
	late := completed.Add(week + time.Second)
	_, err := s.Refetch("b1", week, late)
	if !errors.Is(err, ErrState) || !strings.Contains(err.Error(), "no longer keeps its results") {
		t.Fatalf("refetch past retention = %v, want ErrState with the reason", err)
	}
	if b, _ := s.Get("b1"); b.State != StateExported || b.ExportPath != "/x/b1" || b.Refetch {
		t.Fatalf("a refused refetch changed the record: %+v", b)
	}
	if _, err := s.Refetch("b1", week, completed.Add(week-time.Second)); err != nil {
		t.Fatalf("refetch within retention: %v", err)
	}
}

// Issue 10 item 5: at start a fetching batch always goes back to queued,
// even one the pending index lost.
func TestReleaseLeasesFindsABatchMissingFromThePendingIndex(t *testing.T) {
	s := openTest(t, t.TempDir())
	for _, id := range []string{"b1", "b2", "b3"} {
		if _, err := s.Record(note(id, t0)); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if b, _, err := s.Lease(t0); err != nil || b == nil {
			t.Fatalf("lease: %v %v", b, err)
		}
	}
	// b1 is fetching but its pending entry is gone.
	err := s.db.Update(func(tx *bolt.Tx) error {
		b, err := getBatch(tx, "b1")
		if err != nil {
			return err
		}
		return tx.Bucket(bucketPending).Delete(timeKey(b.CreatedAt, b.ID))
	})
	if err != nil {
		t.Fatal(err)
	}
	n, err := s.ReleaseLeases(t0.Add(time.Minute))
	if err != nil || n != 2 {
		t.Fatalf("ReleaseLeases = %d, %v; want 2", n, err)
	}
	leased := map[string]bool{}
	for {
		b, _, err := s.Lease(t0.Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if b == nil {
			break
		}
		leased[b.ID] = true
	}
	if !leased["b1"] || !leased["b2"] || !leased["b3"] {
		t.Fatalf("leased after release: %v, want b1, b2 and b3", leased)
	}
	if at, ok, _ := s.OldestPending(); !ok || !at.Equal(t0) {
		t.Fatalf("b1 is not back in the pending index: %v %v", at, ok)
	}
}

// Restart records the failure, counts it, and resets the checkpoint in one
// transaction.
func TestRestartResetsTheCheckpointAndCountsTheAttempt(t *testing.T) {
	s := openTest(t, t.TempDir())
	if _, err := s.Record(note("b1", t0)); err != nil {
		t.Fatal(err)
	}
	s.Lease(t0)
	if err := s.Checkpoint("b1", Checkpoint{Cursor: "c2", StagedBytes: 40, Items: 4, Pages: 2, Seen: "0011223344556677"}, t0); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 2; i++ {
		at := t0.Add(time.Duration(i) * time.Minute)
		if err := s.Restart("b1", at, "protocol", "cursor cycle", t0); err != nil {
			t.Fatal(err)
		}
		b, _ := s.Get("b1")
		if b.State != StateQueued || b.Checkpoint != (Checkpoint{}) || b.FetchAttempts != i || b.ErrorKind != "protocol" ||
			b.LastError != "cursor cycle" || !b.NextAttemptAt.Equal(at) {
			t.Fatalf("after restart %d: %+v", i, b)
		}
		if b, _, _ := s.Lease(at); b == nil {
			t.Fatal("the restarted batch is not due")
		}
	}
}
