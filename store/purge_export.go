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
// the caller then deletes the files and calls FileRemovalDone (the
// removal has Purge set). It
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
		if err := recordFileRemoval(tx, id, true); err != nil {
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
