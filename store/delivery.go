package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// DeliveryState is where one delivery (one batch's export to one sink) is.
// The states and who moves a delivery between them (DECISIONS 21-22):
//
//	(none) ──Finish(exported) of a new export, or an operator's Redeliver──▶ pending
//	pending ──dispatcher: the sink answered Retry (or shutdown)──▶ pending (due later)
//	pending ──dispatcher: Delivered──▶ delivered
//	pending ──dispatcher: Failed──▶ failed (never retried automatically)
//	delivered | failed ──Redeliver, or a refetch that replaced the export──▶ pending
//	pending | failed ──RecordRewrite (an erasure rewrote the export), or ExportChanged
//	                   (a sink found a newer version in place)──▶ pending (new version, from part 0)
//
// Every move to pending is a new generation of the newest export version,
// from its first part: the parts a delivery recorded belong to the version
// they were sent of, and a receiver deduplicating on message ids takes a
// new version's parts as new.
//
// A delivery in progress is not a state: the dispatcher holds it in memory,
// so after a crash it is simply pending and due again.
type DeliveryState string

// The delivery states.
const (
	DeliveryPending   DeliveryState = "pending"
	DeliveryDelivered DeliveryState = "delivered"
	DeliveryFailed    DeliveryState = "failed"
)

// DeliveryStates lists every delivery state (for metrics and docs).
var DeliveryStates = []DeliveryState{DeliveryPending, DeliveryDelivered, DeliveryFailed}

// Delivery is the durable record of one batch's export to one sink: the
// sink's outbox entry.
type Delivery struct {
	BatchID string        `json:"batch_id"`
	Sink    string        `json:"sink"`
	State   DeliveryState `json:"state"`
	// Version is the export version this generation delivers (see
	// Batch.ExportVersion): a change of the export's content moves every
	// delivery not yet delivered to the new version (ExportChanged).
	Version int `json:"version"`
	// Generation grows each time the delivery is queued again (a new
	// version or a redeliver); an outcome or progress recorded for an
	// older generation is refused with ErrState, so a delivery the
	// operator requeued mid-attempt is not marked done by the old attempt.
	Generation uint64 `json:"generation"`
	// Attempts counts the attempts of this generation that reached the
	// sink (a shutdown's cancelled attempt does not count).
	Attempts      int       `json:"attempts"`
	LastError     string    `json:"last_error,omitempty"`
	ErrorKind     string    `json:"error_kind,omitempty"`
	NextAttemptAt time.Time `json:"next_attempt_at"`
	CreatedAt     time.Time `json:"created_at"`
	// QueuedAt is when this generation was queued: the age of the oldest
	// pending delivery counts from it.
	QueuedAt    time.Time `json:"queued_at"`
	DeliveredAt time.Time `json:"delivered_at,omitzero"`
	// PartsDone is how many parts (from 1, in order) the sink has
	// delivered in this generation (sink.Progress).
	PartsDone int `json:"parts_done"`
}

// The delivery buckets, each updated in the transaction that changes a
// delivery:
//   - deliveries: batch id, 0, sink → the record (a batch's deliveries are
//     one prefix);
//   - delivery_due: one sub-bucket per sink, (next attempt, batch id) for
//     every pending delivery, so a dispatcher finds the next due one at
//     the first key;
//   - delivery_queued: one sub-bucket per sink, (queued at, batch id) for
//     every pending delivery: the first key is the oldest (metrics);
//   - delivery_state: state, 0, batch id, 0, sink: the admin lists by state;
//   - delivery_counts: sink, 0, state → count (metrics, no scan).
//
// An export every sink delivered while file is not in BATCHHOOK_SINKS is
// removed through a file removal (removal.go).
var (
	bucketDeliveries     = []byte("deliveries")
	bucketDeliveryDue    = []byte("delivery_due")
	bucketDeliveryQueued = []byte("delivery_queued")
	bucketDeliveryState  = []byte("delivery_state")
	bucketDeliveryCounts = []byte("delivery_counts")
)

// SetSinks tells the store the configured sinks other than file (from
// BATCHHOOK_SINKS): Finish queues one delivery for each, and each gets a
// wakeup channel. Call it once, before the fetcher and the dispatcher run.
func (s *Store) SetSinks(names []string) {
	s.sinkMu.Lock()
	defer s.sinkMu.Unlock()
	s.sinks = slices.Clone(names)
	s.sinkWake = make(map[string]chan struct{}, len(names))
	for _, n := range names {
		s.sinkWake[n] = make(chan struct{}, 1)
	}
}

