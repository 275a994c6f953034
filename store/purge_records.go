package store

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

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
