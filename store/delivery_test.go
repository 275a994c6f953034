package store

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// exportBatch records a batch, leases it and finishes it as exported.
func exportBatch(t *testing.T, s *Store, id string, at time.Time) {
	t.Helper()
	if _, err := s.Record(note(id, at)); err != nil {
		t.Fatal(err)
	}
	b, _, err := s.Lease(at)
	if err != nil || b == nil || b.ID != id {
		t.Fatalf("lease %s: %v %v", id, b, err)
	}
	if err := s.Finish(id, StateExported, "/x/"+id, "", 0, at); err != nil {
		t.Fatal(err)
	}
}

func deliveryOf(t *testing.T, s *Store, id, sink string) Delivery {
	t.Helper()
	ds, err := s.Deliveries(id)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		if d.Sink == sink {
			return d
		}
	}
	t.Fatalf("no delivery of %s to %s in %+v", id, sink, ds)
	return Delivery{}
}

func TestFinishQueuesOneDeliveryPerSinkInTheSameTransaction(t *testing.T) {
	s := openTest(t, t.TempDir())
	s.SetSinks([]string{"http", "exec"})
	exportBatch(t, s, "b1", t0)
	ds, err := s.Deliveries("b1")
	if err != nil || len(ds) != 2 {
		t.Fatalf("deliveries = %+v, %v; want one per sink", ds, err)
	}
	for _, d := range ds {
		if d.State != DeliveryPending || d.Version != 0 || d.Generation != 1 || !d.NextAttemptAt.Equal(t0) || d.PartsDone != 0 {
			t.Errorf("new delivery = %+v", d)
		}
	}
	select {
	case <-s.DeliveryWakeups("http"):
	default:
		t.Error("no wakeup for http after the commit")
	}
	// An abandoned batch queues nothing.
	if _, err := s.Record(note("b2", t0)); err != nil {
		t.Fatal(err)
	}
	s.Lease(t0)
	if err := s.Finish("b2", StateAbandoned, "", "gone", 0, t0); err != nil {
		t.Fatal(err)
	}
	if ds, _ := s.Deliveries("b2"); len(ds) != 0 {
		t.Fatalf("abandoned batch has deliveries %+v", ds)
	}
}

func TestRefetchVersionsAndKeptExports(t *testing.T) {
	s := openTest(t, t.TempDir())
	s.SetSinks([]string{"http"})
	exportBatch(t, s, "b1", t0)
	d, _, _ := s.NextDelivery("http", t0, nil)
	if _, err := s.Delivered("b1", "http", d.Generation, t0, false); err != nil {
		t.Fatal(err)
	}
	// A refetch that could not complete keeps the old export: nothing new.
	t1 := t0.Add(time.Minute)
	if _, err := s.Refetch("b1", week, t1); err != nil {
		t.Fatal(err)
	}
	s.Lease(t1)
	if err := s.Finish("b1", StateExported, "/x/b1", "retention elapsed", 0, t1); err != nil {
		t.Fatal(err)
	}
	if got := deliveryOf(t, s, "b1", "http"); got.State != DeliveryDelivered || got.Generation != 1 {
		t.Fatalf("a kept export queued a delivery: %+v", got)
	}
	if b, _ := s.Get("b1"); b.Refetches != 0 {
		t.Fatalf("kept export counted as a refetch: %d", b.Refetches)
	}
	// A refetch that replaced the export queues version 1.
	t2 := t1.Add(time.Minute)
	if _, err := s.Refetch("b1", week, t2); err != nil {
		t.Fatal(err)
	}
	s.Lease(t2)
	if err := s.Finish("b1", StateExported, "/x/b1", "", 0, t2); err != nil {
		t.Fatal(err)
	}
	got := deliveryOf(t, s, "b1", "http")
	if got.State != DeliveryPending || got.Version != 1 || got.Generation != 2 || got.Attempts != 0 {
		t.Fatalf("after a replacing refetch: %+v, want pending version 1", got)
	}
	// A redeliver keeps the version.
	if _, err := s.Delivered("b1", "http", got.Generation, t2, false); err != nil {
		t.Fatal(err)
	}
	r, err := s.Redeliver("b1", "http", t2)
	if err != nil || r.Version != 1 || r.State != DeliveryPending {
		t.Fatalf("redeliver = %+v, %v; want pending version 1", r, err)
	}
}

