package store

import (
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// OldestPendingByState has the recording time of the oldest batch of each
// state not final that holds one (q2, newer than q1, comes before tr2 in
// the walk and must not replace q1), and nothing for a state without any
// or a final one.
func TestOldestPendingByState(t *testing.T) {
	s := openTest(t, t.TempDir())
	if got, err := s.OldestPendingByState(); err != nil || len(got) != 0 {
		t.Fatalf("empty store: %v, %v; want an empty map", got, err)
	}
	at := func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
	for _, r := range []struct {
		id  string
		sec int
	}{{"f1", 0}, {"x1", 2}} {
		if _, err := s.Record(note(r.id, at(r.sec))); err != nil {
			t.Fatal(err)
		}
	}
	if b, _, _ := s.Lease(at(2)); b == nil || b.ID != "f1" {
		t.Fatalf("leased %v, want f1", b)
	}
	if b, _, _ := s.Lease(at(2)); b == nil || b.ID != "x1" {
		t.Fatalf("leased %v, want x1", b)
	}
	if err := s.Finish("x1", StateExported, "/x/x1", "", 0, at(2)); err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		id  string
		sec int
	}{{"q1", 3}, {"q2", 4}} {
		if _, err := s.Record(note(r.id, at(r.sec))); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := s.Track("tr2", at(60), at(5)); err != nil {
		t.Fatal(err)
	}
	want := map[State]time.Time{StateFetching: at(0), StateQueued: at(3), StateTracked: at(5)}
	check := func(when string) {
		t.Helper()
		got, err := s.OldestPendingByState()
		if err != nil || len(got) != len(want) {
			t.Fatalf("%s: OldestPendingByState = %v, %v; want %v", when, got, err, want)
		}
		for st, w := range want {
			if !got[st].Equal(w) {
				t.Fatalf("%s: oldest %s = %v, want %v (all: %v)", when, st, got[st], w, got)
			}
		}
	}
	check("f1 fetching, q1 and q2 queued, tr2 tracked, x1 exported")

	// Once every state has its time the walk stops: an entry past them
	// that cannot be read is never reached.
	err := s.db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketPending).Put(timeKey(at(30), "unreadable"), nil); err != nil {
			return err
		}
		return tx.Bucket(bucketBatches).Put([]byte("unreadable"), []byte("short"))
	})
	if err != nil {
		t.Fatal(err)
	}
	check("with an unreadable entry after the last state's oldest")

	// f1 exported: fetching has no batch left and is absent.
	if err := s.Finish("f1", StateExported, "/x/f1", "", 0, at(6)); err != nil {
		t.Fatal(err)
	}
	delete(want, StateFetching)
	check("f1 exported")
}
