package export

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batchhook/batchhook/store"
)

// TestEveryChangeOfContentMakesTheNextVersion: a first export is version 0,
// an erasure's rewrite and a refetch's replacement each the next, and a
// refetch read before the erasure (its batch record still says 0) still
// comes after the erasure's version: under the batch's lock the manifest in
// place is the last word.
func TestEveryChangeOfContentMakesTheNextVersion(t *testing.T) {
	d := newTestDir(t)
	publish(t, d, "b-1", false, itemA1, itemB)
	if m, _ := checkExport(t, d, "b-1"); m.Version == nil || *m.Version != 0 {
		t.Fatalf("first export version %v, want 0", m.Version)
	}
	if n, v, in, err := d.Erase("b-1", 0, "cpf", matchA, nil); err != nil || n != 1 || v != 1 || !in {
		t.Fatalf("Erase = %d, %d, %v, %v; want 1 item, version 1", n, v, in, err)
	}
	publish(t, d, "b-1", true, itemB, itemNoCP) // a refetch whose batch record says version 0
	m, lines := checkExport(t, d, "b-1")
	if m.VersionOr(-1) != 2 || len(lines) != 2 {
		t.Fatalf("after the refetch: version %d, %d items; want version 2", m.VersionOr(-1), len(lines))
	}
	// A refetch whose record is ahead of the file (the export in place was
	// written before versions) takes the record's next.
	b := store.Batch{ID: "b-1", Refetch: true, ExportVersion: 7}
	if got := nextAfter(t, d, b); got != 8 {
		t.Fatalf("refetch of a version-7 record: version %d, want 8", got)
	}
	// A record from before versions counts its refetches as its version.
	legacy := store.Batch{ID: "b-1", Refetches: 11}
	if legacy.Version() != 11 {
		t.Fatalf("legacy record version %d, want its 11 refetches", legacy.Version())
	}
}

// nextAfter publishes b (a refetch) over the export in place and returns
// the version it got.
func nextAfter(t *testing.T, d *Dir, b store.Batch) int {
	t.Helper()
	n, err := d.Append(b.ID, 0, []json.RawMessage{json.RawMessage(itemB)})
	if err != nil {
		t.Fatal(err)
	}
	b.Notification = store.Notification{BatchID: b.ID}
	b.Checkpoint = store.Checkpoint{Done: true, Items: 1, Pages: 1, StagedBytes: n}
	_, v, err := d.Publish(b, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := checkExport(t, d, b.ID); m.VersionOr(-1) != v {
		t.Fatalf("Publish said version %d, the manifest %d", v, m.VersionOr(-1))
	}
	return v
}

// TestASnapshotReadsWhatItCheckedAndAChangeWaitsForIt: a sink's snapshot
// keeps reading the items its manifest counts while an erasure swaps the
// export; the erasure tells the snapshot (Changed) and returns only once it
// is closed, so nothing reads the erased content after the erasure returns.
func TestASnapshotReadsWhatItCheckedAndAChangeWaitsForIt(t *testing.T) {
	for _, withExchange := range []bool{true, false} {
		d := newTestDir(t)
		if !withExchange {
			d.exchange = noExchange
		}
		publish(t, d, "b-1", false, itemA1, itemB, itemA2)
		snap, ok, err := d.Open("b-1")
		if err != nil || !ok {
			t.Fatalf("Open = %v, %v", ok, err)
		}
		erased := make(chan error, 1)
		go func() {
			_, _, _, err := d.Erase("b-1", 0, "cpf", matchA, nil)
			erased <- err
		}()
		select {
		case <-snap.Changed():
		case <-time.After(10 * time.Second):
			t.Fatal("the erasure did not tell the open snapshot")
		}
		select {
		case err := <-erased:
			t.Fatalf("the erasure returned (%v) while a snapshot of the old content was open", err)
		default:
		}
		got, err := io.ReadAll(snap.Items())
		if err != nil {
			t.Fatal(err)
		}
		if lines := strings.Count(string(got), "\n"); int64(lines) != snap.Manifest.Items || lines != 3 {
			t.Fatalf("snapshot read %d lines, its manifest counts %d (want the 3 it checked)", lines, snap.Manifest.Items)
		}
		if err := snap.Close(); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-erased:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the erasure did not return once the snapshot was closed")
		}
		after, ok, err := d.Open("b-1")
		if err != nil || !ok || after.Manifest.Items != 1 || after.Manifest.VersionOr(-1) != 1 {
			t.Fatalf("snapshot after the erasure: %v %v %+v", ok, err, after)
		}
		select {
		case <-after.Changed():
			t.Fatal("a snapshot taken after the change is told of it")
		default:
		}
		after.Close()
		after.Close() // twice is harmless
	}
}

