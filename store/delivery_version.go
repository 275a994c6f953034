package store

import (
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// ExportChanged records that the export of batchID in place is now of
// version (a sink found a newer version in place than its delivery's: a
// rewrite whose record a crash cut short, or a refetch's export not yet
// recorded by Finish). The batch's ExportVersion rises to it and the
// deliveries to configured sinks that are not delivered and of an older
// version move to it (moveToVersion). A version not newer than the
// deliveries' changes nothing, so a repeated or late call is harmless. It
// returns how many deliveries it moved; ErrNotFound for an unknown batch.
func (s *Store) ExportChanged(batchID string, version int, now time.Time) (int, error) {
	var moved int
	err := s.db.Update(func(tx *bolt.Tx) error {
		b, err := getBatch(tx, batchID)
		if err != nil {
			return err
		}
		moved, err = s.moveToVersion(tx, b, version, now)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("record export %s changed to version %d: %w", batchID, version, err)
	}
	return moved, nil
}

// RecordRewrite records, in one transaction, that erasure erasureID
// rewrote the export of batchID as version, removing items: the erasure's
// record notes the batch with the sinks that had an older version
// (delivered, or may have: mayHaveReceived), the batch's version rises, and the
// deliveries not delivered move to the new version (moveToVersion). The
// erasure calls it while it holds the export's lock, so no sink opens the
// new version before the sinks that had the old one are noted. items 0
// with a version not newer than the batch's changes nothing (a refetch
// already recorded it); items 0 with a newer one is a rewrite a crash cut
// short of this record, noted now (its item count is lost). It reports how
// many deliveries moved and whether the batch was noted.
func (s *Store) RecordRewrite(erasureID, batchID string, items int64, version int, now time.Time) (moved int, noted bool, err error) {
	err = s.db.Update(func(tx *bolt.Tx) error {
		b, err := getBatch(tx, batchID)
		if err != nil {
			return err
		}
		if items == 0 && version <= b.Version() {
			return nil
		}
		eb := ErasedBatch{BatchID: batchID, Items: items, Version: version}
		err = forDeliveries(tx, batchID, func(d *Delivery) error {
			switch {
			case d.Version >= version:
			case d.State == DeliveryDelivered:
				eb.Sinks = append(eb.Sinks, SinkReceipt{Sink: d.Sink, Received: ReceivedDelivered, Version: d.Version})
			case mayHaveReceived(d):
				eb.Sinks = append(eb.Sinks, SinkReceipt{Sink: d.Sink, Received: ReceivedMaybe, Version: d.Version})
			}
			return nil
		})
		if err != nil {
			return err
		}
		if err := updateErasure(tx, erasureID, func(e *Erasure) error { noteBatch(e, eb); return nil }); err != nil {
			return err
		}
		noted = true
		moved, err = s.moveToVersion(tx, b, version, now)
		return err
	})
	if err != nil {
		return 0, false, fmt.Errorf("record the rewrite of %s as version %d: %w", batchID, version, err)
	}
	return moved, noted, nil
}

// KindExportChanged is the ErrorKind of a delivery whose attempt the
// export's change cut short (the dispatcher records it before it lets the
// old version go, so before the change is recorded).
const KindExportChanged = "changed"

// mayHaveReceived reports whether a delivery not delivered may still have
// left the old version's items at its sink: parts were acknowledged, an
// attempt reached the sink (a 5xx, or a timeout after the sink read the
// part, leaves the sink holding it), or the change itself cut an attempt
// short, whose bytes may already have been read and kept by the sink.
// Listing one that had sent nothing errs on the side an erasure needs.
func mayHaveReceived(d *Delivery) bool {
	return d.PartsDone > 0 || d.Attempts > 0 || d.ErrorKind == KindExportChanged
}

// moveToVersion raises b's version to version and moves every delivery of
// b to a configured sink that is not delivered and of an older version to
// it, as a new generation from its first part, due at once. A delivered
// one stays delivered (the erasure lists it); a delivery to a sink no
// longer configured is left as it is (nothing would deliver it, and a
// pending one would hold up the purge for ever).
func (s *Store) moveToVersion(tx *bolt.Tx, b *Batch, version int, now time.Time) (int, error) {
	if version > b.Version() {
		b.ExportVersion, b.UpdatedAt = version, now
		if err := putBatch(tx, b); err != nil {
			return 0, err
		}
	}
	sinks := s.Sinks()
	var stale []string
	err := forDeliveries(tx, b.ID, func(d *Delivery) error {
		if d.State != DeliveryDelivered && d.Version < version && slices.Contains(sinks, d.Sink) {
			stale = append(stale, d.Sink)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	for _, sink := range stale {
		if _, err := s.queueDelivery(tx, b, sink, version, now); err != nil {
			return 0, err
		}
	}
	return len(stale), nil
}
