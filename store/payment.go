package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The payments product: every verified payments webhook is
// appended to an event log, numbered in commit order, before it is
// answered. The log is append-only: an event is never changed, except that
// its body is dropped (kept as its sha256) when RECORD_RETENTION passes or
// an erasure matches it.
//
// The buckets, all written in the transaction that appends an event:
//   - payment_events: seq (8 bytes, big-endian) → PaymentEvent as JSON,
//     without the body, so listing the log never reads personal data;
//   - payment_bodies: seq → the body exactly as received;
//   - payment_dedup: dedup key → seq (a retry or replay of a logged event
//     is answered from it and writes nothing).
var (
	bucketPaymentEvents = []byte("payment_events")
	bucketPaymentBodies = []byte("payment_bodies")
	bucketPaymentDedup  = []byte("payment_dedup")
)

// PaymentEvent is one logged payments webhook: its metadata. The body is
// kept apart (PaymentBody): it holds personal data (names, CPF, e-mail).
type PaymentEvent struct {
	// Seq numbers the log from 1, in commit order; every sink receives
	// events in this order.
	Seq        uint64    `json:"seq"`
	ReceivedAt time.Time `json:"received_at"`
	// Event is the X-Service-Event header as received (the document does
	// not show the payment events' names, so it is never interpreted).
	Event string `json:"event"`
	// Attempt is X-Service-Attempt of the delivery that was logged.
	Attempt int `json:"attempt"`
	// DedupKey is what identifies the event for deduplication
	// (BATCHHOOK_PAYMENTS_DEDUP_FIELDS, or the body's sha256).
	DedupKey string `json:"dedup_key"`
	// BodySHA256 is the hex SHA-256 of the body exactly as received: it
	// stays when the body is dropped, as its tombstone.
	BodySHA256 string `json:"body_sha256"`
	// BodyLen is the body's length in bytes.
	BodyLen int `json:"body_len"`
	// TransactionID is the body's transaction.id when it is a string
	// (Kafka's record key), empty otherwise.
	TransactionID string `json:"transaction_id,omitempty"`
	// BodyDroppedAt is when the body was removed (RECORD_RETENTION or an
	// erasure); zero while it is kept.
	BodyDroppedAt time.Time `json:"body_dropped_at,omitzero"`
	// ErasedBy names the erasure that removed the body because it held the
	// CPF being erased.
	ErasedBy string `json:"erased_by,omitempty"`
}

// seqKey is the big-endian key of a log sequence number: keys sort in log
// order.
func seqKey(seq uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], seq)
	return k[:]
}

func getPaymentEvent(tx *bolt.Tx, seq uint64) (*PaymentEvent, error) {
	v := tx.Bucket(bucketPaymentEvents).Get(seqKey(seq))
	if v == nil {
		return nil, ErrNotFound
	}
	var e PaymentEvent
	if err := json.Unmarshal(v, &e); err != nil {
		return nil, fmt.Errorf("decode payment event %d: %w", seq, err)
	}
	return &e, nil
}

func putPaymentEvent(tx *bolt.Tx, e *PaymentEvent) error {
	v, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode payment event %d: %w", e.Seq, err)
	}
	return tx.Bucket(bucketPaymentEvents).Put(seqKey(e.Seq), v)
}

// paymentWake wakes the payment dispatchers after a commit that appended
// an event (or rescheduled one); see SetPaymentSinks.
type paymentWake struct {
	mu    sync.Mutex
	sinks []string
	wake  map[string]chan struct{}
}

// SetPaymentSinks tells the store the sinks payment events go to (file,
// http, kafka, nats: the configured ones that take payments) and gives
// each a wakeup channel. Call it once, before the receiver and the
// dispatcher run.
func (s *Store) SetPaymentSinks(names []string) {
	s.payWake.mu.Lock()
	defer s.payWake.mu.Unlock()
	s.payWake.sinks = slices.Clone(names)
	s.payWake.wake = make(map[string]chan struct{}, len(names))
	for _, n := range names {
		s.payWake.wake[n] = make(chan struct{}, 1)
	}
}

// PaymentSinks returns the sinks given to SetPaymentSinks.
func (s *Store) PaymentSinks() []string {
	s.payWake.mu.Lock()
	defer s.payWake.mu.Unlock()
	return slices.Clone(s.payWake.sinks)
}

// PaymentWakeups delivers a value after a commit that appended a payment
// event or made one due for sink; nil (never ready) for a sink not given
// to SetPaymentSinks.
func (s *Store) PaymentWakeups(sink string) <-chan struct{} {
	s.payWake.mu.Lock()
	defer s.payWake.mu.Unlock()
	return s.payWake.wake[sink]
}

