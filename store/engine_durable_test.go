package store

import (
	"errors"
	"os"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestReadWaitsForTheCommitItSees: a commit bbolt has made visible (meta
// page written) but that has not returned — its fdatasync still running —
// is not answered from: Known waits for the commit, and answers once it
// returned. The commit is made through bbolt directly, marking its key as
// RecordContext does, so the store has not seen it return: exactly the
// state between meta write and sync.
func TestReadWaitsForTheCommitItSees(t *testing.T) {
	s := openTest(t, t.TempDir())
	var id int
	if err := s.db.DB.Update(func(tx *bolt.Tx) error {
		id = tx.ID()
		s.db.mark(tx, lookupKey(bucketBatches, "b_syncing"))
		_, err := recordTx(tx, note("b_syncing", t0))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	answer := make(chan error, 1)
	go func() {
		known, err := s.Known("b_syncing")
		if err == nil && !known {
			err = errors.New("not known")
		}
		answer <- err
	}()
	select {
	case err := <-answer:
		t.Fatalf("Known answered (%v) while the commit it saw had not returned", err)
	case <-time.After(200 * time.Millisecond):
	}
	s.db.committed(id, true)
	select {
	case err := <-answer:
		if err != nil {
			t.Fatalf("Known after the commit returned: %v", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Known still waiting after the commit returned")
	}
}

// TestReadOfACommitThatFailsFails: the same visible commit then fails: the
// waiting read gets ErrFailed, never a "known".
func TestReadOfACommitThatFailsFails(t *testing.T) {
	s := openTest(t, t.TempDir())
	if err := s.db.DB.Update(func(tx *bolt.Tx) error {
		s.db.mark(tx, lookupKey(bucketBatches, "b_lost"))
		_, err := recordTx(tx, note("b_lost", t0))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	answer := make(chan error, 1)
	go func() {
		_, err := s.Known("b_lost")
		answer <- err
	}()
	time.Sleep(50 * time.Millisecond) // let it reach the wait (the test holds either way)
	s.db.fail(errors.Join(ErrFailed, errors.New("fdatasync: input/output error")))
	select {
	case err := <-answer:
		if !errors.Is(err, ErrFailed) {
			t.Fatalf("Known of a failed commit = %v, want ErrFailed", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Known still waiting after the commit failed")
	}
}

// TestFailedCommitFailsClosed: a commit that fails (here: its file handle
// is gone, so bbolt's write fails) fails the store for good: Failed is
// closed, Err wraps ErrFailed, every later read and write is refused (no
// "known" for what was recorded before either), the write is counted, and
// what committed before is on disk after a reopen, the failed record not.
func TestFailedCommitFailsClosed(t *testing.T) {
	dir := t.TempDir()
	var file *os.File
	s, err := open(dir, time.Second, func(path string, flag int, mode os.FileMode) (*os.File, error) {
		f, err := openNoFollow(path, flag, mode)
		file = f
		return f, err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Record(note("b_before", t0)); err != nil {
		t.Fatal(err)
	}
	if err := s.Err(); err != nil {
		t.Fatalf("Err on a healthy store = %v", err)
	}
	file.Close()
	if created, err := s.Record(note("b_failed", t0)); err == nil {
		t.Fatalf("Record with a failing commit = %v, nil", created)
	}
	select {
	case <-s.Failed():
	case <-time.After(3 * time.Second):
		t.Fatal("Failed not closed after a failed commit")
	}
	if err := s.Err(); !errors.Is(err, ErrFailed) {
		t.Fatalf("Err = %v, want ErrFailed", err)
	}
	if known, err := s.Known("b_before"); !errors.Is(err, ErrFailed) {
		t.Fatalf("Known after the failure = %v, %v; want ErrFailed", known, err)
	}
	if _, err := s.Record(note("b_after", t0)); !errors.Is(err, ErrFailed) {
		t.Fatalf("Record after the failure = %v, want ErrFailed", err)
	}
	if err := s.Ping(); !errors.Is(err, ErrFailed) {
		t.Fatalf("Ping after the failure = %v, want ErrFailed", err)
	}
	if _, err := s.Get("b_before"); !errors.Is(err, ErrFailed) {
		t.Fatalf("Get after the failure = %v, want ErrFailed", err)
	}
	if n := s.WriteErrors(); n != 1 {
		t.Fatalf("WriteErrors = %d, want 1", n)
	}
	s.Close() // the handle is gone: its error is expected

	s = openTest(t, dir)
	if known, err := s.Known("b_before"); err != nil || !known {
		t.Fatalf("b_before after reopen: %v, %v", known, err)
	}
	if known, err := s.Known("b_failed"); err != nil || known {
		t.Fatalf("the failed record after reopen: known=%v, %v", known, err)
	}
}
