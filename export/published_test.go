package export

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestOpenReturnsTheManifestAsPublished(t *testing.T) {
	d := newTestDir(t)
	path := publish(t, d, "b1", false, `{"a":1}`, `{"a":2}`)
	snap, ok, err := d.Open("b1")
	if err != nil || !ok {
		t.Fatalf("Open = %v %v", ok, err)
	}
	onDisk, _ := os.ReadFile(filepath.Join(path, ManifestFile))
	if !bytes.Equal(snap.Raw, onDisk) || snap.Manifest.Items != 2 || snap.Manifest.BatchID != "b1" {
		t.Fatalf("Open = %q %+v, want the manifest on disk %q", snap.Raw, snap.Manifest, onDisk)
	}
	snap.Close()
	// A results file that no longer matches its manifest is not an export.
	if err := os.WriteFile(filepath.Join(path, ResultsFile), []byte("{\"a\":3}\n{\"a\":2}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := d.Open("b1"); ok || err != nil {
		t.Fatalf("Open of a tampered export = %v %v, want not ok", ok, err)
	}
	if _, ok, err := d.Open("missing"); ok || err != nil {
		t.Fatalf("Open of a missing export = %v %v", ok, err)
	}
}

func TestRemoveDeletesTheExportWithoutFollowingLinks(t *testing.T) {
	d := newTestDir(t)
	path := publish(t, d, "b1", false, `{"a":1}`)
	outside := t.TempDir()
	victim := filepath.Join(outside, "keep.txt")
	if err := os.WriteFile(victim, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, outside, filepath.Join(path, "planted"))
	if err := d.Remove("b1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("export still there: %v", err)
	}
	if _, err := os.Stat(victim); err != nil {
		t.Fatalf("Remove followed a link: %v", err)
	}
	if err := d.Remove("b1"); err != nil {
		t.Fatalf("second Remove = %v, want nil", err)
	}
	// A link in the export's place is removed itself, not its target.
	mustSymlink(t, outside, filepath.Join(d.Root(), "b2"))
	if err := d.Remove("b2"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(victim); err != nil {
		t.Fatalf("Remove followed the link in the export's place: %v", err)
	}
	if err := d.Remove("../x"); err == nil {
		t.Fatal("Remove accepted an unsafe id")
	}
}
