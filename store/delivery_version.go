package store

import (
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// ExportChanged records that the export of batchID in place is now of
// version (an erasure rewrote it; or a sink found a newer version than its
// delivery's): the batch's ExportVersion rises to it, and every delivery
// of an older version that is not delivered moves to it as a new
// generation, from its first part, due at once. A delivered one stays
// delivered (the erasure lists it). A version not newer than the
// deliveries' changes nothing, so a repeated or late call is harmless. It
// returns how many deliveries it moved; ErrNotFound for an unknown batch.
func (s *Store) ExportChanged(batchID string, version int, now time.Time) (int, error) {
	var moved int
	err := s.db.Update(func(tx *bolt.Tx) error {
		b, err := getBatch(tx, batchID)
		if err != nil {
			return err
		}
		if version > b.Version() {
			b.ExportVersion, b.UpdatedAt = version, now
			if err := putBatch(tx, b); err != nil {
				return err
			}
		}
		var stale []string
		err = forDeliveries(tx, batchID, func(d *Delivery) error {
			if d.State != DeliveryDelivered && d.Version < version {
				stale = append(stale, d.Sink)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, sink := range stale {
			if _, err := s.queueDelivery(tx, b, sink, version, now); err != nil {
				return err
			}
		}
		moved = len(stale)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("record export %s changed to version %d: %w", batchID, version, err)
	}
	return moved, nil
}