func TestADeliverySurvivesAReopenWithItsProgress(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	s.SetSinks([]string{"http"})
	exportBatch(t, s, "b1", t0)
	d, _, err := s.NextDelivery("http", t0, nil)
	if err != nil || d == nil {
		t.Fatalf("lease: %v %v", d, err)
	}
	if err := s.MarkParts("b1", "http", d.Generation, 2); err != nil {
		t.Fatal(err)
	}
	s.Close() // the "crash": the attempt never recorded an outcome
	s = openTest(t, dir)
	s.SetSinks([]string{"http"})
	d, _, err = s.NextDelivery("http", t0.Add(time.Second), nil)
	if err != nil || d == nil || d.State != DeliveryPending || d.PartsDone != 2 {
		t.Fatalf("after reopen: %+v, %v; want pending and due with 2 parts done", d, err)
	}
}

func TestRetryFailAndRedeliver(t *testing.T) {
	s := openTest(t, t.TempDir())
	s.SetSinks([]string{"http"})
	exportBatch(t, s, "b1", t0)
	d, _, _ := s.NextDelivery("http", t0, nil)
	at := t0.Add(time.Minute)
	if err := s.RetryDelivery("b1", "http", d.Generation, at, "status", "HTTP 503", true); err != nil {
		t.Fatal(err)
	}
	if got, next, _ := s.NextDelivery("http", t0.Add(time.Second), nil); got != nil || !next.Equal(at) {
		t.Fatalf("before the retry time: %+v next %v; want none, next %v", got, next, at)
	}
	if got, _, _ := s.NextDelivery("http", at, func(id string) bool { return id == "b1" }); got != nil {
		t.Fatalf("a busy delivery was leased twice: %+v", got)
	}
	d, _, _ = s.NextDelivery("http", at, nil)
	if d == nil || d.Attempts != 1 || d.LastError != "HTTP 503" {
		t.Fatalf("retried delivery = %+v", d)
	}
	if err := s.MarkParts("b1", "http", d.Generation, 3); err != nil {
		t.Fatal(err)
	}
	if err := s.FailDelivery("b1", "http", d.Generation, "status", "HTTP 410"); err != nil {
		t.Fatal(err)
	}
	if got, next, _ := s.NextDelivery("http", at.Add(time.Hour), nil); got != nil || !next.IsZero() {
		t.Fatalf("a failed delivery is due again: %+v %v", got, next)
	}
	if err := s.RetryDelivery("b1", "http", d.Generation, at, "", "", false); !errors.Is(err, ErrState) {
		t.Fatalf("retry of a failed delivery = %v, want ErrState", err)
	}
	r, err := s.Redeliver("b1", "http", at)
	if err != nil || r.PartsDone != 0 || r.Generation != d.Generation+1 || r.Attempts != 0 {
		t.Fatalf("redeliver = %+v, %v; want parts reset, next generation", r, err)
	}
	// The old generation's outcome no longer counts.
	if _, err := s.Delivered("b1", "http", d.Generation, at, false); !errors.Is(err, ErrState) {
		t.Fatalf("stale outcome = %v, want ErrState", err)
	}
	counts, _ := s.DeliveryCounts()
	if counts["http"][DeliveryPending] != 1 || counts["http"][DeliveryFailed] != 0 {
		t.Fatalf("counts = %v", counts)
	}
}

