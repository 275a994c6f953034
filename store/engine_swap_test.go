package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

var t1 = time.Date(2026, 11, 24, 16, 0, 0, 0, time.UTC)

// oldAndBackup makes a data dir whose database holds batches old-0..2 and
// a backup file of it taken before batch only-old was recorded.
func oldAndBackup(t *testing.T) (dir, backup string) {
	t.Helper()
	dir = t.TempDir()
	s, err := Open(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := s.Record(note(fmt.Sprintf("old-%d", i), t0)); err != nil {
			t.Fatal(err)
		}
	}
	backup = backupToFile(t, s)
	if _, err := s.Record(note("only-old", t0)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, backup
}

// has opens the database file at path read-only and says whether batch id
// is in it.
func has(t *testing.T, path, id string) bool {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer db.Close()
	found := false
	db.View(func(tx *bolt.Tx) error {
		found = tx.Bucket(bucketBatches).Get([]byte(id)) != nil
		return nil
	})
	return found
}

func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, tempPrefix+"*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestRestoreSwapsInTheBackupAndKeepsTheOld(t *testing.T) {
	dir, backup := oldAndBackup(t)
	res, err := Restore(dir, backup, false, t1)
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, FileName)
	if has(t, db, "only-old") || !has(t, db, "old-2") {
		t.Fatal("the restored database is not the backup")
	}
	wantKept := filepath.Join(dir, "batchhook.db.bak-20261124T160000.000000000Z")
	if res.Kept != wantKept || !has(t, wantKept, "only-old") {
		t.Fatalf("kept %q, want %q holding the previous database", res.Kept, wantKept)
	}
	for _, p := range []string{db, wantKept} {
		if m, err := statMode(p); err != nil || m != 0o600 {
			t.Fatalf("%s mode %v (%v), want 0600", p, m, err)
		}
	}
	if res.Summary.Keys("batches") != 3 || len(leftovers(t, dir)) != 0 {
		t.Fatalf("summary %v, leftovers %v", res.Summary.Buckets, leftovers(t, dir))
	}
	s := openTest(t, dir) // the daemon opens it
	if _, err := s.Get("old-1"); err != nil {
		t.Fatalf("restored store: %v", err)
	}
}