// Sinks returns the sinks given to SetSinks.
func (s *Store) Sinks() []string {
	s.sinkMu.Lock()
	defer s.sinkMu.Unlock()
	return slices.Clone(s.sinks)
}

// DeliveryWakeups delivers a value after a commit that queued or
// rescheduled a delivery to sink, so that its idle dispatcher looks at
// once. It is nil (never ready) for a sink not given to SetSinks.
func (s *Store) DeliveryWakeups(sink string) <-chan struct{} {
	s.sinkMu.Lock()
	defer s.sinkMu.Unlock()
	return s.sinkWake[sink]
}

func (s *Store) notifySink(sink string) {
	s.sinkMu.Lock()
	ch := s.sinkWake[sink]
	s.sinkMu.Unlock()
	select {
	case ch <- struct{}{}:
	default: // full, or nil for an unconfigured sink
	}
}

func deliveryKey(batchID, sink string) []byte { return []byte(batchID + "\x00" + sink) }

func stateKey(d *Delivery) []byte {
	return []byte(string(d.State) + "\x00" + d.BatchID + "\x00" + d.Sink)
}

func getDelivery(tx *bolt.Tx, batchID, sink string) (*Delivery, error) {
	v := tx.Bucket(bucketDeliveries).Get(deliveryKey(batchID, sink))
	if v == nil {
		return nil, ErrNotFound
	}
	var d Delivery
	if err := json.Unmarshal(v, &d); err != nil {
		return nil, fmt.Errorf("decode delivery %s to %s: %w", batchID, sink, err)
	}
	return &d, nil
}

// sinkBucket returns the sub-bucket of sink inside parent, created on
// first use.
func sinkBucket(tx *bolt.Tx, parent []byte, sink string) (*bolt.Bucket, error) {
	b, err := tx.Bucket(parent).CreateBucketIfNotExists([]byte(sink))
	if err != nil {
		return nil, fmt.Errorf("create %s bucket of sink %s: %w", parent, sink, err)
	}
	return b, nil
}

// unindex removes d (as stored) from every index; index puts it back,
// with putDelivery writing the record. A change is unindex, edit, index.
func unindex(tx *bolt.Tx, d *Delivery) error {
	if d.State == DeliveryPending {
		due, err := sinkBucket(tx, bucketDeliveryDue, d.Sink)
		if err != nil {
			return err
		}
		if err := due.Delete(timeKey(d.NextAttemptAt, d.BatchID)); err != nil {
			return err
		}
		queued, err := sinkBucket(tx, bucketDeliveryQueued, d.Sink)
		if err != nil {
			return err
		}
		if err := queued.Delete(timeKey(d.QueuedAt, d.BatchID)); err != nil {
			return err
		}
	}
	if err := tx.Bucket(bucketDeliveryState).Delete(stateKey(d)); err != nil {
		return err
	}
	return addCountIn(tx.Bucket(bucketDeliveryCounts), d.Sink+"\x00"+string(d.State), -1)
}

func putDelivery(tx *bolt.Tx, d *Delivery) error {
	if d.State == DeliveryPending {
		due, err := sinkBucket(tx, bucketDeliveryDue, d.Sink)
		if err != nil {
			return err
		}
		if err := due.Put(timeKey(d.NextAttemptAt, d.BatchID), nil); err != nil {
			return err
		}
		queued, err := sinkBucket(tx, bucketDeliveryQueued, d.Sink)
		if err != nil {
			return err
		}
		if err := queued.Put(timeKey(d.QueuedAt, d.BatchID), nil); err != nil {
			return err
		}
	}
	if err := tx.Bucket(bucketDeliveryState).Put(stateKey(d), nil); err != nil {
		return err
	}
	if err := addCountIn(tx.Bucket(bucketDeliveryCounts), d.Sink+"\x00"+string(d.State), 1); err != nil {
		return err
	}
	v, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("encode delivery %s to %s: %w", d.BatchID, d.Sink, err)
	}
	return tx.Bucket(bucketDeliveries).Put(deliveryKey(d.BatchID, d.Sink), v)
}