func (s *Store) notifyPayments(sink string) {
	s.payWake.mu.Lock()
	var chans []chan struct{}
	if sink == "" {
		for _, ch := range s.payWake.wake {
			chans = append(chans, ch)
		}
	} else if ch := s.payWake.wake[sink]; ch != nil {
		chans = append(chans, ch)
	}
	s.payWake.mu.Unlock()
	for _, ch := range chans {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// PaymentKnown looks dedupKey up in a read transaction: the seq of the
// event logged under it, and whether there is one. A "known" answer logged
// by the commit under way waits until that commit has returned, so a
// duplicate reply never promises an event that a failing commit may lose;
// it waits for no other commit (engine_durable.go).
func (s *Store) PaymentKnown(dedupKey string) (uint64, bool, error) {
	return s.PaymentKnownContext(context.Background(), dedupKey)
}

// PaymentKnownContext is PaymentKnown for a caller with a deadline:
// ErrSlowCommit when ctx ends before the commit that logged the event has
// returned.
func (s *Store) PaymentKnownContext(ctx context.Context, dedupKey string) (uint64, bool, error) {
	var seq uint64
	snap, err := s.db.viewAt(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketPaymentDedup).Get([]byte(dedupKey)); v != nil {
			seq = binary.BigEndian.Uint64(v)
		}
		return nil
	})
	if err == nil && seq != 0 {
		err = s.db.settled(ctx, lookupKey(bucketPaymentDedup, dedupKey), snap)
	}
	if err != nil {
		return 0, false, fmt.Errorf("look up payment event: %w", err)
	}
	return seq, seq != 0, nil
}

// RecordPayment appends e with its body raw to the log, in one durable
// transaction shared with concurrent callers (the group commit), unless an
// event with the same DedupKey is logged already: then it writes nothing
// and returns that event's seq and false. e.Seq is assigned here, in the
// order the events reach the group commit. The payment sinks are woken
// after the commit. raw is copied, so the caller may reuse its buffer once
// this returns.
func (s *Store) RecordPayment(e PaymentEvent, raw []byte) (seq uint64, created bool, err error) {
	return s.RecordPaymentContext(context.Background(), e, raw)
}

// RecordPaymentContext is RecordPayment for a caller with a deadline: when
// ctx ends before the commit returns it returns ErrSlowCommit, and the
// event may still be logged (a retry then finds it).
func (s *Store) RecordPaymentContext(ctx context.Context, e PaymentEvent, raw []byte) (seq uint64, created bool, err error) {
	if e.DedupKey == "" {
		return 0, false, errors.New("record payment event: empty dedup key")
	}
	res := s.write(ctx, "record payment event", s.appendPayment(e, bytes.Clone(raw))) // the commit may outlive the caller's wait
	return res.seq, res.created, res.err
}

// appendPayment is RecordPayment's write in the group's transaction.
func (s *Store) appendPayment(e PaymentEvent, raw []byte) func(tx *bolt.Tx) (writeRes, error) {
	return func(tx *bolt.Tx) (writeRes, error) {
		dedup := tx.Bucket(bucketPaymentDedup)
		if v := dedup.Get([]byte(e.DedupKey)); v != nil {
			return writeRes{seq: binary.BigEndian.Uint64(v)}, nil
		}
		events := tx.Bucket(bucketPaymentEvents)
		n, err := events.NextSequence()
		if err != nil {
			return writeRes{}, err
		}
		e.Seq = n
		e.BodyLen = len(raw)
		events.FillPercent = 1 // append-only: keys only grow
		if err := putPaymentEvent(tx, &e); err != nil {
			return writeRes{}, err
		}
		bodies := tx.Bucket(bucketPaymentBodies)
		bodies.FillPercent = 1
		if err := bodies.Put(seqKey(n), raw); err != nil {
			return writeRes{}, err
		}
		if err := dedup.Put([]byte(e.DedupKey), seqKey(n)); err != nil {
			return writeRes{}, err
		}
		s.db.mark(tx, lookupKey(bucketPaymentDedup, e.DedupKey))
		tx.OnCommit(func() { s.notifyPayments("") })
		return writeRes{seq: n, created: true}, nil
	}
}

// PaymentEvent returns the metadata of event seq, or ErrNotFound.
func (s *Store) PaymentEvent(seq uint64) (*PaymentEvent, error) {
	var e *PaymentEvent
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		e, err = getPaymentEvent(tx, seq)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("payment event %d: %w", seq, err)
	}
	return e, nil
}

// PaymentBody returns the body of event seq exactly as received; nil
// (and no error) once it was dropped; ErrNotFound for an unknown seq.
func (s *Store) PaymentBody(seq uint64) ([]byte, error) {
	var raw []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketPaymentEvents).Get(seqKey(seq)) == nil {
			return ErrNotFound
		}
		raw = bytes.Clone(tx.Bucket(bucketPaymentBodies).Get(seqKey(seq)))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("payment body %d: %w", seq, err)
	}
	return raw, nil
}

// PaymentEvents returns the metadata of at most limit events after seq
// since (0 = from the start), in log order.
func (s *Store) PaymentEvents(since uint64, limit int) ([]PaymentEvent, error) {
	var out []PaymentEvent
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketPaymentEvents).Cursor()
		for k, v := c.Seek(seqKey(since + 1)); k != nil && len(out) < limit; k, v = c.Next() {
			var e PaymentEvent
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("decode payment event %x: %w", k, err)
			}
			out = append(out, e)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list payment events after %d: %w", since, err)
	}
	return out, nil
}

// LastPaymentSeq returns the seq of the newest logged event (0 when none).
func (s *Store) LastPaymentSeq() (uint64, error) {
	var seq uint64
	err := s.db.View(func(tx *bolt.Tx) error {
		if k, _ := tx.Bucket(bucketPaymentEvents).Cursor().Last(); k != nil {
			seq = binary.BigEndian.Uint64(k)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("last payment event: %w", err)
	}
	return seq, nil
}
