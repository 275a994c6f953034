package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// fillTestBuckets adds n test buckets of keys keys each (values of size
// bytes) in one transaction, beside the store's own.
func fillTestBuckets(t *testing.T, s *Store, n, keys, size int) {
	t.Helper()
	err := s.db.Update(func(tx *bolt.Tx) error {
		for b := 0; b < n; b++ {
			bk, err := tx.CreateBucketIfNotExists([]byte(fmt.Sprintf("test-%02d", b)))
			if err != nil {
				return err
			}
			for k := 0; k < keys; k++ {
				if err := bk.Put([]byte(fmt.Sprintf("k%06d", k)), bytes.Repeat([]byte{byte(k)}, size)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// backupToFile backs s up into a new file and returns its path.
func backupToFile(t *testing.T, s *Store) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "backup.db")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	var announced int64 = -1
	n, err := s.Backup(context.Background(), f, func(size int64) { announced = size })
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if n != announced {
		t.Fatalf("Backup wrote %d bytes, announced %d", n, announced)
	}
	return path
}

func TestBackupHasEveryBucketAndRecord(t *testing.T) {
	s := openTest(t, t.TempDir())
	for i := 0; i < 300; i++ {
		if _, err := s.Record(note(fmt.Sprintf("b%04d", i), t0)); err != nil {
			t.Fatal(err)
		}
	}
	fillTestBuckets(t, s, 20, 200, 100)
	live, err := s.Summary()
	if err != nil {
		t.Fatal(err)
	}
	if live.Keys("batches") != 300 || live.Keys("test-19") != 200 {
		t.Fatalf("live summary %+v: want 300 batches and 200 keys in test-19", live.Buckets)
	}
	got, err := Check(backupToFile(t, s))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Buckets, live.Buckets) {
		t.Fatalf("backup buckets %v\nwant %v", got.Buckets, live.Buckets)
	}
	if got.TxID != live.TxID {
		t.Fatalf("backup at txid %d, live store at %d", got.TxID, live.TxID)
	}
}

// TestBackupDuringWritesIsOneCommit: writers commit pairs of keys (one in
// each of two buckets, in one transaction) and batch records while backups
// run; each backup must open, pass bbolt's check and hold whole pairs only.
func TestBackupDuringWritesIsOneCommit(t *testing.T) {
	s := openTest(t, t.TempDir())
	err := s.db.Update(func(tx *bolt.Tx) error {
		for _, n := range []string{"pair-a", "pair-b"} {
			if _, err := tx.CreateBucket([]byte(n)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var written atomic.Int64
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				k := []byte(fmt.Sprintf("%d-%06d", g, i))
				err := s.db.Update(func(tx *bolt.Tx) error {
					v := bytes.Repeat([]byte("x"), 512)
					if err := tx.Bucket([]byte("pair-a")).Put(k, v); err != nil {
						return err
					}
					return tx.Bucket([]byte("pair-b")).Put(k, v)
				})
				if err == nil && i%4 == 0 {
					_, err = s.Record(note(fmt.Sprintf("w%d-%06d", g, i), t0))
				}
				if err != nil {
					t.Error(err)
					return
				}
				written.Add(1)
			}
		}(g)
	}
	var sizes []int
	for i := 0; i < 5; i++ {
		deadline := time.Now().Add(20 * time.Second)
		for written.Load() < int64(200*(i+1)) && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond) // let the writers get ahead
		}
		path := backupToFile(t, s)
		sum, err := Check(path)
		if err != nil {
			t.Fatal(err)
		}
		if a, b := sum.Keys("pair-a"), sum.Keys("pair-b"); a != b || a == 0 {
			t.Fatalf("backup %d has %d keys in pair-a and %d in pair-b: not one commit", i, a, b)
		}
		sizes = append(sizes, sum.Keys("pair-a"))
	}
	close(stop)
	wg.Wait()
	if !slices.IsSorted(sizes) || sizes[0] == sizes[len(sizes)-1] {
		t.Fatalf("successive backups hold %v pairs: want a growing count", sizes)
	}
}

// cancelWriter cancels its context at its first write and counts writes.
type cancelWriter struct {
	cancel context.CancelFunc
	writes int
}

func (w *cancelWriter) Write(p []byte) (int, error) {
	w.writes++
	w.cancel()
	return len(p), nil
}

func TestBackupEndsItsReadTransactionWhenTheCallerGoes(t *testing.T) {
	s := openTest(t, t.TempDir())
	fillTestBuckets(t, s, 4, 500, 1000) // a few MB: many writes
	ctx, cancel := context.WithCancel(context.Background())
	w := &cancelWriter{cancel: cancel}
	_, err := s.Backup(ctx, w, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Backup after cancel = %v, want context.Canceled", err)
	}
	if w.writes != 1 {
		t.Fatalf("Backup wrote %d times after the cancel, want 1", w.writes)
	}
	if n := s.db.Stats().OpenTxN; n != 0 {
		t.Fatalf("%d read transactions still open after Backup returned", n)
	}
}

func TestBackupOfAFailedStoreIsRefused(t *testing.T) {
	s := openTest(t, t.TempDir())
	s.db.fail(fmt.Errorf("%w: test", ErrFailed))
	if _, err := s.Backup(context.Background(), io.Discard, nil); !errors.Is(err, ErrFailed) {
		t.Fatalf("Backup of a failed store = %v, want ErrFailed", err)
	}
}

func TestCheckRefusesWhatIsNotAWholeDatabase(t *testing.T) {
	s := openTest(t, t.TempDir())
	fillTestBuckets(t, s, 2, 2000, 200)
	good := backupToFile(t, s)
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	other := filepath.Join(dir, "other.db") // a bbolt file, not batchhook's
	db, err := bolt.Open(other, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("x")); return err })
	db.Close()
	for name, path := range map[string]string{
		"cut in half":  write("half.db", data[:len(data)/2]),
		"pages zeroed": write("zeroed.db", zeroPages(data, 4, len(data)/4096-1)),
		"garbage":      write("garbage.db", bytes.Repeat([]byte("not a database "), 1000)),
		"empty":        write("empty.db", nil),
		"other bbolt":  other,
	} {
		if _, err := Check(path); !errors.Is(err, ErrBadBackup) {
			t.Errorf("%s: Check = %v, want ErrBadBackup", name, err)
		}
	}
	if _, err := Check(good); err != nil {
		t.Fatalf("the whole backup: %v", err)
	}
}