// queueDelivery makes the delivery of b to sink pending, due at once, as a
// new generation from part 0, with version.
func (s *Store) queueDelivery(tx *bolt.Tx, b *Batch, sink string, version int, now time.Time) (*Delivery, error) {
	d, err := getDelivery(tx, b.ID, sink)
	switch {
	case err == nil:
		if err := unindex(tx, d); err != nil {
			return nil, err
		}
	case errors.Is(err, ErrNotFound):
		d = &Delivery{BatchID: b.ID, Sink: sink, CreatedAt: now}
	default:
		return nil, err
	}
	d.State, d.Version, d.Generation = DeliveryPending, version, d.Generation+1
	d.Attempts, d.LastError, d.ErrorKind, d.PartsDone = 0, "", "", 0
	d.NextAttemptAt, d.QueuedAt, d.DeliveredAt = now, now, time.Time{}
	if err := putDelivery(tx, d); err != nil {
		return nil, err
	}
	tx.OnCommit(func() { s.notifySink(sink) })
	return d, nil
}

// queueExport queues a delivery of b's new export to every configured sink
// (called by Finish in the transaction that records the export).
func (s *Store) queueExport(tx *bolt.Tx, b *Batch, now time.Time) error {
	for _, sink := range s.Sinks() {
		if _, err := s.queueDelivery(tx, b, sink, b.Version(), now); err != nil {
			return fmt.Errorf("queue delivery to %s: %w", sink, err)
		}
	}
	return nil
}

func decodeTimeKey(k []byte) (time.Time, string) {
	return time.Unix(0, int64(binary.BigEndian.Uint64(k[:8]))), string(k[8:])
}

// NextDelivery returns the pending delivery to sink that is due soonest,
// if due at now, skipping the batches busy says the dispatcher already
// holds; it writes nothing (a lease lives in the dispatcher's memory).
// When none is due it returns nil and when the next falls due (zero when
// none waits, or only busy ones).
func (s *Store) NextDelivery(sink string, now time.Time, busy func(batchID string) bool) (*Delivery, time.Time, error) {
	var (
		out  *Delivery
		next time.Time
	)
	err := s.db.View(func(tx *bolt.Tx) error {
		due := tx.Bucket(bucketDeliveryDue).Bucket([]byte(sink))
		if due == nil {
			return nil
		}
		c := due.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			at, id := decodeTimeKey(k)
			if at.After(now) {
				next = at
				return nil
			}
			if busy != nil && busy(id) {
				continue
			}
			d, err := getDelivery(tx, id, sink)
			if err != nil {
				return err
			}
			out = d
			return nil
		}
		return nil
	})
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("next delivery to %s: %w", sink, err)
	}
	return out, next, nil
}

// changeDelivery applies fn to the pending delivery of batchID to sink of
// generation gen, in one write transaction; ErrState when it is no longer
// pending or was queued again since.
func (s *Store) changeDelivery(batchID, sink string, gen uint64, fn func(tx *bolt.Tx, d *Delivery) error) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		d, err := getDelivery(tx, batchID, sink)
		if err != nil {
			return err
		}
		if d.State != DeliveryPending || d.Generation != gen {
			return fmt.Errorf("delivery of %s to %s is %s (generation %d), not the pending generation %d: %w",
				batchID, sink, d.State, d.Generation, gen, ErrState)
		}
		if err := unindex(tx, d); err != nil {
			return err
		}
		if err := fn(tx, d); err != nil {
			return err
		}
		return putDelivery(tx, d)
	})
}

// MarkParts records that parts 1..n of the delivery are delivered
// (sink.Progress.Mark); durable when it returns nil.
func (s *Store) MarkParts(batchID, sink string, gen uint64, n int) error {
	err := s.changeDelivery(batchID, sink, gen, func(_ *bolt.Tx, d *Delivery) error {
		d.PartsDone = n
		return nil
	})
	if err != nil {
		return fmt.Errorf("record parts of %s delivered to %s: %w", batchID, sink, err)
	}
	return nil
}

// RetryDelivery keeps the delivery pending, due at at, with the failure
// recorded; countAttempt is false for a shutdown's cancelled attempt.
func (s *Store) RetryDelivery(batchID, sink string, gen uint64, at time.Time, kind, reason string, countAttempt bool) error {
	err := s.changeDelivery(batchID, sink, gen, func(tx *bolt.Tx, d *Delivery) error {
		if countAttempt {
			d.Attempts++
		}
		if reason != "" {
			d.LastError, d.ErrorKind = reason, kind
		}
		d.NextAttemptAt = at
		tx.OnCommit(func() { s.notifySink(sink) })
		return nil
	})
	if err != nil {
		return fmt.Errorf("reschedule delivery of %s to %s: %w", batchID, sink, err)
	}
	return nil
}

