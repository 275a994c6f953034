package store

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The payment outbox. Payment events go to each sink in log order, so a
// sink's outbox is a cursor, not a record per event: every event up to the
// cursor has been handled (delivered, or failed for good), and
// the event after it is the head the sink's dispatcher works on. A
// transient failure keeps the head (and every later event) waiting; a
// permanent one is recorded for that event and the cursor moves past it,
// so one poisoned event does not stop the sink for ever.
//
// The buckets:
//   - payment_cursors: sink → PaymentCursor as JSON;
//   - payment_failed: sink, 0, seq (8 bytes) → PaymentFailure as JSON.
var (
	bucketPaymentCursors = []byte("payment_cursors")
	bucketPaymentFailed  = []byte("payment_failed")
)

// PaymentCursor is one sink's place in the payment log.
type PaymentCursor struct {
	Sink string `json:"sink"`
	// Through: every event with seq <= Through is handled for this sink.
	Through uint64 `json:"through"`
	// Attempts counts the attempts at the head event (the first after
	// Through) that
	// reached the sink; 0 when none failed yet.
	Attempts      int       `json:"attempts"`
	LastError     string    `json:"last_error,omitempty"`
	ErrorKind     string    `json:"error_kind,omitempty"`
	NextAttemptAt time.Time `json:"next_attempt_at,omitzero"`
	UpdatedAt     time.Time `json:"updated_at,omitzero"`
}

// PaymentFailure records an event a sink refused for good.
type PaymentFailure struct {
	Seq      uint64    `json:"seq"`
	Sink     string    `json:"sink"`
	Kind     string    `json:"kind"`
	Reason   string    `json:"reason"`
	Attempts int       `json:"attempts"`
	At       time.Time `json:"at"`
}

// PaymentDelivery is where one event stands with one sink (the admin API's
// "deliveries"): delivered, failed or pending (DeliveryState).
type PaymentDelivery struct {
	Sink      string        `json:"sink"`
	State     DeliveryState `json:"state"`
	Attempts  int           `json:"attempts,omitempty"`
	LastError string        `json:"last_error,omitempty"`
	ErrorKind string        `json:"error_kind,omitempty"`
}

// PaymentRecord is an event with its body, as the dispatcher hands it to a
// sink. Body is nil when it was dropped (purge or erasure) before the
// sink got it.
type PaymentRecord struct {
	PaymentEvent
	Body []byte
}

func failedKey(sink string, seq uint64) []byte {
	return append([]byte(sink+"\x00"), seqKey(seq)...)
}

func getCursor(tx *bolt.Tx, sink string) (*PaymentCursor, error) {
	v := tx.Bucket(bucketPaymentCursors).Get([]byte(sink))
	if v == nil {
		return &PaymentCursor{Sink: sink}, nil
	}
	var c PaymentCursor
	if err := json.Unmarshal(v, &c); err != nil {
		return nil, fmt.Errorf("decode payment cursor of %s: %w", sink, err)
	}
	return &c, nil
}

func putCursor(tx *bolt.Tx, c *PaymentCursor) error {
	v, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("encode payment cursor of %s: %w", c.Sink, err)
	}
	return tx.Bucket(bucketPaymentCursors).Put([]byte(c.Sink), v)
}

// PaymentCursor returns sink's cursor (Through 0 for a sink that never
// delivered).
func (s *Store) PaymentCursor(sink string) (PaymentCursor, error) {
	var c *PaymentCursor
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		c, err = getCursor(tx, sink)
		return err
	})
	if err != nil {
		return PaymentCursor{}, fmt.Errorf("payment cursor of %s: %w", sink, err)
	}
	return *c, nil
}

// NextPayments returns up to limit events after sink's cursor, in log
// order, with their bodies, when the head is due at now. When the head
// waits for a retry it returns none and when it falls due; when the log
// holds nothing new it returns none and a zero time.
func (s *Store) NextPayments(sink string, now time.Time, limit int) ([]PaymentRecord, time.Time, error) {
	var (
		out  []PaymentRecord
		next time.Time
	)
	err := s.db.View(func(tx *bolt.Tx) error {
		c, err := getCursor(tx, sink)
		if err != nil {
			return err
		}
		if c.NextAttemptAt.After(now) {
			next = c.NextAttemptAt
			return nil
		}
		bodies := tx.Bucket(bucketPaymentBodies)
		cur := tx.Bucket(bucketPaymentEvents).Cursor()
		for k, v := cur.Seek(seqKey(c.Through + 1)); k != nil && len(out) < limit; k, v = cur.Next() {
			var r PaymentRecord
			if err := json.Unmarshal(v, &r.PaymentEvent); err != nil {
				return fmt.Errorf("decode payment event %d: %w", binary.BigEndian.Uint64(k), err)
			}
			r.Body = bytes.Clone(bodies.Get(k))
			out = append(out, r)
		}
		return nil
	})
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("next payment events for %s: %w", sink, err)
	}
	return out, next, nil
}

