package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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
//   - purge_records: final batches whose record is not reduced yet;
//   - purge_files: ids of purged batches whose export directory may still
//     be on disk; an id goes only once its files are gone, so a crash
//     between the tombstone's commit and the removal loses nothing.
var (
	bucketPurgeExports = []byte("purge_exports")
	bucketPurgeRecords = []byte("purge_records")
	bucketPurgeFiles   = []byte("purge_files")
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
// whose JSON says they are exported or abandoned.
func backfillPurgeIndex(tx *bolt.Tx) error {
	for _, name := range [][]byte{bucketPurgeExports, bucketPurgeRecords, bucketPurgeFiles, bucketMeta} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	meta := tx.Bucket(bucketMeta)
	if meta.Get(purgeIndexBackfilled) != nil {
		return nil
	}
	err := forEachRecord(tx, func(id string, v []byte) error {
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
		return fmt.Errorf("backfill the purge indexes: %w", err)
	}
	return meta.Put(purgeIndexBackfilled, []byte{1})
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

// PurgeExport moves the exported batch id to purged with its tombstone and
// records that its export directory is to be deleted, in one transaction;
// the caller then deletes the files and calls ExportFilesRemoved. It
// returns ErrDeliveryPending while a delivery of the export is pending
// (DECISIONS 23) and ErrState when the batch is no longer exported (a
// refetch came first). The returned batch's Tombstone.NeverDelivered names
// the sinks whose delivery ended failed.
func (s *Store) PurgeExport(id string, p ExportPurge, now time.Time) (*Batch, error) {
	var out *Batch
	err := s.db.Update(func(tx *bolt.Tx) error {
		b, err := getBatch(tx, id)
		if err != nil {
			return err
		}
		if b.State != StateExported {
			return fmt.Errorf("batch %s is %s: %w", id, b.State, ErrState)
		}
		var never []string
		if err := forDeliveries(tx, id, func(d *Delivery) error {
			switch d.State {
			case DeliveryPending:
				return fmt.Errorf("batch %s: delivery to %s: %w", id, d.Sink, ErrDeliveryPending)
			case DeliveryFailed:
				never = append(never, d.Sink)
			}
			return nil
		}); err != nil {
			return err
		}
		if err := setState(tx, b, StatePurged); err != nil {
			return err
		}
		t := tombstoneOf(b, now)
		// purged_at is when the batch became purged: this purge, not an
		// earlier one a refetch undid.
		t.PurgedAt, t.ExportPurgedAt, t.ExportedAt, t.ManifestSHA256, t.ManifestItems = now, now, p.ExportedAt, p.ManifestSHA256, p.ManifestItems
		slices.Sort(never)
		t.NeverDelivered = never
		b.ExportPath, b.UpdatedAt = "", now
		if err := tx.Bucket(bucketPurgeFiles).Put([]byte(id), nil); err != nil {
			return err
		}
		out = b
		return putBatch(tx, b)
	})
	if err != nil {
		return nil, fmt.Errorf("purge export of %s: %w", id, err)
	}
	return out, nil
}

func forDeliveries(tx *bolt.Tx, batchID string, fn func(*Delivery) error) error {
	prefix := []byte(batchID + "\x00")
	c := tx.Bucket(bucketDeliveries).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		var d Delivery
		if err := json.Unmarshal(v, &d); err != nil {
			return fmt.Errorf("decode delivery %q: %w", k, err)
		}
		if err := fn(&d); err != nil {
			return err
		}
	}
	return nil
}

// ExportFileRemovals returns the purged batches whose export directory may
// still be on disk (a crash came between PurgeExport and the removal).
func (s *Store) ExportFileRemovals() ([]string, error) {
	ids, err := s.keys(bucketPurgeFiles)
	if err != nil {
		return nil, fmt.Errorf("list purged exports to remove: %w", err)
	}
	return ids, nil
}

// ExportFilesRemoved records that the purged export of id is gone from disk.
func (s *Store) ExportFilesRemoved(id string) error {
	if err := s.deleteKey(bucketPurgeFiles, id); err != nil {
		return fmt.Errorf("record purged export of %s removed: %w", id, err)
	}
	return nil
}

// exportBeingPurged reports whether the purged export of id may still be
// on disk: a refetch must wait, or its new export would be deleted with it.
func exportBeingPurged(tx *bolt.Tx, id string) bool {
	return tx.Bucket(bucketPurgeFiles).Get([]byte(id)) != nil
}

// PurgeRecords reduces, in one transaction, up to limit final batches
// finished at or before before to their tombstones (after: the resume
// point, empty from the start): the notification's raw body is dropped
// (its SHA-256 kept), the checkpoint's cursors too, and an abandoned batch
// becomes purged. An exported batch whose export is still kept stays
// exported. The finish date (FinishedAt, else UpdatedAt) decides. It
// returns how many it reduced and where the next call resumes (empty at
// the end).
func (s *Store) PurgeRecords(before time.Time, after string, limit int, now time.Time) (n int, next string, err error) {
	err = s.db.Update(func(tx *bolt.Tx) error {
		idx := tx.Bucket(bucketPurgeRecords)
		keys, more := indexRange(idx, before, after, limit)
		if more {
			next = string(keys[len(keys)-1])
		}
		for _, k := range keys {
			b, err := getBatch(tx, string(k[8:]))
			if err != nil {
				return err
			}
			finished := b.FinishedAt
			if finished.IsZero() {
				finished = b.UpdatedAt
			}
			if finished.After(before) {
				continue
			}
			awaiting := b.awaitingNotification()
			if err := reduceRecord(tx, b, now); err != nil {
				return err
			}
			if awaiting && !b.awaitingNotification() {
				// Abandoned before any batch.completed, now purged: a
				// late notification is a duplicate from this commit on.
				s.db.mark(tx, lookupKey(bucketBatches, b.ID))
			}
			if err := idx.Delete(k); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, "", fmt.Errorf("purge batch records: %w", err)
	}
	return n, next, nil
}

func reduceRecord(tx *bolt.Tx, b *Batch, now time.Time) error {
	t := tombstoneOf(b, now)
	if b.Notification.Raw != nil {
		sum := sha256.Sum256(b.Notification.Raw)
		t.RawSHA256 = hex.EncodeToString(sum[:])
		b.Notification.Raw = nil
	}
	b.Checkpoint.Cursor, b.Checkpoint.Seen = "", ""
	t.RecordPurgedAt, b.UpdatedAt = now, now
	if b.State == StateAbandoned {
		if err := setState(tx, b, StatePurged); err != nil {
			return err
		}
	}
	return putBatch(tx, b)
}

// ErrDeliveryPending is returned by PurgeExport while a delivery of the
// export is pending: it is deleted only once every sink is done with it.
var ErrDeliveryPending = errors.New("a delivery of the export is pending")