func TestRedeliverRefusals(t *testing.T) {
	s := openTest(t, t.TempDir())
	s.SetSinks([]string{"http"})
	if _, err := s.Redeliver("nope", "http", t0); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown batch: %v", err)
	}
	if _, err := s.Record(note("q", t0)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Redeliver("q", "http", t0); !errors.Is(err, ErrState) || !strings.Contains(err.Error(), "queued") {
		t.Fatalf("queued batch: %v", err)
	}
	s.Lease(t0)
	s.Finish("q", StateExported, "/x/q", "", 0, t0)
	if _, err := s.Redeliver("q", "kafka", t0); !errors.Is(err, ErrState) || !strings.Contains(err.Error(), "not configured") {
		t.Fatalf("unconfigured sink: %v", err)
	}
	d, _, _ := s.NextDelivery("http", t0, nil)
	remove, err := s.Delivered("q", "http", d.Generation, t0, true)
	if err != nil || !remove {
		t.Fatalf("delivered = %v %v; want remove", remove, err)
	}
	if _, err := s.Redeliver("q", "http", t0); !errors.Is(err, ErrState) || !strings.Contains(err.Error(), "export removed; refetch it first") {
		t.Fatalf("removed export: %v", err)
	}
	if _, err := s.Refetch("q", week, t0); !errors.Is(err, ErrState) {
		t.Fatalf("refetch during the removal = %v, want ErrState", err)
	}
	if rs, _ := s.FileRemovals(); len(rs) != 1 || rs[0] != (FileRemoval{BatchID: "q"}) {
		t.Fatalf("removals = %v", rs)
	}
	if err := s.FileRemovalDone(FileRemoval{BatchID: "q"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Refetch("q", week, t0); err != nil {
		t.Fatalf("refetch after the removal: %v", err)
	}
}

func TestExportRemovedOnlyOnceEverySinkDelivered(t *testing.T) {
	s := openTest(t, t.TempDir())
	s.SetSinks([]string{"http", "exec"})
	exportBatch(t, s, "b1", t0)
	h := deliveryOf(t, s, "b1", "http")
	if remove, err := s.Delivered("b1", "http", h.Generation, t0, true); err != nil || remove {
		t.Fatalf("first sink: remove=%v %v; exec has not delivered", remove, err)
	}
	e := deliveryOf(t, s, "b1", "exec")
	if remove, err := s.Delivered("b1", "exec", e.Generation, t0, true); err != nil || !remove {
		t.Fatalf("last sink: remove=%v %v", remove, err)
	}
	if b, _ := s.Get("b1"); !b.ExportRemoved {
		t.Fatal("batch not marked ExportRemoved")
	}
}

func TestListDeliveriesAndOldest(t *testing.T) {
	s := openTest(t, t.TempDir())
	s.SetSinks([]string{"http", "exec"})
	for i, id := range []string{"a", "b", "c"} {
		exportBatch(t, s, id, t0.Add(time.Duration(i)*time.Minute))
	}
	d := deliveryOf(t, s, "a", "http")
	if err := s.FailDelivery("a", "http", d.Generation, "status", "HTTP 400"); err != nil {
		t.Fatal(err)
	}
	var seen []string
	cursor := ""
	for {
		page, next, err := s.ListDeliveries(DeliveryPending, "", 2, cursor)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range page {
			seen = append(seen, d.BatchID+"/"+d.Sink)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if strings.Join(seen, " ") != "a/exec b/exec b/http c/exec c/http" {
		t.Fatalf("pending pages = %v", seen)
	}
	failed, _, _ := s.ListDeliveries(DeliveryFailed, "http", 10, "")
	if len(failed) != 1 || failed[0].BatchID != "a" || failed[0].LastError != "HTTP 400" {
		t.Fatalf("failed = %+v", failed)
	}
	if _, _, err := s.ListDeliveries(DeliveryFailed, "", 10, "zz"); !errors.Is(err, ErrBadCursor) {
		t.Fatalf("bad cursor = %v", err)
	}
	oldest, _ := s.OldestPendingDeliveries()
	if !oldest["exec"].Equal(t0) || !oldest["http"].Equal(t0.Add(time.Minute)) {
		t.Fatalf("oldest = %v", oldest)
	}
}

// A sink left out of BATCHHOOK_SINKS while a refetch replaced the export
// keeps a delivery of the old version; a redeliver sends the export in
// place, so it must carry that export's version, never the old ids (a
// receiver deduplicating on them would drop the new content).
func TestRedeliverCarriesTheVersionOfTheExportInPlace(t *testing.T) {
	s := openTest(t, t.TempDir())
	s.SetSinks([]string{"http"})
	exportBatch(t, s, "b1", t0)
	d := deliveryOf(t, s, "b1", "http")
	if _, err := s.Delivered("b1", "http", d.Generation, t0, false); err != nil {
		t.Fatal(err)
	}
	s.SetSinks(nil) // a restart with BATCHHOOK_SINKS=file
	t1 := t0.Add(time.Minute)
	if _, err := s.Refetch("b1", week, t1); err != nil {
		t.Fatal(err)
	}
	s.Lease(t1)
	if err := s.Finish("b1", StateExported, "/x/b1", "", 0, t1); err != nil {
		t.Fatal(err)
	}
	if b, _ := s.Get("b1"); b.Refetches != 1 {
		t.Fatalf("refetches = %d, want 1", b.Refetches)
	}
	s.SetSinks([]string{"http"}) // http configured again
	r, err := s.Redeliver("b1", "http", t1)
	if err != nil || r.Version != 1 {
		t.Fatalf("redeliver = %+v, %v; want version 1 (the export in place)", r, err)
	}
}