// changeCursor applies fn to sink's cursor in one write transaction after
// checking that seq is its head (the first event after Through): an outcome for an event the
// cursor already passed is refused with ErrState.
func (s *Store) changeCursor(sink string, seq uint64, fn func(tx *bolt.Tx, c *PaymentCursor) error) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		c, err := getCursor(tx, sink)
		if err != nil {
			return err
		}
		if tx.Bucket(bucketPaymentEvents).Get(seqKey(seq)) == nil {
			return fmt.Errorf("payment event %d: %w", seq, ErrNotFound)
		}
		if seq != headSeq(tx, c.Through) {
			return fmt.Errorf("payment event %d is not the head of %s's outbox (through %d): %w", seq, sink, c.Through, ErrState)
		}
		if err := fn(tx, c); err != nil {
			return err
		}
		return putCursor(tx, c)
	})
}

// PaymentsDelivered records that sink has every event from its head
// through seq (a sink may deliver several at once, such as the file
// sink's one fsync for many lines); durable when it returns nil. ErrState
// when through is not ahead of the cursor.
func (s *Store) PaymentsDelivered(sink string, through uint64, now time.Time) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		c, err := getCursor(tx, sink)
		if err != nil {
			return err
		}
		if through <= c.Through {
			return fmt.Errorf("%s is already through payment event %d (asked %d): %w", sink, c.Through, through, ErrState)
		}
		if tx.Bucket(bucketPaymentEvents).Get(seqKey(through)) == nil {
			return fmt.Errorf("payment event %d: %w", through, ErrNotFound)
		}
		if err := noteErasedDeliveries(tx, sink, c.Through, through); err != nil {
			return err
		}
		c.Through, c.Attempts, c.LastError, c.ErrorKind = through, 0, "", ""
		c.NextAttemptAt, c.UpdatedAt = time.Time{}, now
		return putCursor(tx, c)
	})
	if err != nil {
		return fmt.Errorf("record payment events delivered to %s: %w", sink, err)
	}
	return nil
}

// RetryPayment keeps the head event seq waiting for sink until at, with
// the failure recorded; countAttempt is false for a shutdown's cancelled
// attempt.
func (s *Store) RetryPayment(sink string, seq uint64, at time.Time, kind, reason string, countAttempt bool) error {
	err := s.changeCursor(sink, seq, func(tx *bolt.Tx, c *PaymentCursor) error {
		if countAttempt {
			c.Attempts++
		}
		if reason != "" {
			c.LastError, c.ErrorKind = reason, kind
		}
		c.NextAttemptAt, c.UpdatedAt = at, at
		tx.OnCommit(func() { s.notifyPayments(sink) })
		return nil
	})
	if err != nil {
		return fmt.Errorf("reschedule payment event %d to %s: %w", seq, sink, err)
	}
	return nil
}

// FailPayment records that sink refused the head event seq for good and
// moves the cursor past it, in one transaction: the next event is due at
// once.
func (s *Store) FailPayment(sink string, seq uint64, kind, reason string, now time.Time) error {
	err := s.changeCursor(sink, seq, func(tx *bolt.Tx, c *PaymentCursor) error {
		f := PaymentFailure{Seq: seq, Sink: sink, Kind: kind, Reason: reason, Attempts: c.Attempts + 1, At: now}
		v, err := json.Marshal(f)
		if err != nil {
			return fmt.Errorf("encode payment failure: %w", err)
		}
		if err := tx.Bucket(bucketPaymentFailed).Put(failedKey(sink, seq), v); err != nil {
			return err
		}
		c.Through, c.Attempts, c.LastError, c.ErrorKind = seq, 0, "", ""
		c.NextAttemptAt, c.UpdatedAt = time.Time{}, now
		tx.OnCommit(func() { s.notifyPayments(sink) })
		return nil
	})
	if err != nil {
		return fmt.Errorf("record payment event %d failed at %s: %w", seq, sink, err)
	}
	return nil
}

// PaymentDeliveries says where event seq stands with each payment sink
// (SetPaymentSinks), in the order they were given; ErrNotFound for an
// unknown seq.
func (s *Store) PaymentDeliveries(seq uint64) ([]PaymentDelivery, error) {
	var out []PaymentDelivery
	err := s.db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketPaymentEvents).Get(seqKey(seq)) == nil {
			return ErrNotFound
		}
		for _, sink := range s.PaymentSinks() {
			c, err := getCursor(tx, sink)
			if err != nil {
				return err
			}
			out = append(out, paymentDelivery(tx, c, seq))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("deliveries of payment event %d: %w", seq, err)
	}
	return out, nil
}

