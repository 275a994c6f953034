package store

import (
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// After `batchhook restore` the database may be older than the payment
// sinks: EXPORT_DIR is backed up after the database (docs/operations.md), so the day
// files can hold lines of events the restored log never saw, and the http
// and nats receivers have their webhook-ids and Msg-Ids. A new event must
// not take one of those seqs again: the file sink would skip it as already
// written (its tail check), and a receiver would drop it as a duplicate.
// So at start the daemon raises the log's sequence above the highest seq
// the day files hold (RaisePaymentSeq); the log then has a gap, which the
// outbox's head check allows (the head is the first event after a cursor,
// not Through+1).

// RaisePaymentSeq makes the next logged event's seq at least floor+1, in
// one durable transaction, and moves every payment sink's cursor that had
// handled the whole log up to floor (there is nothing below it to hand
// them). It reports the sequence before, and whether it raised it (false
// when the log is already at or past floor).
func (s *Store) RaisePaymentSeq(floor uint64, now time.Time) (before uint64, raised bool, err error) {
	err = s.db.Update(func(tx *bolt.Tx) error {
		events := tx.Bucket(bucketPaymentEvents)
		before = events.Sequence()
		if floor <= before {
			return nil
		}
		var last uint64
		if k, _ := events.Cursor().Last(); k != nil {
			last = binary.BigEndian.Uint64(k)
		}
		for _, sink := range s.PaymentSinks() {
			c, err := getCursor(tx, sink)
			if err != nil {
				return err
			}
			if c.Through >= last && c.Through < floor {
				c.Through, c.UpdatedAt = floor, now
				if err := putCursor(tx, c); err != nil {
					return err
				}
			}
		}
		raised = true
		return events.SetSequence(floor)
	})
	if err != nil {
		return 0, false, fmt.Errorf("raise the payment log's sequence to %d: %w", floor, err)
	}
	return before, raised, nil
}

// headSeq returns the seq of the first event after through (0 when none):
// a sink's head. Seqs are not always consecutive (RaisePaymentSeq).
func headSeq(tx *bolt.Tx, through uint64) uint64 {
	k, _ := tx.Bucket(bucketPaymentEvents).Cursor().Seek(seqKey(through + 1))
	if k == nil {
		return 0
	}
	return binary.BigEndian.Uint64(k)
}
