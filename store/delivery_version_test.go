package store

import (
	"testing"
	"time"
)

// TestExportChangedMovesEveryUndeliveredDelivery: a new version moves the
// pending and the failed deliveries to it, from part 0, as a new
// generation due at once; a delivered one stays delivered; the same or an
// older version moves nothing; a redeliver then sends the newest version.
func TestExportChangedMovesEveryUndeliveredDelivery(t *testing.T) {
	s := openTest(t, t.TempDir())
	s.SetSinks([]string{"http", "nats", "kafka"})
	exportBatch(t, s, "b1", t0)
	h, n, k := deliveryOf(t, s, "b1", "http"), deliveryOf(t, s, "b1", "nats"), deliveryOf(t, s, "b1", "kafka")
	if err := s.MarkParts("b1", "http", h.Generation, 3); err != nil {
		t.Fatal(err)
	}
	if err := s.RetryDelivery("b1", "http", h.Generation, t0.Add(time.Hour), "status", "503", true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delivered("b1", "nats", n.Generation, t0, false); err != nil {
		t.Fatal(err)
	}
	if err := s.FailDelivery("b1", "kafka", k.Generation, "authorization", "denied"); err != nil {
		t.Fatal(err)
	}
	t1 := t0.Add(time.Minute)
	moved, err := s.ExportChanged("b1", 1, t1)
	if err != nil || moved != 2 {
		t.Fatalf("ExportChanged = %d, %v; want 2 moved", moved, err)
	}
	for _, name := range []string{"http", "kafka"} {
		d := deliveryOf(t, s, "b1", name)
		if d.State != DeliveryPending || d.Version != 1 || d.PartsDone != 0 || d.Attempts != 0 || d.Generation != 2 ||
			!d.NextAttemptAt.Equal(t1) || d.LastError != "" {
			t.Errorf("%s after the change: %+v", name, d)
		}
	}
	if d := deliveryOf(t, s, "b1", "nats"); d.State != DeliveryDelivered || d.Version != 0 {
		t.Errorf("delivered nats was moved: %+v", d)
	}
	if b, _ := s.Get("b1"); b.Version() != 1 || b.ExportVersion != 1 {
		t.Errorf("batch version %d (%d)", b.Version(), b.ExportVersion)
	}
	for _, v := range []int{1, 0} {
		if moved, err := s.ExportChanged("b1", v, t1.Add(time.Minute)); err != nil || moved != 0 {
			t.Errorf("ExportChanged(%d) again = %d, %v; want nothing moved", v, moved, err)
		}
	}
	if d := deliveryOf(t, s, "b1", "http"); d.Generation != 2 {
		t.Errorf("a repeated change requeued http: %+v", d)
	}
	d, err := s.Redeliver("b1", "nats", t1)
	if err != nil || d.Version != 1 {
		t.Fatalf("redeliver after the change = %+v, %v; want the newest version", d, err)
	}
}

// TestAChangeLeavesASinkNoLongerConfiguredAlone: a failed delivery to a
// sink removed from BATCHHOOK_SINKS is not made pending by a new version
// (no dispatcher would deliver it, and a pending delivery holds up the
// purge for ever); a rewrite already recorded by a refetch notes nothing.
func TestAChangeLeavesASinkNoLongerConfiguredAlone(t *testing.T) {
	s := openTest(t, t.TempDir())
	s.SetSinks([]string{"http", "exec"})
	exportBatch(t, s, "b1", t0)
	x := deliveryOf(t, s, "b1", "exec")
	if err := s.FailDelivery("b1", "exec", x.Generation, "exit", "exit status 1"); err != nil {
		t.Fatal(err)
	}
	s.SetSinks([]string{"http"})
	if moved, err := s.ExportChanged("b1", 1, t0); err != nil || moved != 1 {
		t.Fatalf("ExportChanged = %d, %v; want only http moved", moved, err)
	}
	if d := deliveryOf(t, s, "b1", "exec"); d.State != DeliveryFailed || d.Version != 0 {
		t.Fatalf("the unconfigured sink's delivery was moved: %+v", d)
	}
	e, _, err := s.BeginErasure("h", t0)
	if err != nil {
		t.Fatal(err)
	}
	if moved, noted, err := s.RecordRewrite(e.ID, "b1", 0, 1, t0); err != nil || noted || moved != 0 {
		t.Fatalf("RecordRewrite of a version already recorded = %d, %v, %v; want nothing", moved, noted, err)
	}
}

// TestRecordRewriteListsEverySinkThatMayHaveTheOldVersion: an erasure
// lists as may_have_received not only a delivery with parts acknowledged,
// but one whose attempt reached the sink without an acknowledgement (a
// 5xx, a timeout) and one whose attempt the change itself cut short: the
// sink may have read and kept that part. A delivery never tried is not
// listed.
func TestRecordRewriteListsEverySinkThatMayHaveTheOldVersion(t *testing.T) {
	s := openTest(t, t.TempDir())
	s.SetSinks([]string{"http", "nats", "kafka", "exec"})
	exportBatch(t, s, "b1", t0)
	h, n, k := deliveryOf(t, s, "b1", "http"), deliveryOf(t, s, "b1", "nats"), deliveryOf(t, s, "b1", "kafka")
	// http: its first part was on its way when the erasure changed the
	// export; nothing acknowledged, no attempt counted.
	if err := s.RetryDelivery("b1", "http", h.Generation, t0, KindExportChanged, "the export changed during the attempt", false); err != nil {
		t.Fatal(err)
	}
	// nats: one attempt reached the sink and timed out.
	if err := s.RetryDelivery("b1", "nats", n.Generation, t0.Add(time.Minute), "timeout", "no ack", true); err != nil {
		t.Fatal(err)
	}
	// kafka: two parts acknowledged.
	if err := s.MarkParts("b1", "kafka", k.Generation, 2); err != nil {
		t.Fatal(err)
	}
	// exec: queued, never tried.
	e, _, err := s.BeginErasure("h", t0)
	if err != nil {
		t.Fatal(err)
	}
	if _, noted, err := s.RecordRewrite(e.ID, "b1", 1, 1, t0); err != nil || !noted {
		t.Fatalf("RecordRewrite = %v, %v", noted, err)
	}
	recs, err := s.Erasures(false)
	if err != nil || len(recs) != 1 || len(recs[0].Batches) != 1 {
		t.Fatalf("erasures = %+v, %v", recs, err)
	}
	got := map[string]string{}
	for _, r := range recs[0].Batches[0].Sinks {
		got[r.Sink] = r.Received
	}
	want := map[string]string{"http": ReceivedMaybe, "nats": ReceivedMaybe, "kafka": ReceivedMaybe}
	if len(got) != len(want) || got["http"] != want["http"] || got["nats"] != want["nats"] || got["kafka"] != want["kafka"] {
		t.Fatalf("sinks listed %v, want %v (exec, never tried, not listed)", got, want)
	}
}