func paymentDelivery(tx *bolt.Tx, c *PaymentCursor, seq uint64) PaymentDelivery {
	d := PaymentDelivery{Sink: c.Sink, State: DeliveryPending}
	switch {
	case seq <= c.Through:
		d.State = DeliveryDelivered
		if v := tx.Bucket(bucketPaymentFailed).Get(failedKey(c.Sink, seq)); v != nil {
			var f PaymentFailure
			if json.Unmarshal(v, &f) == nil {
				d.State, d.Attempts, d.LastError, d.ErrorKind = DeliveryFailed, f.Attempts, f.Reason, f.Kind
			}
		}
	case seq == headSeq(tx, c.Through):
		d.Attempts, d.LastError, d.ErrorKind = c.Attempts, c.LastError, c.ErrorKind
	}
	return d
}

// PaymentBacklog returns, for sink, how many logged events it has not
// handled and when the oldest of them was received (zero when none): the
// metrics read it without scanning the log.
func (s *Store) PaymentBacklog(sink string) (int, time.Time, error) {
	var (
		n      int
		oldest time.Time
	)
	err := s.db.View(func(tx *bolt.Tx) error {
		c, err := getCursor(tx, sink)
		if err != nil {
			return err
		}
		k, _ := tx.Bucket(bucketPaymentEvents).Cursor().Last()
		if k == nil {
			return nil
		}
		if last := binary.BigEndian.Uint64(k); last > c.Through {
			// From the head, not from Through: the log may have a gap
			// below the head (RaisePaymentSeq). One above it still
			// counts, until the sink passes it.
			hs := headSeq(tx, c.Through)
			n = int(last - hs + 1)
			head, err := getPaymentEvent(tx, hs)
			if err != nil && !errors.Is(err, ErrNotFound) {
				return err
			}
			if head != nil {
				oldest = head.ReceivedAt
			}
		}
		return nil
	})
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("payment backlog of %s: %w", sink, err)
	}
	return n, oldest, nil
}

// PaymentFailures lists the events sink refused for good, in log order
// (all sinks when sink is empty).
func (s *Store) PaymentFailures(sink string) ([]PaymentFailure, error) {
	var out []PaymentFailure
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketPaymentFailed).ForEach(func(k, v []byte) error {
			var f PaymentFailure
			if err := json.Unmarshal(v, &f); err != nil {
				return fmt.Errorf("decode payment failure %q: %w", k, err)
			}
			if sink == "" || f.Sink == sink {
				out = append(out, f)
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list payment failures: %w", err)
	}
	slices.SortFunc(out, func(a, b PaymentFailure) int {
		return cmp.Or(cmp.Compare(a.Seq, b.Seq), cmp.Compare(a.Sink, b.Sink))
	})
	return out, nil
}

// noteErasedDeliveries lists sink in the erasure record of every event in
// (after, through] that an erasure dropped while the sink was sending it:
// the sink read the body before the erasure and has it now, so the record
// must say so (DECISIONS 24), even when the erasure is already done.
func noteErasedDeliveries(tx *bolt.Tx, sink string, after, through uint64) error {
	bodies := tx.Bucket(bucketPaymentBodies)
	c := tx.Bucket(bucketPaymentEvents).Cursor()
	for k, v := c.Seek(seqKey(after + 1)); k != nil && binary.BigEndian.Uint64(k) <= through; k, v = c.Next() {
		if bodies.Get(k) != nil {
			continue // body still kept: not erased, nothing to decode
		}
		var e PaymentEvent
		if err := json.Unmarshal(v, &e); err != nil {
			return fmt.Errorf("decode payment event %d: %w", binary.BigEndian.Uint64(k), err)
		}
		if e.ErasedBy == "" {
			continue
		}
		if err := addPaymentReceipt(tx, e.ErasedBy, e.Seq, sink); err != nil {
			return err
		}
	}
	return nil
}

// addPaymentReceipt adds sink to the sinks that received payment event
// seq in erasure id's record, whatever the erasure's state.
func addPaymentReceipt(tx *bolt.Tx, id string, seq uint64, sink string) error {
	b := tx.Bucket(bucketErasures)
	if b == nil {
		return nil
	}
	v := b.Get([]byte(id))
	if v == nil {
		return nil // the record is gone; nothing to amend
	}
	var e Erasure
	if err := json.Unmarshal(v, &e); err != nil {
		return fmt.Errorf("decode erasure %s: %w", id, err)
	}
	for i := range e.Payments {
		p := &e.Payments[i]
		if p.Seq != seq || slices.Contains(p.Sinks, sink) {
			continue
		}
		p.Sinks = append(p.Sinks, sink)
		return putJSON(b, id, &e)
	}
	return nil
}
