package store

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The by-state index lists one state's batches without reading the
// others: bucketByState holds (state, 0, created time, id) for every
// batch, kept by setState in the transaction that moves the batch. A
// year's store holds millions of purged tombstones beside a few hundred
// queued batches, and a page of "queued" read through the records bucket
// decoded every record on its way.
//
// Records written before the index existed are added by
// BackfillStateIndex, which the daemon runs in the background after it is
// ready, a chunk a transaction; until it marks the index complete, List by
// state reads the records bucket as before. A batch moved meanwhile is
// indexed by setState and found again, unchanged, by the backfill.
var bucketByState = []byte("by_state")

// bucketByStateCounts counts the index's entries by state, kept with
// them. The index is trusted only while these equal the batch counts
// (bucketCounts): a binary older than the index that ran on the database
// moved or added batches without indexing them, and the counts then
// differ, so List reads the records again and the next backfill rebuilds
// the index.
var bucketByStateCounts = []byte("by_state_counts")

// Meta keys of the backfill: done once every record is indexed; resume is
// the records key the next chunk starts after.
var (
	byStateDone   = []byte("\x00by-state-backfilled")
	byStateResume = []byte("\x00by-state-resume")
)

// byStateChunk is how many records one backfill transaction reads: each
// holds the write lock for a few milliseconds, so acks go on between them.
const byStateChunk = 2000

func byStatePrefix(s State) []byte { return append([]byte(s), 0) }

func byStateKey(s State, created time.Time, id string) []byte {
	return append(byStatePrefix(s), timeKey(created, id)...)
}

// indexByState moves b's entry from state from (none when empty) to to.
func indexByState(tx *bolt.Tx, b *Batch, from, to State) error {
	bk, counts, err := byStateBuckets(tx)
	if err != nil {
		return fmt.Errorf("by-state index: %w", err)
	}
	if from != "" {
		if err := unindexByState(bk, counts, byStateKey(from, b.CreatedAt, b.ID), from); err != nil {
			return fmt.Errorf("by-state index: %w", err)
		}
	}
	if err := indexKeyByState(bk, counts, byStateKey(to, b.CreatedAt, b.ID), to); err != nil {
		return fmt.Errorf("by-state index: %w", err)
	}
	return nil
}

func byStateBuckets(tx *bolt.Tx) (idx, counts *bolt.Bucket, err error) {
	if idx, err = tx.CreateBucketIfNotExists(bucketByState); err != nil {
		return nil, nil, err
	}
	idx.FillPercent = appendFill
	counts, err = tx.CreateBucketIfNotExists(bucketByStateCounts)
	return idx, counts, err
}

// indexed reports whether bk holds key. The index's values are empty,
// and bbolt's Get returns nil for an empty value put in the same
// transaction, so presence is the key's: a batch moved twice in one
// transaction (BulkLoad moves each along its whole path) finds the entry
// its first move put.
func indexed(bk *bolt.Bucket, key []byte) bool {
	k, _ := bk.Cursor().Seek(key)
	return bytes.Equal(k, key)
}

// indexKeyByState adds key (of state s) when absent, counting it.
func indexKeyByState(bk, counts *bolt.Bucket, key []byte, s State) error {
	if indexed(bk, key) {
		return nil
	}
	// Presence is checked by key (indexed); the value is empty, not nil,
	// so that a Get would find it too.
	if err := bk.Put(key, []byte{}); err != nil {
		return err
	}
	return addCountIn(counts, string(s), 1)
}

// unindexByState removes key (of state s) when present, counting it.
func unindexByState(bk, counts *bolt.Bucket, key []byte, s State) error {
	if !indexed(bk, key) {
		return nil
	}
	if err := bk.Delete(key); err != nil {
		return err
	}
	return addCountIn(counts, string(s), -1)
}

// stateIndexed reports whether the by-state index holds every batch: the
// backfill has finished and the index's counts are the batch counts.
func stateIndexed(tx *bolt.Tx) bool {
	if tx.Bucket(bucketMeta).Get(byStateDone) == nil || tx.Bucket(bucketByState) == nil {
		return false
	}
	idx, all := tx.Bucket(bucketByStateCounts), tx.Bucket(bucketCounts)
	if idx == nil {
		return false
	}
	for _, st := range States {
		if !bytes.Equal(countOf(idx, st), countOf(all, st)) {
			return false
		}
	}
	return true
}

// countOf is a counts bucket's value for s, with 0 for none.
func countOf(b *bolt.Bucket, s State) []byte {
	v := b.Get([]byte(s))
	if len(v) != 8 || bytes.Equal(v, make([]byte, 8)) {
		return nil
	}
	return v
}

