package store

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestPurgeExportKeepsATombstoneAndTheBatchStaysKnown(t *testing.T) {
	s := openTest(t, t.TempDir())
	exportWithCheckpoint(t, s, "b1", t0)
	exportWithCheckpoint(t, s, "b2", t0.Add(40*24*time.Hour))
	if got := candidateIDs(t, s, t0.Add(month)); strings.Join(got, ",") != "b1" {
		t.Fatalf("candidates = %v, want only b1 (b2 was created later)", got)
	}
	now := t0.Add(month + time.Hour)
	b, err := s.PurgeExport("b1", ExportPurge{ExportedAt: t0, ManifestSHA256: "abc", ManifestItems: 3}, now)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := s.Get("b1")
	ts := got.Tombstone
	if got.State != StatePurged || ts == nil || !ts.PurgedAt.Equal(now) || !ts.ExportPurgedAt.Equal(now) ||
		!ts.ExportedAt.Equal(t0) || ts.ManifestSHA256 != "abc" || ts.ManifestItems != 3 || got.ExportPath != "" {
		t.Fatalf("purged record = %+v tombstone %+v", got, ts)
	}
	if got.Notification.Status != "completed" || *got.Notification.TotalRequested != 3 || !got.Notification.ReceivedAt.Equal(t0) ||
		!got.FinishedAt.Equal(t0) || b.ID != "b1" {
		t.Fatalf("the tombstone lost the status, counters or dates: %+v", got)
	}
	if known, err := s.Known("b1"); err != nil || !known {
		t.Fatalf("Known(purged) = %v, %v; want true (a replay is a duplicate)", known, err)
	}
	if accepted, err := s.Record(note("b1", now)); err != nil || accepted {
		t.Fatalf("replayed notification of a purged batch: accepted=%v err=%v, want a duplicate", accepted, err)
	}
	if got := candidateIDs(t, s, now); len(got) != 0 {
		t.Fatalf("a purged batch is still an export candidate: %v", got)
	}
	if rs, _ := s.FileRemovals(); len(rs) != 1 || rs[0] != (FileRemoval{BatchID: "b1", Purge: true}) {
		t.Fatalf("file removals = %v, want b1's purge until its files are gone", rs)
	}
	if err := s.FileRemovalDone(FileRemoval{BatchID: "b1", Purge: true}); err != nil {
		t.Fatal(err)
	}
	if ids, _ := s.FileRemovals(); len(ids) != 0 {
		t.Fatalf("file removals after removal = %v", ids)
	}
	counts, _ := s.Counts()
	if counts[StatePurged] != 1 || counts[StateExported] != 1 {
		t.Fatalf("counts = %v", counts)
	}
	list, _, err := s.List(StatePurged, 10, "")
	if err != nil || len(list) != 1 || list[0].ID != "b1" {
		t.Fatalf("List(purged) = %v, %v", list, err)
	}
	if _, err := s.PurgeExport("b1", ExportPurge{}, now); !errors.Is(err, ErrState) {
		t.Fatalf("second purge = %v, want ErrState", err)
	}
}

func TestPurgeExportWaitsForPendingDeliveriesNotFailedOnes(t *testing.T) {
	s := openTest(t, t.TempDir())
	s.SetSinks([]string{"http", "kafka"})
	exportWithCheckpoint(t, s, "b1", t0)
	now := t0.Add(month + time.Hour)
	if _, err := s.PurgeExport("b1", ExportPurge{ExportedAt: t0}, now); !errors.Is(err, ErrDeliveryPending) {
		t.Fatalf("purge with pending deliveries = %v, want ErrDeliveryPending", err)
	}
	if b, _ := s.Get("b1"); b.State != StateExported {
		t.Fatalf("state after a refused purge = %s", b.State)
	}
	d := deliveryOf(t, s, "b1", "http")
	if err := s.FailDelivery("b1", "http", d.Generation, "rejected", "HTTP 400"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PurgeExport("b1", ExportPurge{ExportedAt: t0}, now); !errors.Is(err, ErrDeliveryPending) {
		t.Fatalf("purge with kafka still pending = %v, want ErrDeliveryPending", err)
	}
	k := deliveryOf(t, s, "b1", "kafka")
	if _, err := s.Delivered("b1", "kafka", k.Generation, now, false); err != nil {
		t.Fatal(err)
	}
	b, err := s.PurgeExport("b1", ExportPurge{ExportedAt: t0}, now)
	if err != nil {
		t.Fatalf("purge once no delivery is pending: %v", err)
	}
	if strings.Join(b.Tombstone.NeverDelivered, ",") != "http" {
		t.Fatalf("never delivered = %v, want [http]", b.Tombstone.NeverDelivered)
	}
}
