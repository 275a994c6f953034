package store

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestRefetchOnlyFinalBatches(t *testing.T) {
	s := openTest(t, t.TempDir())
	if _, err := s.Record(note("b1", t0)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Refetch("b1", week, t0); !errors.Is(err, ErrState) {
		t.Fatalf("refetch of a queued batch = %v, want ErrState", err)
	}
	if _, err := s.Refetch("nope", week, t0); !errors.Is(err, ErrNotFound) {
		t.Fatalf("refetch of an unknown batch = %v", err)
	}
	b, _, _ := s.Lease(t0)
	s.Checkpoint("b1", Checkpoint{Done: true, Items: 3, Pages: 1, StagedBytes: 30}, t0)
	if _, err := s.Refetch("b1", week, t0); !errors.Is(err, ErrState) {
		t.Fatalf("refetch while fetching = %v, want ErrState", err)
	}
	if err := s.Finish(b.ID, StateExported, "/x/b1", "", 0, t0); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.OldestPending(); ok {
		t.Fatal("an exported batch is still pending")
	}
	r, err := s.Refetch("b1", week, t0.Add(time.Hour))
	if err != nil || r.State != StateQueued || !r.Refetch || r.Checkpoint != (Checkpoint{}) {
		t.Fatalf("Refetch = %+v, %v", r, err)
	}
	if _, ok, _ := s.OldestPending(); !ok {
		t.Fatal("a refetched batch is not pending")
	}
	b, _, _ = s.Lease(t0.Add(time.Hour))
	if b == nil || !b.Refetch {
		t.Fatalf("leased %+v, want the refetch", b)
	}
	s.Finish("b1", StateExported, "/x/b1", "", 0, t0)
	b, _ = s.Get("b1")
	if b.Refetch {
		t.Fatal("Refetch flag survives the export")
	}
}

// Once the provider no longer keeps a batch's results, a refetch could
// only fail; it is refused with the reason.
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

func TestRefetchOfAPurgedBatch(t *testing.T) {
	s := openTest(t, t.TempDir())
	exportWithCheckpoint(t, s, "b1", t0)
	exportWithCheckpoint(t, s, "b2", t0)
	for _, id := range []string{"b1", "b2"} {
		if _, err := s.PurgeExport(id, ExportPurge{ExportedAt: t0}, t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	_, err := s.Refetch("b1", week, t0.Add(2*time.Hour))
	if !errors.Is(err, ErrState) || !strings.Contains(err.Error(), "being deleted") {
		t.Fatalf("refetch while the purged files may remain = %v, want ErrState", err)
	}
	for _, id := range []string{"b1", "b2"} {
		if err := s.FileRemovalDone(FileRemoval{BatchID: id, Purge: true}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := s.Refetch("b1", week, t0.Add(2*time.Hour))
	if err != nil || b.State != StateQueued {
		t.Fatalf("refetch of a purged batch within the provider's retention = %+v, %v", b, err)
	}
	_, err = s.Refetch("b2", week, t0.Add(week+time.Hour))
	if !errors.Is(err, ErrState) || !strings.Contains(err.Error(), "was purged and the provider no longer keeps its results") {
		t.Fatalf("refetch of a purged batch past retention = %v", err)
	}
	counts, _ := s.Counts()
	if counts[StatePurged] != 1 || counts[StateQueued] != 1 {
		t.Fatalf("counts = %v", counts)
	}
}
