package store

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Loader writes many records into a store in few transactions, for
// BulkLoad (engine_bulk.go): a database shaped like months of traffic is
// built in minutes instead of the days its webhooks took. Every record goes
// through the code the daemon's own writes use (putBatch, setState and the
// indexes it keeps, putDelivery, setChunkState, appendPayment,
// dropPaymentBody), so the counts, the pending, due, poll, awaiting and
// purge indexes and the outboxes are what the daemon would have left.
//
// What the Loader adds is order. bbolt rewrites every leaf page a
// transaction touches; keys that arrive at random (the provider's batch
// ids) touch a different page each, and a transaction of a hundred
// thousand of them would rewrite the whole of a large bucket. Positions
// writes the id index in id order, and deliveries given in batch id order
// are written in key order, so every bucket of a load is filled front to
// back (at FillPercent 1 where keys are written in order: pages a little
// fuller than a year of random arrivals leaves them).
//
// Values handed to the Loader (a batch's raw body, a payment's body) are
// kept until their transaction commits: the caller must not reuse them.
type Loader struct {
	s      *Store
	ops    []func(*bolt.Tx) error
	weight int
	dedup  []dedupEntry
}

// loadTxBytes is about how many bytes of records one load transaction
// writes: large enough that a commit's fixed cost vanishes, small enough
// that its pages stay a few hundred MB in memory.
const loadTxBytes = 96 << 20

// queue adds op, of about size bytes, to the current transaction and
// commits it once it is large enough.
func (l *Loader) queue(size int, op func(*bolt.Tx) error) error {
	l.ops = append(l.ops, op)
	l.weight += size
	if l.weight >= loadTxBytes {
		return l.flush()
	}
	return nil
}

