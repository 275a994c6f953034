package store

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
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
	if ids, _ := s.ExportFileRemovals(); strings.Join(ids, ",") != "b1" {
		t.Fatalf("file removals = %v, want b1 until its files are gone", ids)
	}
	if err := s.ExportFilesRemoved("b1"); err != nil {
		t.Fatal(err)
	}
	if ids, _ := s.ExportFileRemovals(); len(ids) != 0 {
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
		if err := s.ExportFilesRemoved(id); err != nil {
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

func TestPurgeRecordsReducesFinalBatchesToTombstones(t *testing.T) {
	s := openTest(t, t.TempDir())
	exportWithCheckpoint(t, s, "exp", t0)
	if _, err := s.Record(note("aband", t0)); err != nil {
		t.Fatal(err)
	}
	s.Lease(t0)
	if err := s.Finish("aband", StateAbandoned, "", "HTTP 410", 0, t0); err != nil {
		t.Fatal(err)
	}
	exportWithCheckpoint(t, s, "late", t0.Add(10*24*time.Hour))
	if _, err := s.Record(note("queued", t0)); err != nil {
		t.Fatal(err)
	}
	// Recorded early but finished late: the created index lets it through,
	// its finish date keeps it.
	if _, err := s.Record(note("slow", t0.Add(-time.Hour))); err != nil {
		t.Fatal(err)
	}
	if b, _, _ := s.Lease(t0.Add(10 * 24 * time.Hour)); b == nil || b.ID != "slow" {
		t.Fatalf("leased %+v, want slow", b)
	}
	if err := s.Finish("slow", StateAbandoned, "", "HTTP 410", 0, t0.Add(10*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	before, now := t0.Add(24*time.Hour), t0.Add(91*24*time.Hour)
	n, next, err := s.PurgeRecords(before, "", 500, now)
	if err != nil || n != 2 || next != "" {
		t.Fatalf("PurgeRecords = %d %q %v, want 2 reduced", n, next, err)
	}
	sum := sha256.Sum256([]byte(`{"raw":true}`))
	for _, id := range []string{"exp", "aband"} {
		b, _ := s.Get(id)
		ts := b.Tombstone
		if b.Notification.Raw != nil || b.Checkpoint.Cursor != "" || b.Checkpoint.Seen != "" || ts == nil ||
			ts.RawSHA256 != hex.EncodeToString(sum[:]) || !ts.RecordPurgedAt.Equal(now) || b.Checkpoint.Items != 3 && id == "exp" {
			t.Fatalf("%s not reduced: %+v tombstone %+v", id, b, ts)
		}
		if known, _ := s.Known(id); !known {
			t.Fatalf("%s not known after its record was reduced", id)
		}
	}
	if b, _ := s.Get("exp"); b.State != StateExported {
		t.Fatalf("an exported batch whose export is kept became %s", b.State)
	}
	if b, _ := s.Get("aband"); b.State != StatePurged || b.LastError != "HTTP 410" {
		t.Fatalf("abandoned batch after reduction = %s %q, want purged keeping its reason", b.State, b.LastError)
	}
	for _, id := range []string{"late", "queued", "slow"} {
		if b, _ := s.Get(id); b.Notification.Raw == nil || b.Tombstone != nil {
			t.Fatalf("%s reduced before its time: %+v", id, b)
		}
	}
	if n, _, err := s.PurgeRecords(before, "", 500, now); err != nil || n != 0 {
		t.Fatalf("second PurgeRecords = %d %v, want nothing left", n, err)
	}
}

func TestPurgeRecordsWalksInBoundedTransactions(t *testing.T) {
	s := openTest(t, t.TempDir())
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		exportWithCheckpoint(t, s, id, t0)
	}
	total, calls, after := 0, 0, ""
	for {
		n, next, err := s.PurgeRecords(t0.Add(time.Hour), after, 2, t0.Add(2*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		total, calls = total+n, calls+1
		if next == "" {
			break
		}
		after = next
	}
	if total != 5 || calls != 3 {
		t.Fatalf("reduced %d in %d calls, want 5 in 3", total, calls)
	}
}

func TestPurgeQuarantineAndAuditByAge(t *testing.T) {
	s := openTest(t, t.TempDir())
	old, young := t0, t0.Add(100*24*time.Hour)
	for _, q := range []Quarantined{{ID: "q-old", Reason: "bad", ReceivedAt: old, Raw: []byte("x")}, {ID: "q-new", Reason: "bad", ReceivedAt: young, Raw: []byte("y")}} {
		if err := s.Quarantine(q); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range []AuditEvent{{ID: "e-old", Event: "batch.started", ReceivedAt: old, Raw: []byte("x")}, {ID: "e-new", Event: "batch.started", ReceivedAt: young, Raw: []byte("y")}} {
		if err := s.Audit(e); err != nil {
			t.Fatal(err)
		}
	}
	before := t0.Add(24 * time.Hour)
	if n, next, err := s.PurgeQuarantine(before, "", 1); err != nil || n > 1 || next == "" {
		t.Fatalf("first quarantine step (limit 1) = %d %q %v; want a resume point", n, next, err)
	} else if n2, next2, err := s.PurgeQuarantine(before, next, 1); err != nil || n+n2 != 1 || next2 != "" {
		t.Fatalf("quarantine purged %d+%d (%v), want 1 in all", n, n2, err)
	}
	if n, _, err := s.PurgeAudit(before, "", 500); err != nil || n != 1 {
		t.Fatalf("PurgeAudit = %d %v", n, err)
	}
	if _, err := s.GetQuarantined("q-old"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("old quarantine entry = %v, want deleted", err)
	}
	if _, err := s.GetAudit("e-old"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("old audit entry = %v, want deleted", err)
	}
	if _, err := s.GetQuarantined("q-new"); err != nil {
		t.Fatalf("young quarantine entry: %v", err)
	}
	if _, err := s.GetAudit("e-new"); err != nil {
		t.Fatalf("young audit entry: %v", err)
	}
}

func chunkAt(t *testing.T, s *Store, seq uint64, index int) *Chunk {
	t.Helper()
	var c *Chunk
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		c, err = getChunk(tx, chunkKey(seq, index))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestPurgeChunkCPFsOfFailedAndUnknownChunks(t *testing.T) {
	s := openTest(t, t.TempDir())
	sub := addSub(t, s, "sa", []string{"52998224725"}, []string{"11144477735"}, []string{"39053344705"})
	c := mustNext(t, s)
	s.ChunkSending(c.Seq, c.Index, t0)
	if err := s.ChunkGiveUp(c.Seq, c.Index, ChunkFailed, "HTTP 400", t0); err != nil {
		t.Fatal(err)
	}
	c = mustNext(t, s)
	s.ChunkSending(c.Seq, c.Index, t0)
	if err := s.ChunkGiveUp(c.Seq, c.Index, ChunkUnknown, "timeout", t0); err != nil {
		t.Fatal(err)
	}
	if n, _, err := s.PurgeChunkCPFs(t0.Add(-time.Hour), "", 500); err != nil || n != 0 {
		t.Fatalf("purge before the chunks' time = %d %v, want none", n, err)
	}
	n, next, err := s.PurgeChunkCPFs(t0.Add(time.Hour), "", 500)
	if err != nil || n != 2 || next != "" {
		t.Fatalf("PurgeChunkCPFs = %d %q %v, want 2", n, next, err)
	}
	for i, want := range []ChunkState{ChunkFailed, ChunkUnknown} {
		got := chunkAt(t, s, sub.Seq, i)
		if got.State != want || got.CPFs != nil || !got.CPFsPurged || got.CPFCount != 1 {
			t.Fatalf("chunk %d = %+v; want %s, no CPFs, marked purged, count kept", i, got, want)
		}
		_, err := s.ChunkResend("sa", i, t0.Add(2*time.Hour))
		if !errors.Is(err, ErrState) || !strings.Contains(err.Error(), "CPFs were deleted after BATCHHOOK_RECORD_RETENTION") {
			t.Fatalf("resend of a purged chunk = %v", err)
		}
	}
	if waiting := chunkAt(t, s, sub.Seq, 2); len(waiting.CPFs) != 1 || waiting.CPFsPurged {
		t.Fatalf("a waiting chunk lost its CPFs: %+v", waiting)
	}
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
