package store

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Retention of the payment log (DECISIONS 25): a raw body is personal data
// and goes RECORD_RETENTION after it was received; the event stays as its
// tombstone (seq, dedup key, sha256, dates), and so does its dedup key, so
// a replay of a purged event is still a duplicate.

// PurgePaymentBodies drops the bodies of events received at or before
// before, setting their BodyDroppedAt to now, in one transaction that
// examines at most limit bodies from the oldest held. A body that some
// payment sink (SetPaymentSinks) has not handled yet is kept, like an
// export with a pending delivery (DECISIONS 23): the sink still has to
// send it. The walk is in log order and stops at the first body that is
// not due or is still owed to a sink; log order is receipt order up to a
// request's own duration, so a body stopped behind a later one is purged
// at the next pass after, never skipped. more is true when limit bodies
// were dropped and the caller should call again; held is true when the
// walk stopped at a body a sink has not handled.
func (s *Store) PurgePaymentBodies(before time.Time, limit int, now time.Time) (dropped int, more, held bool, err error) {
	err = s.db.Update(func(tx *bolt.Tx) error {
		through, bounded, err := handledByAll(tx, s.PaymentSinks())
		if err != nil {
			return err
		}
		bodies := tx.Bucket(bucketPaymentBodies)
		var due [][]byte
		c := bodies.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			if len(due) == limit {
				more = true
				break
			}
			seq := binary.BigEndian.Uint64(k)
			e, err := getPaymentEvent(tx, seq)
			if err != nil {
				return err
			}
			if e.ReceivedAt.After(before) {
				break
			}
			if bounded && seq > through {
				held = true
				break
			}
			due = append(due, slices.Clone(k))
		}
		for _, k := range due {
			seq := binary.BigEndian.Uint64(k)
			if err := dropPaymentBody(tx, seq, now, ""); err != nil {
				return err
			}
		}
		dropped = len(due)
		return nil
	})
	if err != nil {
		return 0, false, false, fmt.Errorf("purge payment bodies: %w", err)
	}
	return dropped, more, held, nil
}

// handledByAll returns the seq through which every one of sinks has
// handled the log (the smallest cursor); bounded is false when there are
// no sinks (nothing is owed to anyone).
func handledByAll(tx *bolt.Tx, sinks []string) (through uint64, bounded bool, err error) {
	for i, sink := range sinks {
		c, err := getCursor(tx, sink)
		if err != nil {
			return 0, false, err
		}
		if i == 0 || c.Through < through {
			through = c.Through
		}
	}
	return through, len(sinks) > 0, nil
}

// dropPaymentBody removes event seq's body and marks the event; erasedBy
// names the erasure that asked for it ("" for the purger).
func dropPaymentBody(tx *bolt.Tx, seq uint64, now time.Time, erasedBy string) error {
	e, err := getPaymentEvent(tx, seq)
	if err != nil {
		return err
	}
	if err := tx.Bucket(bucketPaymentBodies).Delete(seqKey(seq)); err != nil {
		return err
	}
	if e.BodyDroppedAt.IsZero() {
		e.BodyDroppedAt = now
	}
	if erasedBy != "" {
		e.ErasedBy = erasedBy
	}
	return putPaymentEvent(tx, e)
}

// PaymentDayPending reports whether sink still has to handle an event
// received in [from, to): the file sink's day file of that UTC day may
// still be appended to, so the purger keeps it. A sink that is not a
// payment sink (SetPaymentSinks) has nothing pending: nothing will write
// for it. Only the events after the sink's cursor are read.
func (s *Store) PaymentDayPending(sink string, from, to time.Time) (bool, error) {
	if !slices.Contains(s.PaymentSinks(), sink) {
		return false, nil
	}
	var pending bool
	err := s.db.View(func(tx *bolt.Tx) error {
		c, err := getCursor(tx, sink)
		if err != nil {
			return err
		}
		cur := tx.Bucket(bucketPaymentEvents).Cursor()
		for k, v := cur.Seek(seqKey(c.Through + 1)); k != nil; k, v = cur.Next() {
			var e struct {
				ReceivedAt time.Time `json:"received_at"`
			}
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("decode payment event %d: %w", binary.BigEndian.Uint64(k), err)
			}
			if !e.ReceivedAt.Before(from) && e.ReceivedAt.Before(to) {
				pending = true
				return nil
			}
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("payment events of %s pending for %s: %w", from.Format(time.DateOnly), sink, err)
	}
	return pending, nil
}