// TestAnExportIsInPlaceOnlyOnceItsEntryIsSynced: when the sync of the root
// after the rename fails, neither a retried Publish nor Published may say
// the export is in place until a sync of the root has succeeded: the batch
// would be recorded exported (and delivered) while a power loss could take
// the directory away.
func TestAnExportIsInPlaceOnlyOnceItsEntryIsSynced(t *testing.T) {
	d := newTestDir(t)
	var fail atomic.Bool
	var syncs atomic.Int32
	d.rootSync = func(root *os.File) error {
		syncs.Add(1)
		if fail.Load() {
			return errors.New("injected: EIO")
		}
		return root.Sync()
	}
	items := []json.RawMessage{json.RawMessage(itemB)}
	n, err := d.Append("b-1", 0, items)
	if err != nil {
		t.Fatal(err)
	}
	b := store.Batch{ID: "b-1", Notification: store.Notification{BatchID: "b-1"},
		Checkpoint: store.Checkpoint{Done: true, Items: 1, Pages: 1, StagedBytes: n}}
	fail.Store(true)
	if _, _, err := d.Publish(b, time.Now()); err == nil {
		t.Fatal("Publish succeeded although the root's sync failed")
	}
	if _, _, err := d.Publish(b, time.Now()); err == nil {
		t.Fatal("a retried Publish found the export in place and said so without a sync of the root")
	}
	if _, _, _, ok, err := d.Published("b-1"); ok || err == nil {
		t.Fatalf("Published = %v, %v while the root cannot be synced; want an error", ok, err)
	}
	fail.Store(false)
	before := syncs.Load()
	if _, _, _, ok, err := d.Published("b-1"); !ok || err != nil {
		t.Fatalf("Published = %v, %v", ok, err)
	}
	if _, v, err := d.Publish(b, time.Now()); err != nil || v != 0 {
		t.Fatalf("retried Publish = %d, %v", v, err)
	}
	if got := syncs.Load() - before; got != 2 {
		t.Fatalf("%d syncs of the root for Published and a retried Publish, want 2", got)
	}
}

// TestARewriteCutShortIsFinishedByTheNextErase: the swap of a rewrite went
// through but the root's sync failed, so the erasure did not record it and
// the old export (with the CPF) is still in .partial. The next erase finds
// nothing left to remove in the export, yet syncs the root, removes the old
// copy, and reports the unrecorded version to settle.
func TestARewriteCutShortIsFinishedByTheNextErase(t *testing.T) {
	d := newTestDir(t)
	publish(t, d, "b-1", false, itemA1, itemB)
	var fail atomic.Bool
	d.rootSync = func(root *os.File) error {
		if fail.Load() {
			return errors.New("injected: EIO")
		}
		return root.Sync()
	}
	fail.Store(true)
	settled := 0
	if _, _, _, err := d.Erase("b-1", 0, "cpf", matchA, func(int64, int) error { settled++; return nil }); err == nil || settled != 0 {
		t.Fatalf("Erase with the root's sync failing = %v (settle called %d times); want an error and no settle", err, settled)
	}
	if len(partialNames(t, d)) == 0 {
		t.Fatal("the test wants the old export left in .partial by the cut-short rewrite")
	}
	fail.Store(false)
	var got [2]int64
	n, v, in, err := d.Erase("b-1", 0, "cpf", matchA, func(items int64, version int) error {
		got = [2]int64{items, int64(version)}
		return nil
	})
	if err != nil || n != 0 || v != 1 || !in || got != [2]int64{0, 1} {
		t.Fatalf("second Erase = %d, %d, %v, %v, settle %v; want 0 items, version 1 in place, settle(0, 1)", n, v, in, err, got)
	}
	if names := partialNames(t, d); len(names) != 0 {
		t.Fatalf(".partial still holds %v (the old export, with the erased CPF)", names)
	}
}