// flush commits what is queued, in one transaction.
func (l *Loader) flush() error {
	if len(l.ops) == 0 {
		return nil
	}
	ops := l.ops
	l.ops, l.weight = nil, 0
	err := l.s.db.Update(func(tx *bolt.Tx) error {
		for _, op := range ops {
			if err := op(tx); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	return nil
}

// Flush commits what is queued so far (without fsync: BulkLoad syncs at
// its end).
func (l *Loader) Flush() error { return l.flush() }

// positionsPerTx bounds the id entries one Positions transaction writes.
const positionsPerTx = 500_000

// Positions gives each of ids, in the order given, the next record
// position, as the first write of each would (the records bucket lists
// newest first by position, so give them in arrival order), and writes the
// id index in id order. A later AddBatch of one of them writes its record
// at that place. An id already known is ErrExists.
func (l *Loader) Positions(ids []string) error {
	if err := l.flush(); err != nil {
		return err
	}
	var base uint64
	if err := l.s.db.View(func(tx *bolt.Tx) error {
		base = tx.Bucket(bucketRecords).Sequence()
		return nil
	}); err != nil {
		return fmt.Errorf("load positions: %w", err)
	}
	type entry struct {
		id  string
		pos uint64
	}
	sorted := make([]entry, len(ids))
	for i, id := range ids {
		sorted[i] = entry{id, base + uint64(i) + 1}
	}
	slices.SortFunc(sorted, func(a, b entry) int { return strings.Compare(a.id, b.id) })
	for from := 0; from < len(sorted); from += positionsPerTx {
		part := sorted[from:min(from+positionsPerTx, len(sorted))]
		last := from+len(part) == len(sorted)
		err := l.s.db.Update(func(tx *bolt.Tx) error {
			idx := tx.Bucket(bucketBatches)
			idx.FillPercent = appendFill
			for _, e := range part {
				if idx.Get([]byte(e.id)) != nil {
					return fmt.Errorf("batch %s: %w", e.id, ErrExists)
				}
				if err := idx.Put([]byte(e.id), binary.BigEndian.AppendUint64(nil, e.pos)); err != nil {
					return err
				}
			}
			if !last {
				return nil
			}
			return tx.Bucket(bucketRecords).SetSequence(base + uint64(len(ids)))
		})
		if err != nil {
			return fmt.Errorf("load positions: %w", err)
		}
	}
	return nil
}

// loadPaths are the states a batch passes through, from none, on its way
// to each state: AddBatch moves it along them with setState, so that each
// index ends as the daemon's own moves leave it.
var loadPaths = map[State][]State{
	StateSubmitted: {StateSubmitted},
	StateTracked:   {StateTracked},
	StateQueued:    {StateQueued},
	StateFetching:  {StateQueued, StateFetching},
	StateExported:  {StateQueued, StateFetching, StateExported},
	StateAbandoned: {StateQueued, StateFetching, StateAbandoned},
	StatePurged:    {StateQueued, StateFetching, StateExported, StatePurged},
}

// AddBatch writes b, a batch not recorded yet, as the pipeline leaves it
// in b.State: its moves along loadPaths go through setState (counts,
// pending, purge and awaiting indexes), a queued batch is scheduled at
// NextAttemptAt and a submitted or tracked one polled at NextPollAt, and
// a record whose tombstone says it was reduced (RecordPurgedAt) leaves the
// purge_records index, as PurgeRecords does. Give it the position first
// (Positions) when loading many.
func (l *Loader) AddBatch(b Batch) error {
	if _, ok := loadPaths[b.State]; !ok {
		return fmt.Errorf("load batch %s: unknown state %q", b.ID, b.State)
	}
	if err := CheckBatchID(b.ID); err != nil {
		return fmt.Errorf("load batch: %w", err)
	}
	return l.queue(512+len(b.Notification.Raw), func(tx *bolt.Tx) error {
		if err := loadBatch(tx, b); err != nil {
			return fmt.Errorf("batch %s: %w", b.ID, err)
		}
		return nil
	})
}

func loadBatch(tx *bolt.Tx, b Batch) error {
	if pos := tx.Bucket(bucketBatches).Get([]byte(b.ID)); pos != nil && tx.Bucket(bucketRecords).Get(recordKey(pos, b.ID)) != nil {
		return ErrExists
	}
	to, poll := b.State, b.NextPollAt
	b.State, b.NextPollAt = "", time.Time{}
	for _, st := range loadPaths[to] {
		if err := setState(tx, &b, st); err != nil {
			return err
		}
	}
	switch {
	case to == StateQueued:
		if err := schedule(tx, &b, b.NextAttemptAt); err != nil {
			return err
		}
	case to.Awaiting() && !poll.IsZero():
		if err := schedulePoll(tx, &b, poll); err != nil {
			return err
		}
	}
	if to.Final() && b.Tombstone != nil && !b.Tombstone.RecordPurgedAt.IsZero() {
		if err := tx.Bucket(bucketPurgeRecords).Delete(timeKey(b.CreatedAt, b.ID)); err != nil {
			return err
		}
	}
	return putBatch(tx, &b)
}

// AddDelivery writes d, a delivery not recorded yet, with its indexes and
// counts (putDelivery). Deliveries given in batch id order are written in
// key order.
func (l *Loader) AddDelivery(d Delivery) error {
	return l.queue(320, func(tx *bolt.Tx) error {
		ds := tx.Bucket(bucketDeliveries)
		if ds.Get(deliveryKey(d.BatchID, d.Sink)) != nil {
			return fmt.Errorf("delivery of %s to %s: %w", d.BatchID, d.Sink, ErrExists)
		}
		// In key order: full pages (putDelivery finds these buckets).
		ds.FillPercent, tx.Bucket(bucketDeliveryState).FillPercent = appendFill, appendFill
		return putDelivery(tx, &d)
	})
}

// AddSubmission writes sub and its chunks, each in the state it carries
// (a chunk's moves go through setChunkState: counts and the queue),
// numbered like AddSubmission's: sub.Seq and sub.Chunks are assigned, and
// each chunk's SubmissionID, Seq and Index.
func (l *Loader) AddSubmission(sub Submission, chunks []Chunk) error {
	size := 256
	for _, c := range chunks {
		size += 128 + 12*len(c.CPFs)
	}
	return l.queue(size, func(tx *bolt.Tx) error {
		subs := tx.Bucket(bucketSubmissions)
		if subs.Get([]byte(sub.ID)) != nil {
			return fmt.Errorf("submission %s: %w", sub.ID, ErrExists)
		}
		seq, err := subs.NextSequence()
		if err != nil {
			return err
		}
		sub.Seq, sub.Chunks = seq, len(chunks)
		for i := range chunks {
			c := chunks[i]
			c.SubmissionID, c.Seq, c.Index = sub.ID, seq, i
			to := c.State
			c.State = ""
			if err := setChunkState(tx, &c, ChunkWaiting); err != nil {
				return err
			}
			if to != ChunkWaiting {
				if err := setChunkState(tx, &c, to); err != nil {
					return err
				}
			}
			if err := putChunk(tx, &c); err != nil {
				return err
			}
		}
		return putJSON(subs, sub.ID, sub)
	})
}

// AddPayment appends e with its body raw to the payment log as
// RecordPayment does (the next seq, the event, the body); an event whose
// BodyDroppedAt is set then has its body dropped, as the purger leaves it
// (dropPaymentBody). The dedup keys, which arrive at random, are written
// at the end of the load in key order (as Positions writes the batch ids);
// a key logged twice fails the load there with ErrExists.
func (l *Loader) AddPayment(e PaymentEvent, raw []byte) error {
	if e.DedupKey == "" {
		return fmt.Errorf("load payment event: empty dedup key")
	}
	dropped := e.BodyDroppedAt
	e.BodyDroppedAt = time.Time{}
	return l.queue(256+len(raw), func(tx *bolt.Tx) error {
		events := tx.Bucket(bucketPaymentEvents)
		n, err := events.NextSequence()
		if err != nil {
			return err
		}
		e.Seq, e.BodyLen = n, len(raw)
		events.FillPercent = appendFill
		if err := putPaymentEvent(tx, &e); err != nil {
			return err
		}
		bodies := tx.Bucket(bucketPaymentBodies)
		bodies.FillPercent = appendFill
		if err := bodies.Put(seqKey(n), raw); err != nil {
			return err
		}
		l.dedup = append(l.dedup, dedupEntry{e.DedupKey, n})
		if dropped.IsZero() {
			return nil
		}
		return dropPaymentBody(tx, n, dropped, "")
	})
}

// dedupEntry is a payment event's dedup key and seq, for finish.
type dedupEntry struct {
	key string
	seq uint64
}

// finish commits what is queued and writes the payment dedup keys in key
// order (BulkLoad calls it at the end).
func (l *Loader) finish() error {
	if err := l.flush(); err != nil {
		return err
	}
	slices.SortFunc(l.dedup, func(a, b dedupEntry) int { return strings.Compare(a.key, b.key) })
	for from := 0; from < len(l.dedup); from += positionsPerTx {
		part := l.dedup[from:min(from+positionsPerTx, len(l.dedup))]
		err := l.s.db.Update(func(tx *bolt.Tx) error {
			dedup := tx.Bucket(bucketPaymentDedup)
			dedup.FillPercent = appendFill
			for _, e := range part {
				if dedup.Get([]byte(e.key)) != nil {
					return fmt.Errorf("payment event %d: dedup key %s: %w", e.seq, e.key, ErrExists)
				}
				if err := dedup.Put([]byte(e.key), seqKey(e.seq)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("load payment dedup keys: %w", err)
		}
	}
	l.dedup = nil
	return nil
}

// SetPaymentCursor records that sink has handled every payment event
// through seq, at at (PaymentsDelivered's cursor).
func (l *Loader) SetPaymentCursor(sink string, through uint64, at time.Time) error {
	return l.queue(128, func(tx *bolt.Tx) error {
		if through > 0 && tx.Bucket(bucketPaymentEvents).Get(seqKey(through)) == nil {
			return fmt.Errorf("payment event %d: %w", through, ErrNotFound)
		}
		return putCursor(tx, &PaymentCursor{Sink: sink, Through: through, UpdatedAt: at})
	})
}
