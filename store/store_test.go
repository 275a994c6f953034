package store

import (
	"errors"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func openTest(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func note(id string, at time.Time) Notification {
	n := int64(3)
	return Notification{Event: "batch.completed", BatchID: id, Status: "completed", TotalRequested: &n,
		ReceivedAt: at, Source: SourceWebhook, Raw: []byte(`{"raw":true}`), Attempt: 1}
}

func TestSecondOpenFailsFastWithErrLocked(t *testing.T) {
	dir := t.TempDir()
	openTest(t, dir)
	done := make(chan error, 1)
	go func() {
		s, err := Open(dir, 100*time.Millisecond)
		if err == nil {
			s.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrLocked) {
			t.Fatalf("second Open = %v, want ErrLocked", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("second Open still waiting after 3s; it must fail fast")
	}
}

func TestRecordIsIdempotentAndDurable(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if known, _ := s.Known("b1"); known {
		t.Fatal("b1 known before Record")
	}
	created, err := s.Record(note("b1", t0))
	if err != nil || !created {
		t.Fatalf("first Record = %v, %v", created, err)
	}
	second := note("b1", t0.Add(time.Minute))
	second.Status = "failed"
	created, err = s.Record(second)
	if err != nil || created {
		t.Fatalf("second Record = %v, %v; want not created", created, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, dir)
	b, err := s.Get("b1")
	if err != nil {
		t.Fatal(err)
	}
	if b.State != StateQueued || b.Notification.Status != "completed" || !b.Notification.ReceivedAt.Equal(t0) {
		t.Fatalf("record after reopen = %+v; want the first delivery, queued", b)
	}
	if string(b.Notification.Raw) != `{"raw":true}` || *b.Notification.TotalRequested != 3 {
		t.Fatalf("notification not kept: %+v", b.Notification)
	}
	if known, _ := s.Known("b1"); !known {
		t.Fatal("b1 not known after reopen")
	}
	if _, err := s.Get("nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get unknown = %v, want ErrNotFound", err)
	}
}

func TestRecordWakesTheFetcher(t *testing.T) {
	s := openTest(t, t.TempDir())
	if _, err := s.Record(note("b1", t0)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Wakeups():
	case <-time.After(5 * time.Second):
		t.Fatal("no wakeup after Record")
	}
}

func TestLeaseOrderDueTimesAndTransitions(t *testing.T) {
	s := openTest(t, t.TempDir())
	for i, id := range []string{"b2", "b1", "b3"} {
		if _, err := s.Record(note(id, t0.Add(time.Duration(i)*time.Second))); err != nil {
			t.Fatal(err)
		}
	}
	// Only b2 is due at t0.
	b, next, err := s.Lease(t0)
	if err != nil || b == nil || b.ID != "b2" || b.State != StateFetching {
		t.Fatalf("Lease(t0) = %+v, %v", b, err)
	}
	b, next, err = s.Lease(t0)
	if err != nil || b != nil || !next.Equal(t0.Add(time.Second)) {
		t.Fatalf("Lease(t0) again = %+v, next %v, %v; want nothing until t0+1s", b, next, err)
	}
	// A leased batch is not leased twice.
	got := map[string]bool{}
	for {
		b, _, err := s.Lease(t0.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if b == nil {
			break
		}
		if got[b.ID] {
			t.Fatalf("%s leased twice", b.ID)
		}
		got[b.ID] = true
	}
	if len(got) != 2 || !got["b1"] || !got["b3"] {
		t.Fatalf("leased %v, want b1 and b3", got)
	}
	if _, next, _ := s.Lease(t0.Add(time.Hour)); !next.IsZero() {
		t.Fatalf("next = %v with nothing queued", next)
	}

	cp := Checkpoint{Cursor: "c2", StagedBytes: 120, Items: 10, Pages: 1}
	if err := s.Checkpoint("b2", cp, t0); err != nil {
		t.Fatal(err)
	}
	if err := s.Retry("b2", t0.Add(time.Minute), "transient", "HTTP 500", true, t0); err != nil {
		t.Fatal(err)
	}
	b, _ = s.Get("b2")
	if b.State != StateQueued || b.FetchAttempts != 1 || b.LastError != "HTTP 500" || b.Checkpoint != cp {
		t.Fatalf("after Retry: %+v", b)
	}
	if err := s.Checkpoint("b2", cp, t0); !errors.Is(err, ErrState) {
		t.Fatalf("Checkpoint on a queued batch = %v, want ErrState", err)
	}
	if b, _, _ := s.Lease(t0.Add(59 * time.Second)); b != nil {
		t.Fatalf("b2 leased before its retry time")
	}
	b, _, _ = s.Lease(t0.Add(time.Minute))
	if b == nil || b.ID != "b2" || b.Checkpoint != cp {
		t.Fatalf("Lease at retry time = %+v", b)
	}
	if err := s.Finish("b2", StateExported, "/x/b2", "", 0, t0); err != nil {
		t.Fatal(err)
	}
	if err := s.Finish("b2", StateAbandoned, "", "late", 0, t0); !errors.Is(err, ErrState) {
		t.Fatalf("Finish on an exported batch = %v, want ErrState", err)
	}
	if err := s.Finish("b1", StateQueued, "", "", 0, t0); !errors.Is(err, ErrState) {
		t.Fatalf("Finish to a non-final state = %v, want ErrState", err)
	}
	counts, err := s.Counts()
	if err != nil || counts[StateExported] != 1 || counts[StateFetching] != 2 {
		t.Fatalf("Counts = %v, %v", counts, err)
	}
}

func TestReleaseLeasesKeepsCheckpoint(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Record(note("b1", t0)); err != nil {
		t.Fatal(err)
	}
	if b, _, _ := s.Lease(t0); b == nil {
		t.Fatal("nothing leased")
	}
	cp := Checkpoint{Cursor: "c3", StagedBytes: 300, Items: 20, Pages: 2}
	if err := s.Checkpoint("b1", cp, t0); err != nil {
		t.Fatal(err)
	}
	s.Close() // a crash leaves b1 in fetching
	s = openTest(t, dir)
	n, err := s.ReleaseLeases(t0.Add(time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("ReleaseLeases = %d, %v", n, err)
	}
	b, _, err := s.Lease(t0.Add(time.Hour))
	if err != nil || b == nil || b.Checkpoint != cp {
		t.Fatalf("lease after release = %+v, %v; want checkpoint %+v", b, err, cp)
	}
	if n, _ := s.ReleaseLeases(t0); n != 1 {
		t.Fatalf("second ReleaseLeases = %d, want 1 (b1 is fetching again)", n)
	}
}

func TestQuarantineAndAuditAreKeptOnce(t *testing.T) {
	s := openTest(t, t.TempDir())
	q := Quarantined{ID: "abc", Reason: "status bad", ReceivedAt: t0, Raw: []byte("{}")}
	for i := 0; i < 3; i++ {
		q.Reason = []string{"first", "second", "third"}[i]
		if err := s.Quarantine(q); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.GetQuarantined("abc")
	if err != nil || got.Reason != "first" {
		t.Fatalf("GetQuarantined = %+v, %v; want the first entry", got, err)
	}
	if n, _ := s.CountQuarantined(); n != 1 {
		t.Fatalf("CountQuarantined = %d", n)
	}
	if err := s.Audit(AuditEvent{ID: "e1", Event: "batch.started", BatchID: "b9", Raw: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	e, err := s.GetAudit("e1")
	if err != nil || e.Event != "batch.started" {
		t.Fatalf("GetAudit = %+v, %v", e, err)
	}
	if known, _ := s.Known("b9"); known {
		t.Fatal("an audited event made its batch known")
	}
	if _, err := s.GetQuarantined("zzz"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetQuarantined unknown = %v", err)
	}
}

func TestDatabaseFileMode(t *testing.T) {
	s := openTest(t, t.TempDir())
	st, err := statMode(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	if st&0o077 != 0 {
		t.Fatalf("database mode %o is readable by others", st)
	}
}

func TestLeaseSkipsADueEntryWithoutARecord(t *testing.T) {
	s := openTest(t, t.TempDir())
	if _, err := s.Record(note("b1", t0)); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketDue).Put(dueKey(t0.Add(-time.Second), "ghost"), nil)
	}); err != nil {
		t.Fatal(err)
	}
	b, _, err := s.Lease(t0)
	if err != nil || b == nil || b.ID != "b1" {
		t.Fatalf("Lease = %+v, %v; want b1 past the stale entry", b, err)
	}
}