// FailDelivery ends the delivery as failed with the reason; only an
// operator's Redeliver queues it again.
func (s *Store) FailDelivery(batchID, sink string, gen uint64, kind, reason string) error {
	err := s.changeDelivery(batchID, sink, gen, func(_ *bolt.Tx, d *Delivery) error {
		d.Attempts++
		d.State, d.LastError, d.ErrorKind = DeliveryFailed, reason, kind
		return nil
	})
	if err != nil {
		return fmt.Errorf("record failed delivery of %s to %s: %w", batchID, sink, err)
	}
	return nil
}

// Delivered ends the delivery as delivered at now. With dropExport (file
// is not a configured sink) and every configured sink now holding the
// batch's export, the batch is marked ExportRemoved and queued for
// removal (a FileRemoval without Purge) in the same transaction, and
// remove is true: the caller removes the directory and then calls
// FileRemovalDone.
func (s *Store) Delivered(batchID, sink string, gen uint64, now time.Time, dropExport bool) (remove bool, err error) {
	err = s.changeDelivery(batchID, sink, gen, func(tx *bolt.Tx, d *Delivery) error {
		d.Attempts++
		d.State, d.DeliveredAt, d.LastError, d.ErrorKind = DeliveryDelivered, now, "", ""
		if !dropExport {
			return nil
		}
		b, err := getBatch(tx, batchID)
		if err != nil {
			return err
		}
		if b.State != StateExported || b.ExportRemoved {
			return nil
		}
		for _, other := range s.Sinks() {
			if other == sink {
				continue
			}
			od, err := getDelivery(tx, batchID, other)
			if errors.Is(err, ErrNotFound) || err == nil && od.State != DeliveryDelivered {
				return nil
			}
			if err != nil {
				return err
			}
		}
		b.ExportRemoved, b.UpdatedAt = true, now
		if err := recordFileRemoval(tx, batchID, false); err != nil {
			return err
		}
		remove = true
		return putBatch(tx, b)
	})
	if err != nil {
		return false, fmt.Errorf("record delivery of %s to %s: %w", batchID, sink, err)
	}
	return remove, nil
}

// Redeliver queues the export of batchID to sink again, from part 0, with
// the newest version of the export (an explicit redeliver of the same
// export reuses its message ids). It
// returns ErrNotFound for an unknown batch and ErrState with the reason
// when the sink is not configured, the batch is not exported, or its
// export was removed after every sink had it.
func (s *Store) Redeliver(batchID, sink string, now time.Time) (*Delivery, error) {
	var out *Delivery
	err := s.db.Update(func(tx *bolt.Tx) error {
		b, err := getBatch(tx, batchID)
		if err != nil {
			return err
		}
		if !slices.Contains(s.Sinks(), sink) {
			return fmt.Errorf("sink %q is not configured (BATCHHOOK_SINKS): %w", sink, ErrState)
		}
		if b.State != StateExported {
			return fmt.Errorf("batch %s is %s; only an exported batch can be redelivered: %w", batchID, b.State, ErrState)
		}
		if b.ExportRemoved {
			return fmt.Errorf("batch %s: export removed; refetch it first: %w", batchID, ErrState)
		}
		// A redeliver sends the newest version: a delivery of an older
		// one (its sink was not configured when a refetch replaced the
		// export) must not lend its ids to the new content.
		out, err = s.queueDelivery(tx, b, sink, b.Version(), now)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("redeliver batch %s to %s: %w", batchID, sink, err)
	}
	return out, nil
}

// Deliveries returns the deliveries of batchID, by sink name.
func (s *Store) Deliveries(batchID string) ([]Delivery, error) {
	var out []Delivery
	err := s.db.View(func(tx *bolt.Tx) error {
		prefix := []byte(batchID + "\x00")
		c := tx.Bucket(bucketDeliveries).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			var d Delivery
			if err := json.Unmarshal(v, &d); err != nil {
				return fmt.Errorf("decode delivery %q: %w", k, err)
			}
			out = append(out, d)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("deliveries of %s: %w", batchID, err)
	}
	return out, nil
}
