package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

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
