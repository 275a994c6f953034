package store

import (
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

const month = 720 * time.Hour

// exportWithCheckpoint records, leases, checkpoints (with a cursor) and
// exports batch id at at.
func exportWithCheckpoint(t *testing.T, s *Store, id string, at time.Time) {
	t.Helper()
	if _, err := s.Record(note(id, at)); err != nil {
		t.Fatal(err)
	}
	if b, _, err := s.Lease(at); err != nil || b == nil || b.ID != id {
		t.Fatalf("lease %s: %v %v", id, b, err)
	}
	if err := s.Checkpoint(id, Checkpoint{Cursor: "c2", Seen: "00aa11bb", Items: 3, Pages: 1, StagedBytes: 30, Done: true}, at); err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(id, StateExported, "/x/"+id, "", 0, at); err != nil {
		t.Fatal(err)
	}
}

func candidateIDs(t *testing.T, s *Store, before time.Time) []string {
	t.Helper()
	bs, _, err := s.ExportPurgeCandidates(before, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, b := range bs {
		ids = append(ids, b.ID)
	}
	return ids
}

func TestPurgeIndexIsBackfilledForAnOlderDatabase(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir)
	exportWithCheckpoint(t, s, "b1", t0)
	// Play a database written before the purge indexes existed.
	err := s.db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketPurgeExports, bucketPurgeRecords} {
			if err := tx.DeleteBucket(name); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketMeta).Delete(purgeIndexBackfilled)
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openTest(t, dir)
	if got := candidateIDs(t, s, t0.Add(time.Hour)); strings.Join(got, ",") != "b1" {
		t.Fatalf("candidates after reopen = %v, want b1", got)
	}
	if n, _, err := s.PurgeRecords(t0.Add(time.Hour), "", 10, t0.Add(2*time.Hour)); err != nil || n != 1 {
		t.Fatalf("records after reopen = %d %v, want 1", n, err)
	}
}
