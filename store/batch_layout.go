package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The batch records' layout. A record is stored once, in
// bucketRecords, under its position: an 8-byte sequence number the bucket
// hands out in the order batches are first recorded, then the id. Records
// are appended, so bbolt fills each page before it starts the next
// (appendFill) instead of splitting pages half full at random places,
// which is what keying the ~800-byte records by the provider's random ids
// did (2 records a 4 KiB page: 1.9 KB a batch after 100,000 random ids).
// bucketBatches maps each id to its 8-byte position: that small entry is
// what a webhook's duplicate check and the id lookups touch. The records bucket doubles as the
// newest-first listing (the old "created" index).
var bucketRecords = []byte("records")

// bucketBatches maps each batch id to its position (recordKey). Before the
// records bucket it held the records themselves (migrateLayout).
var bucketBatches = []byte("batches")

// appendFill is the FillPercent of buckets whose keys grow (records, and
// the time-keyed indexes): a page is split only when full, which packs an
// append-only bucket tight. Keys that arrive slightly out of order (the
// concurrent webhooks of one group commit) still land in the last page or
// two.
const appendFill = 1.0

// recordKey is the key of id's record given its 8-byte position from
// bucketBatches.
func recordKey(pos []byte, id string) []byte {
	k := make([]byte, 8+len(id))
	copy(k, pos)
	copy(k[8:], id)
	return k
}

func getBatch(tx *bolt.Tx, id string) (*Batch, error) {
	pos := tx.Bucket(bucketBatches).Get([]byte(id))
	if pos == nil {
		return nil, ErrNotFound
	}
	if len(pos) != 8 {
		return nil, fmt.Errorf("batch %s: index entry of %d bytes, want 8", id, len(pos))
	}
	v := tx.Bucket(bucketRecords).Get(recordKey(pos, id))
	if v == nil {
		return nil, fmt.Errorf("batch %s: indexed but its record is missing", id)
	}
	return decodeBatch(id, v)
}

// recordsRead counts the batch records read since the process started
// (RecordsRead).
var recordsRead atomic.Uint64

// RecordsRead returns how many batch records this process has read:
// decoded, or looked at by a walk over every record. Tests hold what a
// start reads with it: a bounded number however many are stored, not all
// of them.
func RecordsRead() uint64 { return recordsRead.Load() }

func decodeBatch(id string, v []byte) (*Batch, error) {
	recordsRead.Add(1)
	var b Batch
	if err := json.Unmarshal(v, &b); err != nil {
		return nil, fmt.Errorf("decode batch record %s: %w", id, err)
	}
	b.ID = id
	return &b, nil
}

// putBatch writes b's record at its position, giving a new batch the next
// one (and its id entry).
func putBatch(tx *bolt.Tx, b *Batch) error {
	v, err := encodeBatch(make([]byte, 0, 512+len(b.Notification.Raw)), b)
	if err != nil {
		return fmt.Errorf("encode batch record %s: %w", b.ID, err)
	}
	recs := tx.Bucket(bucketRecords)
	recs.FillPercent = appendFill
	pos, err := position(tx, b.ID)
	if err != nil {
		return err
	}
	return recs.Put(recordKey(pos, b.ID), v)
}

// position returns id's position, giving it the next one if it has none.
func position(tx *bolt.Tx, id string) ([]byte, error) {
	ids := tx.Bucket(bucketBatches)
	if pos := ids.Get([]byte(id)); pos != nil {
		return pos, nil
	}
	seq, err := tx.Bucket(bucketRecords).NextSequence()
	if err != nil {
		return nil, fmt.Errorf("position for batch %s: %w", id, err)
	}
	pos := binary.BigEndian.AppendUint64(nil, seq)
	return pos, ids.Put([]byte(id), pos)
}

// forEachRecord calls fn with every batch id and its encoded record, oldest
// first. fn must not write to the records bucket.
func forEachRecord(tx *bolt.Tx, fn func(id string, v []byte) error) error {
	return tx.Bucket(bucketRecords).ForEach(func(k, v []byte) error {
		if len(k) < 8 {
			return fmt.Errorf("record key of %d bytes", len(k))
		}
		recordsRead.Add(1)
		return fn(string(k[8:]), v)
	})
}

// layoutV2 marks a database whose records are in bucketRecords;
// layoutResume is where an interrupted migration goes on (a key of the old
// "created" index).
var (
	layoutV2     = []byte("\x00layout-records-v2")
	layoutResume = []byte("\x00layout-records-resume")
)

