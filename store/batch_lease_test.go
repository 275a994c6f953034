package store

import (
	"errors"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

const week = 168 * time.Hour

// At start a fetching batch always goes back to queued, even one the
// pending index lost.
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

func TestRetryKindNowMovesOnlyThatKind(t *testing.T) {
	s := openTest(t, t.TempDir())
	for _, id := range []string{"auth1", "auth2", "other"} {
		s.Record(note(id, t0))
		s.Lease(t0)
	}
	s.Retry("auth1", t0.Add(time.Hour), "auth", "401", true, t0)
	s.Retry("auth2", t0.Add(time.Hour), "auth", "403", true, t0)
	s.Retry("other", t0.Add(time.Hour), "transient", "500", true, t0)
	n, err := s.RetryKindNow("auth", t0)
	if err != nil || n != 2 {
		t.Fatalf("RetryKindNow = %d, %v", n, err)
	}
	leased := map[string]bool{}
	for {
		b, _, _ := s.Lease(t0)
		if b == nil {
			break
		}
		leased[b.ID] = true
	}
	if !leased["auth1"] || !leased["auth2"] || leased["other"] {
		t.Fatalf("leased %v", leased)
	}
}

func TestLeaseOrderDueTimesAndTransitions(t *testing.T) {
	s := openTest(t, t.TempDir())
	for i, id := range []string{"b2", "b1", "b3"} {
		if _, err := s.Record(note(id, t0.Add(time.Duration(i)*time.Second))); err != nil {
			t.Fatal(err)
		}
	}
	// Only b2 is due at t0.
	b, next, err := s.Lease(t0)
	if err != nil || b == nil || b.ID != "b2" || b.State != StateFetching {
		t.Fatalf("Lease(t0) = %+v, %v", b, err)
	}
	b, next, err = s.Lease(t0)
	if err != nil || b != nil || !next.Equal(t0.Add(time.Second)) {
		t.Fatalf("Lease(t0) again = %+v, next %v, %v; want nothing until t0+1s", b, next, err)
	}
	// A leased batch is not leased twice.
	got := map[string]bool{}
	for {
		b, _, err := s.Lease(t0.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if b == nil {
			break
		}
		if got[b.ID] {
			t.Fatalf("%s leased twice", b.ID)
		}
		got[b.ID] = true
	}
	if len(got) != 2 || !got["b1"] || !got["b3"] {
		t.Fatalf("leased %v, want b1 and b3", got)
	}
	if _, next, _ := s.Lease(t0.Add(time.Hour)); !next.IsZero() {
		t.Fatalf("next = %v with nothing queued", next)
	}

	cp := Checkpoint{Cursor: "c2", StagedBytes: 120, Items: 10, Pages: 1}
	if err := s.Checkpoint("b2", cp, t0); err != nil {
		t.Fatal(err)
	}
	if err := s.Retry("b2", t0.Add(time.Minute), "transient", "HTTP 500", true, t0); err != nil {
		t.Fatal(err)
	}
	b, _ = s.Get("b2")
	if b.State != StateQueued || b.FetchAttempts != 1 || b.LastError != "HTTP 500" || b.Checkpoint != cp {
		t.Fatalf("after Retry: %+v", b)
	}
	if err := s.Checkpoint("b2", cp, t0); !errors.Is(err, ErrState) {
		t.Fatalf("Checkpoint on a queued batch = %v, want ErrState", err)
	}
	if b, _, _ := s.Lease(t0.Add(59 * time.Second)); b != nil {
		t.Fatalf("b2 leased before its retry time")
	}
	b, _, _ = s.Lease(t0.Add(time.Minute))
	if b == nil || b.ID != "b2" || b.Checkpoint != cp {
		t.Fatalf("Lease at retry time = %+v", b)
	}
	if err := s.Finish("b2", StateExported, "/x/b2", "", 0, t0); err != nil {
		t.Fatal(err)
	}
	if err := s.Finish("b2", StateAbandoned, "", "late", 0, t0); !errors.Is(err, ErrState) {
		t.Fatalf("Finish on an exported batch = %v, want ErrState", err)
	}
	if err := s.Finish("b1", StateQueued, "", "", 0, t0); !errors.Is(err, ErrState) {
		t.Fatalf("Finish to a non-final state = %v, want ErrState", err)
	}
	counts, err := s.Counts()
	if err != nil || counts[StateExported] != 1 || counts[StateFetching] != 2 {
		t.Fatalf("Counts = %v, %v", counts, err)
	}
}

func TestReleaseLeasesKeepsCheckpoint(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Record(note("b1", t0)); err != nil {
		t.Fatal(err)
	}
	if b, _, _ := s.Lease(t0); b == nil {
		t.Fatal("nothing leased")
	}
	cp := Checkpoint{Cursor: "c3", StagedBytes: 300, Items: 20, Pages: 2}
	if err := s.Checkpoint("b1", cp, t0); err != nil {
		t.Fatal(err)
	}
	s.Close() // a crash leaves b1 in fetching
	s = openTest(t, dir)
	n, err := s.ReleaseLeases(t0.Add(time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("ReleaseLeases = %d, %v", n, err)
	}
	b, _, err := s.Lease(t0.Add(time.Hour))
	if err != nil || b == nil || b.Checkpoint != cp {
		t.Fatalf("lease after release = %+v, %v; want checkpoint %+v", b, err, cp)
	}
	if n, _ := s.ReleaseLeases(t0); n != 1 {
		t.Fatalf("second ReleaseLeases = %d, want 1 (b1 is fetching again)", n)
	}
}

func TestLeaseSkipsADueEntryWithoutARecord(t *testing.T) {
	s := openTest(t, t.TempDir())
	if _, err := s.Record(note("b1", t0)); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketDue).Put(dueKey(t0.Add(-time.Second), "ghost"), nil)
	}); err != nil {
		t.Fatal(err)
	}
	b, _, err := s.Lease(t0)
	if err != nil || b == nil || b.ID != "b1" {
		t.Fatalf("Lease = %+v, %v; want b1 past the stale entry", b, err)
	}
}
