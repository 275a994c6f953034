package store

import (
	"context"
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
// way waits for it to return (engine_durable.go).
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

// Record stores the first accepted batch.completed for n.BatchID and makes
// the batch due at once, in a durable transaction shared with concurrent
// callers. It returns false when the batch was already recorded (a
// concurrent delivery won the race); the stored record is then unchanged.
func (s *Store) Record(n Notification) (bool, error) {
	return s.RecordContext(context.Background(), n)
}

// RecordContext is Record for a caller with a deadline: when ctx ends
// before the commit returns it returns ErrSlowCommit, and the record may
// still be committed.
func (s *Store) RecordContext(ctx context.Context, n Notification) (bool, error) {
	res := s.write(ctx, "record batch "+n.BatchID, func(tx *bolt.Tx) (writeRes, error) {
		created, err := recordTx(tx, n)
		if err != nil || !created {
			return writeRes{}, err
		}
		s.db.mark(tx, lookupKey(bucketBatches, n.BatchID))
		tx.OnCommit(s.notify)
		return writeRes{created: true}, nil
	})
	return res.created, res.err
}

// lookupKey is the key a webhook's lookup of id in bucket waits on
// (durableDB.mark and settled).
func lookupKey(bucket []byte, id string) string {
	return string(bucket) + "\x00" + id
}
