package store

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"
)

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
