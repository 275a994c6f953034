package export

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// PurgeAll deletes every batch it is given, with one sync of the root for
// them all; a bad id fails on its own, and a missing export is not an
// error.
func TestPurgeAllSyncsOnceForAGroup(t *testing.T) {
	d := newTestDir(t)
	for _, id := range []string{"b-1", "b-2", "b-3"} {
		publish(t, d, id, false, itemA1, itemB)
	}
	if _, err := d.Append("b-4", 0, []json.RawMessage{json.RawMessage(itemB)}); err != nil {
		t.Fatal(err) // staged only
	}
	var syncs atomic.Int32
	d.rootSync = func(root *os.File) error {
		syncs.Add(1)
		return root.Sync()
	}
	errs := d.PurgeAll([]string{"b-1", "b-2", "../b-3", "b-4", "never-exported", "b-3"})
	for i, want := range []bool{false, false, true, false, false, false} {
		if (errs[i] != nil) != want {
			t.Fatalf("errs = %v: entry %d wrong", errs, i)
		}
	}
	if n := syncs.Load(); n != 1 {
		t.Fatalf("%d syncs of the root for a group of six, want 1", n)
	}
	for _, id := range []string{"b-1", "b-2", "b-3"} {
		if _, err := os.Lstat(d.Path(id)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s still there after PurgeAll: %v", id, err)
		}
	}
	if got := partialNames(t, d); len(got) != 0 {
		t.Fatalf(".partial holds %v after PurgeAll", got)
	}
}

// When the root cannot be synced, no deletion of the group is durable, and
// every batch of it says so: the purger must keep each one's removal
// recorded, for the next pass.
func TestPurgeAllFailsTheWholeGroupWhenTheRootCannotBeSynced(t *testing.T) {
	d := newTestDir(t)
	publish(t, d, "b-1", false, itemA1, itemB)
	publish(t, d, "b-2", false, itemB)
	d.rootSync = func(*os.File) error { return errors.New("injected: EIO") }
	errs := d.PurgeAll([]string{"b-1", "b-2", "never-exported"})
	for i, err := range errs {
		if err == nil {
			t.Fatalf("entry %d of %v is nil although the root's sync failed", i, errs)
		}
	}
	d.rootSync = nil
	if errs := d.PurgeAll([]string{"b-1", "b-2"}); errs[0] != nil || errs[1] != nil {
		t.Fatalf("retried PurgeAll = %v", errs)
	}
}

// Manifests reads only the manifests: a results file that cannot be read
// (here a directory in its place) does not stop the purger from dating
// and recording the export, and a missing export is not an error.
func TestManifestsReadNoResults(t *testing.T) {
	d := newTestDir(t)
	publish(t, d, "b-1", false, itemA1, itemB)
	publish(t, d, "b-2", false, itemB)
	before, ok, err := d.Manifests([]string{"b-2"})
	if err != nil || !ok[0] || before[0].Items != 1 || before[0].SHA256 == "" {
		t.Fatalf("Manifests(b-2) = %+v, %v, %v", before, ok, err)
	}
	want := before[0]
	results := filepath.Join(d.Path("b-2"), ResultsFile)
	if err := os.Remove(results); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(results, 0o700); err != nil {
		t.Fatal(err)
	}
	ms, oks, err := d.Manifests([]string{"b-1", "b-2", "never-exported"})
	if err != nil {
		t.Fatal(err)
	}
	if !oks[0] || ms[0].Items != 2 || !oks[1] || ms[1].SHA256 != want.SHA256 || ms[1].Items != want.Items || oks[2] {
		t.Fatalf("Manifests = %+v, %v", ms, oks)
	}
	if _, _, err := d.Manifests([]string{"b-1", "../b-2"}); err == nil {
		t.Fatal("Manifests read a manifest outside the root")
	}
}
