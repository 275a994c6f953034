package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Known reports whether a batch.completed is already recorded for id (a
// batch batchhook submitted or tracks, still waiting for one, is not
// known; nor is one abandoned before any was recorded). It runs in a read
// transaction: answering a duplicate delivery never costs a write (an empty
// write transaction still fsyncs). A "known" written by the commit under
// way waits for it to return (durable.go).
func (s *Store) Known(id string) (bool, error) {
	return s.KnownContext(context.Background(), id)
}

// KnownContext is Known for a caller with a deadline: ErrSlowCommit when
// ctx ends before the commit that recorded the batch has returned.
func (s *Store) KnownContext(ctx context.Context, id string) (bool, error) {
	var known bool
	snap, err := s.db.viewAt(func(tx *bolt.Tx) error {
		known = tx.Bucket(bucketBatches).Get([]byte(id)) != nil && tx.Bucket(bucketAwaiting).Get([]byte(id)) == nil
		return nil
	})
	if err == nil && known {
		// Never a duplicate for a record whose commit is still syncing
		// (or then fails): wait for that commit, and only for it.
		err = s.db.settled(ctx, lookupKey(bucketBatches, id), snap)
	}
	if err != nil {
		return false, fmt.Errorf("look up batch %s: %w", id, err)
	}
	return known, nil
}

// recordTx adds the record of n unless a batch.completed is already
// recorded; it reports whether it did. A batch that was submitted or
// tracked, or abandoned before any notification came (a 404 past
// NOT_FOUND_GRACE, RETENTION), keeps its record and moves to queued with n
// as its notification.
func recordTx(tx *bolt.Tx, n Notification) (bool, error) {
	b, err := getBatch(tx, n.BatchID)
	switch {
	case errors.Is(err, ErrNotFound):
		b = &Batch{ID: n.BatchID, CreatedAt: n.ReceivedAt}
	case err != nil:
		return false, err
	case !b.awaitingNotification():
		return false, nil
	case b.State == StateAbandoned: // given up while no notification had come
		b.LastError, b.ErrorKind, b.FinishedAt = "", "", time.Time{}
	}
	b.Notification = n
	b.UpdatedAt = n.ReceivedAt
	if err := unschedulePoll(tx, b); err != nil {
		return false, err
	}
	if err := setState(tx, b, StateQueued); err != nil {
		return false, err
	}
	if err := schedule(tx, b, n.ReceivedAt); err != nil {
		return false, err
	}
	return true, putBatch(tx, b)
}

// Quarantine keeps a signed but invalid delivery. An entry with the same
// body hash is kept once; the call then writes nothing.
func (s *Store) Quarantine(q Quarantined) error {
	return s.QuarantineContext(context.Background(), q)
}

// QuarantineContext is Quarantine for a caller with a deadline
// (ErrSlowCommit, as RecordContext).
func (s *Store) QuarantineContext(ctx context.Context, q Quarantined) error {
	return s.putOnce(ctx, bucketQuarantine, q.ID, q)
}

// Audit keeps a signed delivery of another event. An identical body is kept
// once; the call then writes nothing.
func (s *Store) Audit(e AuditEvent) error {
	return s.AuditContext(context.Background(), e)
}

// AuditContext is Audit for a caller with a deadline (ErrSlowCommit, as
// RecordContext).
func (s *Store) AuditContext(ctx context.Context, e AuditEvent) error {
	return s.putOnce(ctx, bucketEvents, e.ID, e)
}

// putOnce keeps v under id in bucket unless an entry is there: a
// webhook's write, through the group commit. An entry found was perhaps
// written by the commit under way; then it waits for that one.
func (s *Store) putOnce(ctx context.Context, bucket []byte, id string, v any) error {
	key := lookupKey(bucket, id)
	var exists bool
	snap, err := s.db.viewAt(func(tx *bolt.Tx) error {
		exists = tx.Bucket(bucket).Get([]byte(id)) != nil
		return nil
	})
	if err == nil && exists {
		err = s.db.settled(ctx, key, snap)
	}
	if err != nil {
		return fmt.Errorf("look up %s entry: %w", bucket, err)
	}
	if exists {
		return nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s entry: %w", bucket, err)
	}
	res := s.write(ctx, fmt.Sprintf("store %s entry", bucket), func(tx *bolt.Tx) (writeRes, error) {
		b := tx.Bucket(bucket)
		if b.Get([]byte(id)) != nil {
			return writeRes{}, nil
		}
		s.db.mark(tx, key)
		return writeRes{created: true}, b.Put([]byte(id), data)
	})
	return res.err
}

// GetQuarantined returns the quarantine entry id, or ErrNotFound.
func (s *Store) GetQuarantined(id string) (*Quarantined, error) {
	var q Quarantined
	return &q, s.getJSON(bucketQuarantine, id, &q)
}

// GetAudit returns the audit entry id, or ErrNotFound.
func (s *Store) GetAudit(id string) (*AuditEvent, error) {
	var e AuditEvent
	return &e, s.getJSON(bucketEvents, id, &e)
}

func (s *Store) getJSON(bucket []byte, id string, v any) error {
	return s.db.View(func(tx *bolt.Tx) error {
		data := tx.Bucket(bucket).Get([]byte(id))
		if data == nil {
			return ErrNotFound
		}
		if err := json.Unmarshal(data, v); err != nil {
			return fmt.Errorf("decode %s entry %s: %w", bucket, id, err)
		}
		return nil
	})
}

// CountQuarantined returns the number of quarantine entries.
func (s *Store) CountQuarantined() (int, error) {
	var n int
	err := s.db.View(func(tx *bolt.Tx) error {
		n = tx.Bucket(bucketQuarantine).Stats().KeyN
		return nil
	})
	return n, err
}
