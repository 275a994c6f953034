package store

import (
	"fmt"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// leasedIDs returns the ids the leased index holds.
func leasedIDs(t *testing.T, s *Store) []string {
	t.Helper()
	var ids []string
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketLeased).ForEach(func(k, _ []byte) error {
			ids = append(ids, string(k))
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// recordAndLease records the batches b1..bn and leases the first leased
// of them.
func recordAndLease(t *testing.T, s *Store, n, leased int) {
	t.Helper()
	for i := 1; i <= n; i++ {
		if _, err := s.Record(note(fmt.Sprintf("b%d", i), t0.Add(time.Duration(i)*time.Second))); err != nil {
			t.Fatal(err)
		}
	}
	for range leased {
		if b, _, err := s.Lease(t0.Add(time.Hour)); err != nil || b == nil {
			t.Fatalf("lease: %v %v", b, err)
		}
	}
}

// The leased index follows every move into and out of fetching, in the
// transaction that makes it.
func TestLeasedIndexFollowsFetching(t *testing.T) {
	s := openTest(t, t.TempDir())
	recordAndLease(t, s, 4, 3)
	if got := leasedIDs(t, s); !slices.Equal(got, []string{"b1", "b2", "b3"}) {
		t.Fatalf("leased index = %v, want b1 b2 b3", got)
	}
	if err := s.Retry("b1", t0.Add(2*time.Hour), "http", "HTTP 500", true, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.Finish("b2", StateExported, "/x/b2", "", 0, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got := leasedIDs(t, s); !slices.Equal(got, []string{"b3"}) {
		t.Fatalf("leased index = %v, want b3", got)
	}
	if n, err := s.ReleaseLeases(t0.Add(time.Hour)); err != nil || n != 1 {
		t.Fatalf("ReleaseLeases = %d, %v; want 1", n, err)
	}
	if got := leasedIDs(t, s); len(got) != 0 {
		t.Fatalf("leased index after release = %v, want empty", got)
	}
}

// A database written before the leased index (or by a version that did not
// keep it) gets it filled once at open, from every record, and says so;
// the next open reads no record.
func TestOpenFillsTheLeasedIndexOnce(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir)
	recordAndLease(t, s, 5, 2)
	// As an earlier version left it: no index, no marker.
	err := s.db.Update(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket(bucketLeased); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Delete(leasedIndexed)
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openTest(t, dir)
	if got := s.Backfills(); !slices.Equal(got, []Backfill{{Index: "leased", Records: 5}}) {
		t.Fatalf("Backfills = %+v, want the leased index filled from 5 records", got)
	}
	if got := leasedIDs(t, s); !slices.Equal(got, []string{"b1", "b2"}) {
		t.Fatalf("leased index = %v, want b1 b2", got)
	}
	s.Close()
	before := RecordsRead()
	s = openTest(t, dir)
	if got := s.Backfills(); len(got) != 0 {
		t.Fatalf("second open: Backfills = %+v, want none", got)
	}
	if n, err := s.ReleaseLeases(t0.Add(time.Hour)); err != nil || n != 2 {
		t.Fatalf("ReleaseLeases = %d, %v; want 2", n, err)
	}
	// Open's check and the release each read the two leased records.
	if read := RecordsRead() - before; read != 4 {
		t.Fatalf("open and release read %d records, want 4 (the two leased, twice)", read)
	}
}

// An earlier batchhook run on the database after this one leases batches
// without the index. The count of fetching batches then disagrees with the
// index, and open fills it again, so that no batch stays in fetching for
// ever; an entry whose batch that version moved on is dropped.
func TestOpenRefillsTheLeasedIndexWhenItMissesABatch(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir)
	recordAndLease(t, s, 4, 2)
	// The earlier version released b1 and b2 (the index still names them)
	// and leased b3 (the index does not).
	err := s.db.Update(func(tx *bolt.Tx) error {
		for _, id := range []string{"b1", "b2"} {
			b, err := getBatch(tx, id)
			if err != nil {
				return err
			}
			if err := setState(tx, b, StateQueued); err != nil {
				return err
			}
			if err := putBatch(tx, b); err != nil {
				return err
			}
		}
		b, err := getBatch(tx, "b3")
		if err != nil {
			return err
		}
		if err := setState(tx, b, StateFetching); err != nil {
			return err
		}
		if err := putBatch(tx, b); err != nil {
			return err
		}
		leased := tx.Bucket(bucketLeased)
		for _, id := range []string{"b1", "b2"} {
			if err := leased.Put([]byte(id), nil); err != nil {
				return err
			}
		}
		return leased.Delete([]byte("b3"))
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openTest(t, dir)
	if got := s.Backfills(); !slices.Equal(got, []Backfill{{Index: "leased", Records: 4}}) {
		t.Fatalf("Backfills = %+v, want the leased index filled again from 4 records", got)
	}
	if n, err := s.ReleaseLeases(t0.Add(time.Hour)); err != nil || n != 1 {
		t.Fatalf("ReleaseLeases = %d, %v; want 1 (b3)", n, err)
	}
	if b, _ := s.Get("b3"); b.State != StateQueued {
		t.Fatalf("b3 is %s, want queued", b.State)
	}
	counts, err := s.Counts()
	if err != nil || counts[StateFetching] != 0 || counts[StateQueued] != 4 {
		t.Fatalf("Counts = %v, %v; want 4 queued, none fetching", counts, err)
	}
}

// An index entry whose batch is no longer fetching (the count agreed, so
// open kept the index) is dropped by ReleaseLeases, not released.
func TestReleaseLeasesDropsAStaleEntry(t *testing.T) {
	s := openTest(t, t.TempDir())
	recordAndLease(t, s, 2, 1)
	err := s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketLeased).Put([]byte("b2"), nil) })
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.ReleaseLeases(t0.Add(time.Hour)); err != nil || n != 1 {
		t.Fatalf("ReleaseLeases = %d, %v; want 1 (b1)", n, err)
	}
	if got := leasedIDs(t, s); len(got) != 0 {
		t.Fatalf("leased index = %v, want empty", got)
	}
	if b, _ := s.Get("b2"); b.State != StateQueued || b.FetchAttempts != 0 {
		t.Fatalf("b2 = %+v, want queued as it was", b)
	}
}
