package store

import (
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// RetryNow makes a queued batch that waits out a backoff due at now, on an
// operator's request (after fixing what made its fetches fail): its
// attempts, last error and checkpoint are kept, so a next failure backs off
// from where it was. The fetcher is woken when it commits. A queued batch
// already due is returned unchanged. It returns ErrNotFound for an unknown
// id, and ErrState, after the reason, for a batch in any other state:
// fetching (already being fetched), exported, abandoned or purged (Refetch
// fetches those again), submitted or tracked (nothing to fetch before its
// batch.completed).
func (s *Store) RetryNow(id string, now time.Time) (*Batch, error) {
	var out *Batch
	err := s.db.Update(func(tx *bolt.Tx) error {
		b, err := getBatch(tx, id)
		if err != nil {
			return err
		}
		if b.State != StateQueued {
			return fmt.Errorf("batch %s is %s: %s: %w", id, b.State, whyNoRetry(b.State), ErrState)
		}
		out = b
		if !b.NextAttemptAt.After(now) {
			return nil // already due: the fetcher takes it as it is
		}
		// The entry at the old time would only be skipped as stale by
		// Lease once reached; dropping it keeps the queue to one entry.
		if err := tx.Bucket(bucketDue).Delete(dueKey(b.NextAttemptAt, b.ID)); err != nil {
			return err
		}
		b.UpdatedAt = now
		if err := schedule(tx, b, now); err != nil {
			return err
		}
		tx.OnCommit(s.notify)
		return putBatch(tx, b)
	})
	if err != nil {
		return nil, fmt.Errorf("retry batch %s now: %w", id, err)
	}
	return out, nil
}

// whyNoRetry says, in an operator's words, why a batch in state s (not
// queued) cannot be retried now.
func whyNoRetry(s State) string {
	switch {
	case s == StateFetching:
		return "already being fetched"
	case s.Final():
		return "use refetch to fetch it again"
	case s.Awaiting():
		return "it waits for its batch.completed; there is nothing to fetch yet"
	default:
		return "only a queued batch can be retried now"
	}
}
