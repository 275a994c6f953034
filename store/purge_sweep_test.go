package store

import (
	"errors"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

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
