package store

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Backup writes a consistent snapshot of the database to w while the store
// keeps serving: bbolt's Tx.WriteTo inside one read transaction, so writers
// go on and the copy is the database as of one commit. size, when not nil,
// is told the snapshot's exact length before the first byte (an HTTP reply
// sets Content-Length from it, so a cut stream is seen as cut).
//
// The snapshot is streamed only once the commit it shows has returned
// (durableDB: a commit whose fsync has not returned is visible to readers,
// and one that fails would otherwise be in the copy). ctx is checked before
// every write: a caller that goes away ends the read transaction. While it
// is open, writes go on (the store maps 1 GiB at open: initialMmap); past
// that, a commit that grows the map waits for it.
// Backup takes no other lock of the store's.
func (s *Store) Backup(ctx context.Context, w io.Writer, size func(int64)) (int64, error) {
	if err := s.db.failure(); err != nil {
		return 0, err
	}
	var n int64
	err := s.db.DB.View(func(tx *bolt.Tx) error {
		if err := s.db.waitDurable(tx.ID()); err != nil {
			return err
		}
		if size != nil {
			size(tx.Size())
		}
		var err error
		n, err = tx.WriteTo(ctxWriter{ctx: ctx, w: w})
		return err
	})
	if err != nil && ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		// bbolt does not wrap the writer's error for the meta pages
		err = fmt.Errorf("%w: %v", ctx.Err(), err)
	}
	if err != nil {
		return n, fmt.Errorf("back up the database: %w", err)
	}
	return n, nil
}

// ctxWriter fails its writes once ctx is done.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}

// BucketCount is one top-level bucket of a database, its number of keys,
// and a digest of its content (sha256 over every key and value, in order):
// two databases whose buckets have equal digests hold the same records.
type BucketCount struct {
	Name   string `json:"name"`
	Keys   int    `json:"keys"`
	Digest string `json:"sha256"`
}

// Summary describes a database file: its size, the transaction it is at,
// and every bucket's key count and content digest. Equal Buckets mean
// equal records, whatever the files' layouts (a compacted file's differs).
type Summary struct {
	Size    int64         `json:"size"`
	TxID    int           `json:"txid"`
	Buckets []BucketCount `json:"buckets"`
}

// Keys returns the key count of bucket name (0 when absent).
func (s Summary) Keys(name string) int {
	for _, b := range s.Buckets {
		if b.Name == name {
			return b.Keys
		}
	}
	return 0
}

// Summary counts the keys of every bucket of the open store, in one read
// transaction.
func (s *Store) Summary() (Summary, error) {
	var sum Summary
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		sum, err = summarize(tx)
		return err
	})
	return sum, err
}

func summarize(tx *bolt.Tx) (Summary, error) {
	sum := Summary{Size: tx.Size(), TxID: tx.ID()}
	err := tx.ForEach(func(name []byte, b *bolt.Bucket) error {
		n := 0
		h := sha256.New()
		var lens [16]byte
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			n++
			// Length-prefixed, so no two different sequences hash alike;
			// a nested bucket (v nil) hashes as an empty value.
			binary.BigEndian.PutUint64(lens[:8], uint64(len(k)))
			binary.BigEndian.PutUint64(lens[8:], uint64(len(v)))
			h.Write(lens[:])
			h.Write(k)
			h.Write(v)
		}
		sum.Buckets = append(sum.Buckets, BucketCount{Name: string(name), Keys: n, Digest: hex.EncodeToString(h.Sum(nil))})
		return nil
	})
	sort.Slice(sum.Buckets, func(i, j int) bool { return sum.Buckets[i].Name < sum.Buckets[j].Name })
	return sum, err
}

// ErrBadBackup is returned by Check (and so by Restore) for a file that is
// not a whole, consistent batchhook database.
var ErrBadBackup = errors.New("not a consistent batchhook database")

// checkLockWait bounds how long Check waits for a shared lock on path: a
// database that a running daemon holds is not one to check.
const checkLockWait = 2 * time.Second

// Check opens the database file at path read-only (never creating it, never
// following a symbolic link), runs bbolt's consistency check and counts the
// keys of every bucket. A file that does not open, fails the check or lacks
// the batches bucket is ErrBadBackup, with the first problem found.
func Check(path string) (Summary, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return Summary{}, fmt.Errorf("check %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return Summary{}, fmt.Errorf("check %s: %w: not a regular file", path, ErrBadBackup)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: checkLockWait, OpenFile: openNoFollow})
	if errors.Is(err, berrors.ErrTimeout) {
		return Summary{}, fmt.Errorf("check %s: %w (is a batchhook running on it?)", path, ErrLocked)
	}
	if err != nil {
		return Summary{}, fmt.Errorf("check %s: %w: %w", path, ErrBadBackup, err)
	}
	defer db.Close()
	var sum Summary
	err = db.View(func(tx *bolt.Tx) error {
		if tx.Size() > st.Size() {
			return fmt.Errorf("%w: file is %d bytes, its pages need %d (cut short?)", ErrBadBackup, st.Size(), tx.Size())
		}
		var first error
		for cerr := range tx.Check() { // read to the end: the checker's goroutine sends them all
			if first == nil {
				first = cerr
			}
		}
		if first != nil {
			return fmt.Errorf("%w: %w", ErrBadBackup, first)
		}
		if tx.Bucket(bucketBatches) == nil {
			return fmt.Errorf("%w: no %s bucket", ErrBadBackup, bucketBatches)
		}
		var err error
		sum, err = summarize(tx)
		sum.Size = st.Size()
		return err
	})
	if err != nil {
		return Summary{}, fmt.Errorf("check %s: %w", path, err)
	}
	return sum, nil
}
