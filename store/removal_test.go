package store

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// withOldRemovalBuckets rewrites the database in dir as an earlier version
// left it: no file_removals bucket, and the removals it had recorded in
// export_removals (removes) and purge_files (purges).
func withOldRemovalBuckets(t *testing.T, dir string, removes, purges []string) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket(bucketFileRemovals); err != nil {
			return err
		}
		for _, old := range []struct {
			name []byte
			ids  []string
		}{{bucketExportRemovals, removes}, {bucketPurgeFiles, purges}} {
			b, err := tx.CreateBucket(old.name)
			if err != nil {
				return err
			}
			for _, id := range old.ids {
				if err := b.Put([]byte(id), nil); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func hasBucket(t *testing.T, dir string, name []byte) bool {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, FileName), 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var ok bool
	db.View(func(tx *bolt.Tx) error { ok = tx.Bucket(name) != nil; return nil })
	return ok
}

// A database an earlier version left with removals still to do in its two
// buckets opens with every one of them listed for the sweep (a batch in
// both as a purge, which deletes more), still holding off a refetch, and
// without the old buckets; once done, they stay done.
func TestRemovalsRecordedInTheOldBucketsAreStillCarriedOut(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir)
	for _, id := range []string{"a", "both", "p"} {
		exportBatch(t, s, id, t0)
	}
	s.Close()
	withOldRemovalBuckets(t, dir, []string{"a", "both"}, []string{"both", "p"})

	s = openTest(t, dir)
	rs, err := s.FileRemovals()
	want := []FileRemoval{{BatchID: "a"}, {BatchID: "both", Purge: true}, {BatchID: "p", Purge: true}}
	if err != nil || !slices.Equal(rs, want) {
		t.Fatalf("file removals after open = %v, %v; want %v", rs, err, want)
	}
	if _, err := s.Refetch("a", week, t0); !errors.Is(err, ErrState) || !strings.Contains(err.Error(), "export is being removed") {
		t.Fatalf("refetch during a removal = %v", err)
	}
	if _, err := s.Refetch("p", week, t0); !errors.Is(err, ErrState) || !strings.Contains(err.Error(), "purged export is being deleted") {
		t.Fatalf("refetch during a purge's deletion = %v", err)
	}
	for _, r := range rs {
		if err := s.FileRemovalDone(r); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	for _, name := range [][]byte{bucketExportRemovals, bucketPurgeFiles} {
		if hasBucket(t, dir, name) {
			t.Fatalf("bucket %s is still there after the migration", name)
		}
	}
	s = openTest(t, dir)
	if rs, err := s.FileRemovals(); err != nil || len(rs) != 0 {
		t.Fatalf("file removals after they were done and a reopen = %v, %v", rs, err)
	}
}

// A purge recorded while a removal of the same export runs is not cleared
// when that removal ends: the purge deletes more (the staging, a copy set
// aside), so it stays for the next sweep. A removal recorded after a purge
// leaves the purge.
func TestARemovalDoesNotClearALargerScope(t *testing.T) {
	s := openTest(t, t.TempDir())
	record := func(id string, purge bool) {
		t.Helper()
		if err := s.db.Update(func(tx *bolt.Tx) error { return recordFileRemoval(tx, id, purge) }); err != nil {
			t.Fatal(err)
		}
	}
	list := func() []FileRemoval {
		t.Helper()
		rs, err := s.FileRemovals()
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	record("x", false)
	record("x", true)
	if err := s.FileRemovalDone(FileRemoval{BatchID: "x"}); err != nil {
		t.Fatal(err)
	}
	if rs := list(); !slices.Equal(rs, []FileRemoval{{BatchID: "x", Purge: true}}) {
		t.Fatalf("after the removal's done: %v, want the purge kept", rs)
	}
	record("x", false)
	if rs := list(); !slices.Equal(rs, []FileRemoval{{BatchID: "x", Purge: true}}) {
		t.Fatalf("a removal recorded after a purge: %v, want the purge", rs)
	}
	if err := s.FileRemovalDone(FileRemoval{BatchID: "x", Purge: true}); err != nil {
		t.Fatal(err)
	}
	if rs := list(); len(rs) != 0 {
		t.Fatalf("after the purge's done: %v", rs)
	}
	// Done twice (a sweep racing the caller) is not an error.
	if err := s.FileRemovalDone(FileRemoval{BatchID: "x", Purge: true}); err != nil {
		t.Fatal(err)
	}
}

// A crash between the transaction that records a removal and the deletion
// of the files loses nothing: after a reopen both kinds are still listed,
// each with its scope, until their deletion is recorded done.
func TestRemovalsOutliveACrashBeforeTheFilesAreDeleted(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir)
	s.SetSinks([]string{"http"})
	exportBatch(t, s, "r1", t0)
	exportBatch(t, s, "p1", t0)
	d := deliveryOf(t, s, "r1", "http")
	if remove, err := s.Delivered("r1", "http", d.Generation, t0, true); err != nil || !remove {
		t.Fatalf("delivered = %v %v; want remove", remove, err)
	}
	d = deliveryOf(t, s, "p1", "http")
	if _, err := s.Delivered("p1", "http", d.Generation, t0, false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PurgeExport("p1", ExportPurge{ExportedAt: t0}, t0.Add(month)); err != nil {
		t.Fatal(err)
	}
	s.Close() // the crash: neither deletion happened nor was recorded

	s = openTest(t, dir)
	want := []FileRemoval{{BatchID: "p1", Purge: true}, {BatchID: "r1"}}
	if rs, err := s.FileRemovals(); err != nil || !slices.Equal(rs, want) {
		t.Fatalf("file removals after the reopen = %v, %v; want %v", rs, err, want)
	}
}
