package erasure

import (
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
	if ids, _ := w.st.ExportFileRemovals(); len(ids) != 0 {
		t.Fatalf("purge removals still listed: %v", ids)
	}
	if ids, _ := w.st.ExportRemovals(); len(ids) != 0 {
		t.Fatalf("export removals still listed: %v", ids)
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
