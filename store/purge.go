package store

import (
	"bytes"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Retention and purge. Personal data is kept only as long as
// the operator decides: after EXPORT_RETENTION a batch's export is deleted
// and the batch becomes purged; after RECORD_RETENTION its record is reduced
// to a tombstone (no raw body, no cursors). What is left of a purged batch
// still answers a replayed notification with duplicate.
//
// The indexes, each keyed (created time, id) like the pending index and
// updated by setState in the transaction that changes the state, so that a
// pass walks only batches old enough to be due instead of every record:
//   - purge_exports: exported batches whose export is not purged yet;
//   - purge_records: final batches whose record is not reduced yet.
//
// A purged export's files are deleted through a file removal (removal.go).
var (
	bucketPurgeExports = []byte("purge_exports")
	bucketPurgeRecords = []byte("purge_records")
)

// Tombstone is what stays of a batch after the purger removed its personal
// data. The record around it keeps the id, the state, the notification's
// status, counters and dates (received, completed, submitted, finished);
// the tombstone adds what the purge took away.
type Tombstone struct {
	// PurgedAt is the first purge of either kind.
	PurgedAt time.Time `json:"purged_at"`
	// ExportPurgedAt is when the export directory was deleted; ExportedAt,
	// ManifestSHA256 and ManifestItems describe the export that was there.
	ExportPurgedAt time.Time `json:"export_purged_at,omitzero"`
	ExportedAt     time.Time `json:"exported_at,omitzero"`
	ManifestSHA256 string    `json:"manifest_sha256,omitempty"`
	ManifestItems  int64     `json:"manifest_items"`
	// NeverDelivered lists the sinks whose delivery had ended failed when
	// the export was deleted: they never received it.
	NeverDelivered []string `json:"never_delivered,omitempty"`
	// RecordPurgedAt is when the record was reduced: the notification's raw
	// body (RawSHA256 is its hash) and the checkpoint's cursors dropped.
	RecordPurgedAt time.Time `json:"record_purged_at,omitzero"`
	RawSHA256      string    `json:"raw_sha256,omitempty"`
}

// ExportPurge is what the purger read from the export it is about to
// delete, kept in the tombstone.
type ExportPurge struct {
	ExportedAt     time.Time
	ManifestSHA256 string
	ManifestItems  int64
}

func tombstoneOf(b *Batch, now time.Time) *Tombstone {
	if b.Tombstone == nil {
		b.Tombstone = &Tombstone{}
	}
	if b.Tombstone.PurgedAt.IsZero() {
		b.Tombstone.PurgedAt = now
	}
	return b.Tombstone
}

// indexForPurge keeps purge_exports and purge_records right for a batch
// moving from one state to another (called by setState).
func indexForPurge(tx *bolt.Tx, b *Batch, from, to State) error {
	key := timeKey(b.CreatedAt, b.ID)
	exports, records := tx.Bucket(bucketPurgeExports), tx.Bucket(bucketPurgeRecords)
	if from == StateExported {
		if err := exports.Delete(key); err != nil {
			return err
		}
	}
	if to == StateExported {
		if err := exports.Put(key, nil); err != nil {
			return err
		}
	}
	switch {
	case to.Final() && !from.Final():
		return records.Put(key, nil)
	case !to.Final() && from.Final():
		return records.Delete(key)
	}
	return nil
}

// purgeIndexBackfilled marks in the meta bucket that the purge indexes were
// filled once from the records of a database written before they existed.
var purgeIndexBackfilled = []byte("purge-index-backfilled")

// backfillPurgeIndex creates the purge buckets and, once per database,
// indexes the final batches already there. It decodes only the records
// whose JSON says they are exported or abandoned; walked is how many
// records it read (0 once done).
func backfillPurgeIndex(tx *bolt.Tx) (walked int, err error) {
	for _, name := range [][]byte{bucketPurgeExports, bucketPurgeRecords, bucketMeta} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return 0, fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	meta := tx.Bucket(bucketMeta)
	if meta.Get(purgeIndexBackfilled) != nil {
		return 0, nil
	}
	err = forEachRecord(tx, func(id string, v []byte) error {
		walked++
		if !bytes.Contains(v, []byte(`"state":"exported"`)) && !bytes.Contains(v, []byte(`"state":"abandoned"`)) {
			return nil
		}
		b, err := decodeBatch(id, v)
		if err != nil {
			return err
		}
		if !b.State.Final() {
			return nil
		}
		return indexForPurge(tx, b, "", b.State)
	})
	if err != nil {
		return walked, fmt.Errorf("backfill the purge indexes: %w", err)
	}
	return walked, meta.Put(purgeIndexBackfilled, []byte{1})
}

// ExportPurgeCandidates returns up to limit exported batches, oldest
// created first, after the resume point after (empty: from the start), that
// were created at or before before: only they can have been exported
// before it. The caller decides which are due (by their export date) and
// calls PurgeExport; next resumes the walk, empty at the end.
func (s *Store) ExportPurgeCandidates(before time.Time, after string, limit int) ([]Batch, string, error) {
	return s.candidates(bucketPurgeExports, before, after, limit)
}

func (s *Store) candidates(bucket []byte, before time.Time, after string, limit int) (out []Batch, next string, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		keys, more := indexRange(tx.Bucket(bucket), before, after, limit)
		for _, k := range keys {
			b, err := getBatch(tx, string(k[8:]))
			if err != nil {
				return err
			}
			out = append(out, *b)
		}
		if more {
			next = string(keys[len(keys)-1])
		}
		return nil
	})
	if err != nil {
		return nil, "", fmt.Errorf("list purge candidates: %w", err)
	}
	return out, next, nil
}

// indexRange returns up to limit keys of a (time, id) index after after and
// not later than before; more is true when the walk stopped at the limit.
func indexRange(b *bolt.Bucket, before time.Time, after string, limit int) (keys [][]byte, more bool) {
	bound := timeKey(before, "\xff")
	c := b.Cursor()
	k, _ := c.First()
	if after != "" {
		if k, _ = c.Seek([]byte(after)); k != nil && string(k) == after {
			k, _ = c.Next()
		}
	}
	for ; k != nil && bytes.Compare(k, bound) <= 0; k, _ = c.Next() {
		if len(keys) == limit {
			return keys, true
		}
		keys = append(keys, bytes.Clone(k))
	}
	return keys, false
}