// migrateChunk is how many records one migration transaction moves: a
// database of any size migrates in bounded memory, and a crash in between
// resumes where it stopped (layoutResume).
const migrateChunk = 5000

// migrateLayout moves the records of a database written before the
// records bucket (bucketBatches: id → the JSON record) into bucketRecords in the order of
// the old "created" index (so listing order is kept), leaving 8-byte
// positions as the id entries, then drops the old index. It runs at open,
// before anything reads a record, one transaction a chunk. It returns how
// many records it moved.
func migrateLayout(db *bolt.DB) (int, error) {
	var done bool
	var from []byte
	if err := db.View(func(tx *bolt.Tx) error {
		// An earlier batchhook started on a migrated database (a rollback
		// without the backup) recreates the created index at open and
		// records new batches its own way: its index being back means
		// there may be records to move again.
		meta := tx.Bucket(bucketMeta)
		done = meta.Get(layoutV2) != nil && tx.Bucket(bucketCreated) == nil
		from = bytes.Clone(meta.Get(layoutResume))
		return nil
	}); err != nil || done {
		return 0, err
	}
	moved := 0
	for {
		n, next, err := migrateSome(db, from)
		moved += n
		if err != nil {
			return moved, fmt.Errorf("move batch records to %s: %w", bucketRecords, err)
		}
		if next == nil {
			break
		}
		from = next
	}
	err := db.Update(func(tx *bolt.Tx) error {
		// A record the old index missed (none should be) is moved last.
		var stray [][]byte
		err := tx.Bucket(bucketBatches).ForEach(func(k, v []byte) error {
			if len(v) != 8 {
				stray = append(stray, bytes.Clone(k))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, id := range stray {
			if _, err := moveRecord(tx, id); err != nil {
				return err
			}
		}
		moved += len(stray)
		if tx.Bucket(bucketCreated) != nil {
			if err := tx.DeleteBucket(bucketCreated); err != nil {
				return err
			}
		}
		meta := tx.Bucket(bucketMeta)
		if err := meta.Delete(layoutResume); err != nil {
			return err
		}
		return meta.Put(layoutV2, []byte(time.Now().UTC().Format(time.RFC3339)))
	})
	if err != nil {
		return moved, fmt.Errorf("finish the record layout migration: %w", err)
	}
	return moved, nil
}

// migrateSome moves the records of up to migrateChunk entries of the old
// created index from from on, in one transaction that also saves where the
// next chunk starts; next is nil at the end of the index.
func migrateSome(db *bolt.DB, from []byte) (n int, next []byte, err error) {
	err = db.Update(func(tx *bolt.Tx) error {
		created := tx.Bucket(bucketCreated)
		if created == nil {
			return nil
		}
		var ids [][]byte
		c := created.Cursor()
		k, _ := c.First()
		if from != nil {
			k, _ = c.Seek(from)
		}
		for ; k != nil; k, _ = c.Next() {
			if len(ids) == migrateChunk {
				next = bytes.Clone(k)
				break
			}
			if len(k) > 8 {
				ids = append(ids, bytes.Clone(k[8:]))
			}
		}
		for _, id := range ids {
			ok, err := moveRecord(tx, id)
			if err != nil {
				return err
			}
			if ok {
				n++
			}
		}
		if next == nil {
			return nil
		}
		return tx.Bucket(bucketMeta).Put(layoutResume, next)
	})
	if err != nil {
		return 0, nil, err
	}
	return n, next, nil
}

// moveRecord moves id's old-layout record (its JSON under bucketBatches)
// to its position in bucketRecords; an id already moved, or unknown, is
// left alone (false).
func moveRecord(tx *bolt.Tx, id []byte) (bool, error) {
	ids := tx.Bucket(bucketBatches)
	v := ids.Get(id)
	if v == nil || len(v) == 8 {
		return false, nil
	}
	v = bytes.Clone(v) // the Put below reuses the page v points into
	seq, err := tx.Bucket(bucketRecords).NextSequence()
	if err != nil {
		return false, err
	}
	pos := binary.BigEndian.AppendUint64(nil, seq)
	recs := tx.Bucket(bucketRecords)
	recs.FillPercent = appendFill
	if err := recs.Put(recordKey(pos, string(id)), v); err != nil {
		return false, err
	}
	return true, ids.Put(id, pos)
}
