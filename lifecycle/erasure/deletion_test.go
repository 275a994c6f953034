package erasure

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/store"
)

// deliverAll records every configured sink's delivery of id as delivered.
func (w *world) deliverAll(t *testing.T, id string, dropExport bool) bool {
	t.Helper()
	var remove bool
	for _, name := range w.st.Sinks() {
		d, _, err := w.st.NextDelivery(name, t0, func(b string) bool { return b != id })
		if err != nil || d == nil {
			t.Fatalf("NextDelivery %s = %+v, %v", name, d, err)
		}
		r, err := w.st.Delivered(id, name, d.Generation, t0, dropExport)
		if err != nil {
			t.Fatal(err)
		}
		remove = remove || r
	}
	return remove
}

// TestAnErasureFinishesADeletionThatWasCutShort: the purge of b-1 is
// committed but its files are still on disk (the deletion failed and waits
// for the next pass), and the removal of b-2 is recorded (every sink has it
// and file is not a sink) but not done. The erasure may not say done with
// the CPF still on disk: it finishes both deletions first.
func TestAnErasureFinishesADeletionThatWasCutShort(t *testing.T) {
	w := newWorld(t)
	w.export(t, "b-1", itemA, itemB)
	w.export(t, "b-2", itemADigs)
	w.deliverAll(t, "b-1", false)
	if _, err := w.st.PurgeExport("b-1", store.ExportPurge{ExportedAt: t0}, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if !w.deliverAll(t, "b-2", true) {
		t.Fatal("the removal of b-2 was not recorded")
	}
	e, err := w.service(t, nil).Erase(cpfA)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Unrewritten) != 0 {
		t.Fatalf("unrewritten %v", e.Unrewritten)
	}
	for _, id := range []string{"b-1", "b-2"} {
		if _, err := os.Stat(w.dir.Path(id)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the erasure is done and the export of %s, whose deletion was recorded, is still on disk (%v)", id, err)
		}
	}
	if rs, _ := w.st.FileRemovals(); len(rs) != 0 {
		t.Fatalf("file removals still listed: %v", rs)
	}
}

// failPurge is the export root with Purge failing.
type failPurge struct{ *crashOn }

func (failPurge) Purge(string) error { return errors.New("injected: cannot delete") }

// TestADeletionTheErasureCannotFinishIsListed: when the recorded deletion
// fails again, the erasure lists the export as unrewritten rather than
// saying done without it.
func TestADeletionTheErasureCannotFinishIsListed(t *testing.T) {
	w := newWorld(t)
	w.export(t, "b-1", itemA)
	w.deliverAll(t, "b-1", false)
	if _, err := w.st.PurgeExport("b-1", store.ExportPurge{ExportedAt: t0}, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	e, err := w.service(t, failPurge{&crashOn{dir: w.dir}}).Erase(cpfA)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(e.Unrewritten, []string{"b-1"}) {
		t.Fatalf("unrewritten %v, want [b-1]", e.Unrewritten)
	}
	if !strings.Contains(w.logs.String(), `"event":"erasure_export_failed"`) {
		t.Fatalf("no erasure_export_failed line: %s", w.logs)
	}
}

// crashAfterSwap rewrites the export of id, then plays a crash before the
// erasure notes it or moves its deliveries.
type crashAfterSwap struct{ crashOn }

func (f crashAfterSwap) Erase(id string, base int, field string, match func(string) bool, settle func(int64, int) error) (int64, int, bool, error) {
	if id == f.id {
		f.dir.Erase(id, base, field, match, nil)
		panic(crash{})
	}
	return f.dir.Erase(id, base, field, match, settle)
}

// TestAResumedErasureNotesARewriteACrashLeftUnrecorded: the daemon dies
// right after the swap of a rewritten export. The resumed erasure finds
// nothing left to remove there, yet its record still lists the sinks that
// had received the old version (the operator erases there), and the
// undelivered deliveries move to the new version.
func TestAResumedErasureNotesARewriteACrashLeftUnrecorded(t *testing.T) {
	w := newWorld(t)
	w.export(t, "b-1", itemA, itemB)
	d, _, err := w.st.NextDelivery("http", t0, nil)
	if err != nil || d == nil {
		t.Fatal(d, err)
	}
	if _, err := w.st.Delivered("b-1", "http", d.Generation, t0, false); err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if r := recover(); r != (crash{}) {
				t.Fatalf("recovered %v, want the injected crash", r)
			}
		}()
		w.service(t, crashAfterSwap{crashOn{dir: w.dir, id: "b-1"}}).Erase(cpfA)
	}()
	done, err := w.service(t, nil).Resume()
	if err != nil || len(done) != 1 {
		t.Fatalf("Resume = %+v, %v", done, err)
	}
	bs := done[0].Batches
	if len(bs) != 1 || bs[0].BatchID != "b-1" || bs[0].Version != 1 || len(bs[0].Sinks) != 1 ||
		bs[0].Sinks[0] != (store.SinkReceipt{Sink: "http", Received: store.ReceivedDelivered, Version: 0}) {
		t.Fatalf("resumed record lists %+v; want b-1 with http delivered version 0", bs)
	}
	ds, _ := w.st.Deliveries("b-1")
	for _, x := range ds {
		switch {
		case x.Sink == "http" && (x.State != store.DeliveryDelivered || x.Version != 0):
			t.Errorf("the delivered http delivery changed: %+v", x)
		case x.Sink == "kafka" && (x.State != store.DeliveryPending || x.Version != 1):
			t.Errorf("kafka was not moved to version 1: %+v", x)
		}
	}
}

// TestAnErasureReachesARefetchOfARemovedExport: every sink had b-1 and file
// is not a sink, so its export was removed; an operator refetched it, and
// its new export (published from pages staged before the erasure was
// recorded) is in place while the batch still says export_removed. The
// erasure must rewrite it, not skip it.
func TestAnErasureReachesARefetchOfARemovedExport(t *testing.T) {
	w := newWorld(t)
	w.export(t, "b-1", itemA, itemB)
	if !w.deliverAll(t, "b-1", true) {
		t.Fatal("the removal was not recorded")
	}
	if err := w.dir.Remove("b-1"); err != nil {
		t.Fatal(err)
	}
	if err := w.st.FileRemovalDone(store.FileRemoval{BatchID: "b-1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.st.Refetch("b-1", 7*24*time.Hour, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	b, _, err := w.st.Lease(t0.Add(time.Minute))
	if err != nil || b == nil || !b.ExportRemoved {
		t.Fatalf("lease = %+v, %v; want the refetched batch, still export_removed", b, err)
	}
	size, err := w.dir.Append("b-1", 0, []json.RawMessage{json.RawMessage(itemA), json.RawMessage(itemB)})
	if err != nil {
		t.Fatal(err)
	}
	b.Checkpoint = store.Checkpoint{Done: true, Items: 2, Pages: 1, StagedBytes: size}
	if _, _, err := w.dir.Publish(*b, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.service(t, nil).Erase(cpfA); err != nil {
		t.Fatal(err)
	}
	if got := w.results(t, "b-1"); got != itemB+"\n" {
		t.Fatalf("the refetched export after the erasure holds %q; want only the other person's item", got)
	}
}
