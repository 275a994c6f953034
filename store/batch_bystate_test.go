package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// listAll pages through List(state) with limit and returns the ids in the
// order listed.
func listAll(t *testing.T, s *Store, state State, limit int) []string {
	t.Helper()
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		batches, next, err := s.List(state, limit, cursor)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range batches {
			got = append(got, b.ID)
		}
		if next == "" {
			return got
		}
		if pages > 10000 {
			t.Fatal("cursor never ends")
		}
		cursor = next
	}
}

// dropStateIndex makes s's database look as an older binary left it: no
// by-state index and no mark that it is complete.
func dropStateIndex(t *testing.T, s *Store) {
	t.Helper()
	err := s.db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketByState, bucketByStateCounts} {
			if tx.Bucket(name) != nil {
				if err := tx.DeleteBucket(name); err != nil {
					return err
				}
			}
		}
		return tx.Bucket(bucketMeta).Delete(byStateDone)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A list by state gives the same batches, in the same order (newest
// first), whether it reads the records or the by-state index; the index
// is filled for older records by the backfill, kept by every state change
// after it, and not trusted once its counts differ from the batches'.
func TestListByStateThroughTheIndex(t *testing.T) {
	s := openTest(t, t.TempDir())
	const n = 4500 // more than two backfill chunks
	for i := 0; i < n; i++ {
		if _, err := s.Record(note(fmt.Sprintf("b%05d", i), t0.Add(time.Duration(i)*time.Second))); err != nil {
			t.Fatal(err)
		}
	}
	// Every third of the oldest 300 is exported.
	for i := 0; i < 300; i++ {
		b, _, err := s.Lease(t0.Add(time.Hour * 24 * 365))
		if err != nil || b == nil {
			t.Fatalf("lease %d: %v %v", i, b, err)
		}
		to := StateQueued
		if i%3 == 0 {
			to = StateExported
		}
		if to == StateExported {
			err = s.Finish(b.ID, StateExported, "/x", "", 0, t0)
		} else {
			err = s.Retry(b.ID, t0, "transient", "test", false, t0)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	want := map[State][]string{}
	dropStateIndex(t, s) // as an older binary left the database
	if done, _ := s.StateIndexComplete(); done {
		t.Fatal("the index is complete without a backfill")
	}
	for _, st := range []State{StateQueued, StateExported, StateFetching} {
		want[st] = listAll(t, s, st, 97) // through the records
	}
	if len(want[StateExported]) != 100 || len(want[StateQueued]) != n-100 || len(want[StateFetching]) != 0 {
		t.Fatalf("through the records: %d exported, %d queued, %d fetching", len(want[StateExported]), len(want[StateQueued]), len(want[StateFetching]))
	}
	// One chunk, then a stop: the index is not used half-built.
	if err := s.db.Update(func(tx *bolt.Tx) error { _, _, err := backfillByStateChunk(tx); return err }); err != nil {
		t.Fatal(err)
	}
	if done, _ := s.StateIndexComplete(); done {
		t.Fatal("complete after one chunk of three")
	}
	read, err := s.BackfillStateIndex(context.Background())
	if err != nil || read != n-byStateChunk {
		t.Fatalf("backfill read %d records (%v), want the %d the first chunk left", read, err, n-byStateChunk)
	}
	if done, _ := s.StateIndexComplete(); !done {
		t.Fatal("not complete after the backfill")
	}
	for st, ids := range want {
		if got := listAll(t, s, st, 97); !slices.Equal(got, ids) {
			t.Fatalf("%s through the index: %d ids, want %d (first %v, want %v)", st, len(got), len(ids), head(got), head(ids))
		}
	}
	// A state change after the backfill is indexed with it.
	b, _, err := s.Lease(t0.Add(time.Hour * 24 * 365))
	if err != nil || b == nil {
		t.Fatal(err)
	}
	if got := listAll(t, s, StateFetching, 10); !slices.Equal(got, []string{b.ID}) {
		t.Fatalf("fetching = %v, want [%s]", got, b.ID)
	}
	if got := listAll(t, s, StateQueued, 1000); slices.Contains(got, b.ID) || len(got) != n-101 {
		t.Fatalf("queued still lists the leased %s (%d listed)", b.ID, len(got))
	}
	// An older binary adds a batch without indexing it: the counts differ,
	// List reads the records (and finds it), the backfill rebuilds.
	if _, err := s.Record(note("zz-new", t0.Add(time.Duration(n)*time.Second))); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Update(func(tx *bolt.Tx) error {
		return unindexByState(tx.Bucket(bucketByState), tx.Bucket(bucketByStateCounts), byStateKey(StateQueued, t0.Add(time.Duration(n)*time.Second), "zz-new"), StateQueued)
	}); err != nil {
		t.Fatal(err)
	}
	if done, _ := s.StateIndexComplete(); done {
		t.Fatal("an index missing a batch is trusted")
	}
	if got := listAll(t, s, StateQueued, 1); len(got) == 0 || got[0] != "zz-new" {
		t.Fatalf("queued, newest first = %v, want zz-new first", head(got))
	}
	if _, err := s.BackfillStateIndex(context.Background()); err != nil {
		t.Fatal(err)
	}
	if done, _ := s.StateIndexComplete(); !done {
		t.Fatal("not complete after the rebuild")
	}
	if got := listAll(t, s, StateQueued, 500); len(got) != n-100 || got[0] != "zz-new" {
		t.Fatalf("queued after the rebuild: %d, first %v", len(got), head(got))
	}
	// Cursors of one kind are refused by the other.
	_, next, err := s.List(StateQueued, 2, "")
	if err != nil || next == "" {
		t.Fatal(next, err)
	}
	if _, _, err := s.List("", 2, next); !errors.Is(err, ErrBadCursor) {
		t.Fatalf("a by-state cursor on the whole list: %v", err)
	}
	_, next, _ = s.List("", 2, "")
	if _, _, err := s.List(StateQueued, 2, next); !errors.Is(err, ErrBadCursor) {
		t.Fatalf("a records cursor on a list by state: %v", err)
	}
}

func head(ids []string) []string {
	if len(ids) > 3 {
		return ids[:3]
	}
	return ids
}

// On a new database the backfill has nothing to read and marks the index
// complete at once.
func TestStateIndexOfANewDatabase(t *testing.T) {
	s := openTest(t, t.TempDir())
	if _, err := s.Record(note("b1", t0)); err != nil {
		t.Fatal(err)
	}
	if done, _ := s.StateIndexComplete(); !done {
		t.Fatal("a new database's index is not complete")
	}
	if n, err := s.BackfillStateIndex(context.Background()); n != 0 || err != nil {
		t.Fatalf("backfill of a new store: read %d records (%v), want none", n, err)
	}
	if got := listAll(t, s, StateQueued, 10); !slices.Equal(got, []string{"b1"}) {
		t.Fatalf("queued = %v", got)
	}
}