// zeroPages returns data with its 4 KiB pages from to to (exclusive)
// zeroed: the size and the meta pages stay right, the tree does not.
func zeroPages(data []byte, from, to int) []byte {
	out := bytes.Clone(data)
	clear(out[from*4096 : to*4096])
	return out
}

// TestBackupWaitsForTheCommitItSees: a commit bbolt made visible but the
// store has not seen return (its fdatasync running) is not streamed until
// it returns; if it fails instead, the backup fails and writes nothing.
func TestBackupWaitsForTheCommitItSees(t *testing.T) {
	for _, outcome := range []string{"returns", "fails"} {
		t.Run(outcome, func(t *testing.T) {
			s := openTest(t, t.TempDir())
			var id int
			if err := s.db.DB.Update(func(tx *bolt.Tx) error {
				id = tx.ID()
				_, err := recordTx(tx, note("b_syncing", t0))
				return err
			}); err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			answer := make(chan error, 1)
			go func() {
				_, err := s.Backup(context.Background(), &buf, nil)
				answer <- err
			}()
			select {
			case err := <-answer:
				t.Fatalf("Backup finished (%v) while the commit it saw had not returned", err)
			case <-time.After(200 * time.Millisecond):
			}
			if outcome == "returns" {
				s.db.committed(id, true)
			} else {
				s.db.fail(errors.Join(ErrFailed, errors.New("fdatasync: input/output error")))
			}
			select {
			case err := <-answer:
				if outcome == "returns" && (err != nil || buf.Len() == 0) {
					t.Fatalf("Backup after the commit returned: %v, %d bytes", err, buf.Len())
				}
				if outcome == "fails" && (!errors.Is(err, ErrFailed) || buf.Len() != 0) {
					t.Fatalf("Backup of a failed commit = %v with %d bytes, want ErrFailed and none", err, buf.Len())
				}
			case <-time.After(3 * time.Second):
				t.Fatal("Backup still waiting after the commit ended")
			}
		})
	}
}

// blockedWriter blocks every write until release is closed.
type blockedWriter struct {
	started chan struct{}
	release chan struct{}
	once    sync.Once
}

func (b *blockedWriter) Write(p []byte) (int, error) {
	b.once.Do(func() { close(b.started) })
	<-b.release
	return len(p), nil
}

// TestWritesGoOnWhileABackupStreams: a backup stuck on its client holds a
// read transaction; commits that grow the database well past its first
// memory map must still return (bbolt remaps only with no reader open).
func TestWritesGoOnWhileABackupStreams(t *testing.T) {
	s := openTest(t, t.TempDir())
	w := &blockedWriter{started: make(chan struct{}), release: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		_, err := s.Backup(context.Background(), w, nil)
		done <- err
	}()
	<-w.started
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		fillTestBuckets(t, s, 8, 1000, 1000) // ~8 MB: the file grows from 32 KiB
	}()
	select {
	case <-wrote:
	case <-time.After(10 * time.Second):
		close(w.release)
		t.Fatal("writes waited behind a backup's read transaction")
	}
	close(w.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