func TestRestoreRefusesWhileTheDaemonHoldsTheLock(t *testing.T) {
	dir, backup := oldAndBackup(t)
	openTest(t, dir)
	_, err := Restore(dir, backup, false, t1)
	if !errors.Is(err, ErrDaemonRunning) || !strings.Contains(err.Error(), "daemon running? stop it first") {
		t.Fatalf("Restore under a running store = %v, want ErrDaemonRunning", err)
	}
	if _, err := Compact(dir, false, t1); !errors.Is(err, ErrDaemonRunning) {
		t.Fatalf("Compact under a running store = %v, want ErrDaemonRunning", err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*.bak-*")); len(m) != 0 || len(leftovers(t, dir)) != 0 {
		t.Fatalf("refused restore left %v %v", m, leftovers(t, dir))
	}
}

func TestRestoreRefusesABadBackupAndChangesNothing(t *testing.T) {
	dir, backup := oldAndBackup(t)
	data, _ := os.ReadFile(backup)
	cut := filepath.Join(t.TempDir(), "cut.db")
	os.WriteFile(cut, data[:len(data)-4096], 0o600)
	if _, err := Restore(dir, cut, false, t1); !errors.Is(err, ErrBadBackup) {
		t.Fatalf("Restore of a cut backup = %v, want ErrBadBackup", err)
	}
	if !has(t, filepath.Join(dir, FileName), "only-old") || len(leftovers(t, dir)) != 0 {
		t.Fatal("a refused restore changed the database or left a temporary file")
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*.bak-*")); len(m) != 0 {
		t.Fatalf("a refused restore kept %v", m)
	}
}

// TestRestoreOverADatabaseBboltRefuses: the reason to restore is often a
// damaged file; the lock is taken without bbolt opening it.
func TestRestoreOverADatabaseBboltRefuses(t *testing.T) {
	dir, backup := oldAndBackup(t)
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte("damaged"), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := Restore(dir, backup, false, t1)
	if err != nil {
		t.Fatal(err)
	}
	if !has(t, filepath.Join(dir, FileName), "old-0") || res.Kept == "" {
		t.Fatalf("restore over a damaged file: kept %q", res.Kept)
	}
}

// TestRestoreIntoAnEmptyDataDir: a directory without a database is
// refused, and left as it was, unless create asks for it.
func TestRestoreIntoAnEmptyDataDir(t *testing.T) {
	_, backup := oldAndBackup(t)
	empty := t.TempDir()
	dir := filepath.Join(empty, "data")
	for _, d := range []string{dir, empty} {
		if _, err := Restore(d, backup, false, t1); !errors.Is(err, ErrNoDatabase) || !strings.Contains(err.Error(), d) {
			t.Fatalf("restore into %s without create: %v, want ErrNoDatabase naming it", d, err)
		}
	}
	if _, err := Restore(dir, "/dev/null", true, t1); !errors.Is(err, ErrBadBackup) {
		t.Fatalf("restore of a bad backup with create: %v, want ErrBadBackup", err)
	}
	if entries, _ := os.ReadDir(empty); len(entries) != 0 {
		t.Fatalf("a refused restore wrote %v", entries)
	}
	res, err := Restore(dir, backup, true, t1)
	if err != nil {
		t.Fatal(err)
	}
	if res.Kept != "" || !has(t, filepath.Join(dir, FileName), "old-0") {
		t.Fatalf("restore into an empty dir: kept %q", res.Kept)
	}
}

// halfDeleted fills a store with records, deletes every other one, and
// closes it: the file keeps its size, half of it free pages.
func halfDeleted(t *testing.T, dir string) {
	t.Helper()
	s, err := Open(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	fillTestBuckets(t, s, 4, 2000, 500)
	err = s.db.Update(func(tx *bolt.Tx) error {
		for b := 0; b < 4; b++ {
			bk := tx.Bucket([]byte(fmt.Sprintf("test-%02d", b)))
			for k := 0; k < 2000; k += 2 {
				if err := bk.Delete([]byte(fmt.Sprintf("k%06d", k))); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// CompactFigures compacts the (closed) database in dir and logs its size
// before and after; it fails the test unless every bucket keeps its key
// count. The purge figure (100k batches reduced to tombstones, then
// compacted) is measured with it.
func CompactFigures(t *testing.T, dir string) SwapResult {
	t.Helper()
	before, err := Check(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Compact(dir, false, t1)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Summary.Buckets, before.Buckets) {
		t.Fatalf("compacted buckets %v\nwant %v", res.Summary.Buckets, before.Buckets)
	}
	t.Logf("compact: %d bytes before, %d after (%.0f%%)", res.Before, res.After, 100*float64(res.After)/float64(res.Before))
	return res
}

func TestCompactShrinksAndKeepsEveryKey(t *testing.T) {
	dir := t.TempDir()
	halfDeleted(t, dir)
	res := CompactFigures(t, dir)
	if res.After >= res.Before*3/4 {
		t.Fatalf("compaction of a half-deleted database: %d -> %d bytes, want under 3/4", res.Before, res.After)
	}
	if st, err := os.Stat(filepath.Join(dir, FileName)); err != nil || st.Size() != res.After || st.Mode().Perm() != 0o600 {
		t.Fatalf("database after compact: %v %v, want %d bytes 0600", st, err, res.After)
	}
	if res.Kept != "" || len(leftovers(t, dir)) != 0 {
		t.Fatalf("compact without keep kept %q, left %v", res.Kept, leftovers(t, dir))
	}
	s := openTest(t, dir)
	if sum, err := s.Summary(); err != nil || sum.Keys("test-03") != 1000 {
		t.Fatalf("compacted store: %v %v", sum.Buckets, err)
	}
}

func TestCompactKeepsThePreviousFileWhenAsked(t *testing.T) {
	dir := t.TempDir()
	halfDeleted(t, dir)
	res, err := Compact(dir, true, t1)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(res.Kept); err != nil || st.Size() != res.Before {
		t.Fatalf("kept %q: %v %v, want the %d-byte previous file", res.Kept, st, err, res.Before)
	}
}
