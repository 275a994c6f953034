package store

import (
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// TestKeptCopiesNeverCollide: compact --keep twice at the same instant
// (fixed clock) and twice in the same second keeps four distinct copies,
// each the file it replaced, whose names sort in the order they were made.
func TestKeptCopiesNeverCollide(t *testing.T) {
	dir := t.TempDir()
	halfDeleted(t, dir)
	var kept []string
	for _, now := range []time.Time{t1, t1, t1.Add(300 * time.Millisecond), t1.Add(700 * time.Millisecond)} {
		res, err := Compact(dir, true, now)
		if err != nil {
			t.Fatalf("compact --keep at %v after %v: %v", now, kept, err)
		}
		if st, err := os.Stat(res.Kept); err != nil || st.Size() != res.Before {
			t.Fatalf("kept %q: %v %v, want the %d-byte previous file", res.Kept, st, err, res.Before)
		}
		kept = append(kept, filepath.Base(res.Kept))
	}
	sorted := append([]string(nil), kept...)
	sort.Strings(sorted)
	for i := range kept {
		if kept[i] != sorted[i] || (i > 0 && kept[i] == kept[i-1]) {
			t.Fatalf("kept names %v: want distinct, in sorted order", kept)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(dir, FileName+".bak-*")); len(m) != 4 {
		t.Fatalf("%d kept files, want 4: %v", len(m), m)
	}
}

// TestRestoreTwiceInOneSecond: two restores back to back, as an operator
// retrying one, both succeed and keep both previous files.
func TestRestoreTwiceInOneSecond(t *testing.T) {
	dir, backup := oldAndBackup(t)
	a, err := Restore(dir, backup, false, t1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Restore(dir, backup, false, t1.Add(time.Millisecond))
	if err != nil {
		t.Fatalf("second restore in the same second: %v", err)
	}
	if a.Kept == b.Kept || !has(t, a.Kept, "only-old") || has(t, b.Kept, "only-old") {
		t.Fatalf("kept %q then %q: want two files, the first holding the pre-restore database", a.Kept, b.Kept)
	}
}
