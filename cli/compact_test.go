package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/store"
)

// TestCompactSaysWhenTheFileGrew: a backup of a small database is exactly
// its pages long, and bbolt sizes the compacted copy in its own steps, so
// compacting it gives a larger file. The line must say so, not print a
// ratio over 100% as if compaction had worked.
func TestCompactSaysWhenTheFileGrew(t *testing.T) {
	src := t.TempDir()
	st, err := store.Open(src, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	// Enough records that the backup (every page it needs, no more) lies
	// midway between two of bbolt's file sizes (about 96 KiB, between 64
	// and 128): with 20 it filled 64 KiB exactly once the store gained two
	// indexes, and the compacted copy was the same size.
	for i := range 43 {
		if _, err := st.Record(store.Notification{Event: "batch.completed", BatchID: fmt.Sprintf("b%d", i), Status: "completed",
			ReceivedAt: now, Raw: []byte("{}")}); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	f, err := os.OpenFile(filepath.Join(dir, store.FileName), os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Backup(context.Background(), f, nil); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BATCHHOOK_EXPORT_DIR", "")
	out, errOut, code := runIn(t, compactCmd, "--data-dir", dir)
	if code != 0 {
		t.Fatalf("compact = %d: %s", code, errOut)
	}
	var before, after int64
	if _, err := fmt.Sscanf(out[strings.Index(out, ": ")+2:], "%d bytes before, %d after", &before, &after); err != nil || after <= before {
		t.Fatalf("compact of a backup-sized file: %v; want a file that grew, got\n%s", err, out)
	}
	if want := fmt.Sprintf("(%d bytes larger: bbolt grows a new file in steps", after-before); !strings.Contains(out, want) || strings.Contains(out, "%") {
		t.Fatalf("compact output when the file grew:\n%s\nwant %q and no percentage", out, want)
	}

	// Compacted again, the file is already bbolt's size: the same.
	if out, errOut, code = runIn(t, compactCmd, "--data-dir", dir); code != 0 || !strings.Contains(out, "(the same size: no free pages to give back)") {
		t.Fatalf("compact of a compacted file = %d\n%s%s", code, out, errOut)
	}
}

// TestCompactSaysWhatItFreed: a database with room to give back (a new
// store is preallocated) shrinks, and the line says by how much.
func TestCompactSaysWhatItFreed(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BATCHHOOK_EXPORT_DIR", "")
	out, errOut, code := runIn(t, compactCmd, "--data-dir", dir)
	if code != 0 || !regexpLine(out, `^compacted .*: (\d+) bytes before, (\d+) after \(\d+ bytes freed, \d+\.\d% of the size before\)$`) {
		t.Fatalf("compact = %d\n%s%s", code, out, errOut)
	}
}