// startStateIndex marks the by-state index complete on a database that
// holds no batch yet (in the transaction that creates its buckets): every
// batch it will hold is indexed as it is recorded, so there is nothing to
// backfill.
func startStateIndex(tx *bolt.Tx) error {
	meta := tx.Bucket(bucketMeta)
	if meta.Get(byStateDone) != nil || meta.Get(byStateResume) != nil {
		return nil
	}
	if k, _ := tx.Bucket(bucketRecords).Cursor().First(); k != nil {
		return nil
	}
	if k, _ := tx.Bucket(bucketBatches).Cursor().First(); k != nil {
		return nil // an earlier layout's records, not moved yet
	}
	if _, _, err := byStateBuckets(tx); err != nil {
		return err
	}
	return meta.Put(byStateDone, []byte{1})
}

// StateIndexComplete reports whether the by-state index holds every
// batch (BackfillStateIndex has finished, or the database began with it).
func (s *Store) StateIndexComplete() (bool, error) {
	var done bool
	err := s.db.View(func(tx *bolt.Tx) error {
		done = stateIndexed(tx)
		return nil
	})
	return done, err
}

// BackfillStateIndex indexes by state the records written before the
// index existed, byStateChunk records a transaction, resuming where a
// stop left it, and marks the index complete. It returns how many records
// it read (0 when the index was complete already) and stops early, with
// ctx's error, when ctx ends.
func (s *Store) BackfillStateIndex(ctx context.Context) (int, error) {
	total := 0
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		var n int
		var done bool
		err := s.db.Update(func(tx *bolt.Tx) error {
			var err error
			n, done, err = backfillByStateChunk(tx)
			return err
		})
		total += n
		if err != nil {
			return total, fmt.Errorf("backfill the by-state index: %w", err)
		}
		if done {
			return total, nil
		}
	}
}

// backfillByStateChunk indexes the next byStateChunk records; done says
// the index is now complete. An index marked complete whose counts differ
// from the batch counts (an older binary ran on the database) is dropped
// and built again.
func backfillByStateChunk(tx *bolt.Tx) (n int, done bool, err error) {
	meta := tx.Bucket(bucketMeta)
	if meta.Get(byStateDone) != nil {
		if stateIndexed(tx) {
			return 0, true, nil
		}
		for _, name := range [][]byte{bucketByState, bucketByStateCounts} {
			if err := tx.DeleteBucket(name); err != nil && tx.Bucket(name) != nil {
				return 0, false, err
			}
		}
		if err := meta.Delete(byStateDone); err != nil {
			return 0, false, err
		}
	}
	bk, counts, err := byStateBuckets(tx)
	if err != nil {
		return 0, false, err
	}
	c := tx.Bucket(bucketRecords).Cursor()
	var k, v []byte
	if after := meta.Get(byStateResume); after != nil {
		if k, v = c.Seek(after); k != nil && bytes.Equal(k, after) {
			k, v = c.Next()
		}
	} else {
		k, v = c.First()
	}
	var last []byte
	for ; k != nil && n < byStateChunk; k, v = c.Next() {
		if len(k) < 8 {
			return n, false, fmt.Errorf("record key of %d bytes", len(k))
		}
		b, err := decodeBatch(string(k[8:]), v)
		if err != nil {
			return n, false, err
		}
		if b.State != "" {
			if err := indexKeyByState(bk, counts, byStateKey(b.State, b.CreatedAt, b.ID), b.State); err != nil {
				return n, false, err
			}
		}
		n++
		last = k
	}
	if k == nil {
		if err := meta.Delete(byStateResume); err != nil {
			return n, false, err
		}
		return n, true, meta.Put(byStateDone, []byte{1})
	}
	return n, false, meta.Put(byStateResume, append([]byte(nil), last...))
}

// stateCursorPrefix marks a cursor of a list by state read through the
// index: its time key, hex. A cursor of the records bucket (no prefix)
// is refused there, and the other way round.
const stateCursorPrefix = "s"

// listByState is List for one state through the by-state index.
func listByState(tx *bolt.Tx, state State, limit int, cursor string) ([]Batch, string, error) {
	prefix := byStatePrefix(state)
	c := tx.Bucket(bucketByState).Cursor()
	var k []byte
	if cursor == "" {
		end := append([]byte(state), 1)
		if k, _ = c.Seek(end); k != nil {
			k, _ = c.Prev()
		} else {
			k, _ = c.Last()
		}
	} else {
		rest, ok := strings.CutPrefix(cursor, stateCursorPrefix)
		after, err := hex.DecodeString(rest)
		if !ok || err != nil || len(after) < 8 {
			return nil, "", fmt.Errorf("bad cursor %q: %w", cursor, ErrBadCursor)
		}
		c.Seek(append(append([]byte(nil), prefix...), after...))
		k, _ = c.Prev() // Seek lands on the cursor's key (or after it): step back
	}
	var (
		batches []Batch
		lastK   []byte
	)
	for ; k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Prev() {
		if len(batches) == limit {
			return batches, stateCursorPrefix + hex.EncodeToString(lastK[len(prefix):]), nil
		}
		b, err := getBatch(tx, string(k[len(prefix)+8:]))
		if err != nil {
			return nil, "", err
		}
		batches = append(batches, *b)
		lastK = k
	}
	return batches, "", nil
}
