package store

import (
	"testing"
	"time"
)

// A purged batch refetched (within the provider's 7 days), exported again
// and purged again must carry the second purge's date in its tombstone:
// purged_at is when the export now gone was deleted.
func TestAPurgedBatchRefetchedAndPurgedAgainHasTheNewPurgeDate(t *testing.T) {
	s := openTest(t, t.TempDir())
	exportWithCheckpoint(t, s, "b1", t0)
	first := t0.Add(time.Hour)
	if _, err := s.PurgeExport("b1", ExportPurge{ExportedAt: t0, ManifestSHA256: "old", ManifestItems: 3}, first); err != nil {
		t.Fatal(err)
	}
	if err := s.FileRemovalDone(FileRemoval{BatchID: "b1", Purge: true}); err != nil {
		t.Fatal(err)
	}
	at := t0.Add(2 * time.Hour)
	if _, err := s.Refetch("b1", 7*24*time.Hour, at); err != nil {
		t.Fatal(err)
	}
	if b, _, err := s.Lease(at); err != nil || b == nil || b.ID != "b1" {
		t.Fatalf("lease b1: %v %v", b, err)
	}
	if err := s.Checkpoint("b1", Checkpoint{Items: 2, Pages: 1, Done: true}, at); err != nil {
		t.Fatal(err)
	}
	if err := s.Finish("b1", StateExported, "/x/b1", "", 0, at); err != nil {
		t.Fatal(err)
	}
	second := t0.Add(3 * time.Hour)
	if _, err := s.PurgeExport("b1", ExportPurge{ExportedAt: at, ManifestSHA256: "new", ManifestItems: 2}, second); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Get("b1")
	if ts := got.Tombstone; ts == nil || !ts.PurgedAt.Equal(second) || !ts.ExportPurgedAt.Equal(second) || ts.ManifestSHA256 != "new" {
		t.Fatalf("tombstone after the second purge = %+v; want purged_at %s", ts, second)
	}
}
