package store

import (
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Refetch puts an exported or abandoned batch back in the queue, due now,
// from the first page, marked so that its new export replaces the old one.
// A purged batch is refetched the same way while the provider still keeps
// its results; its tombstone stays as the history of the earlier export.
// It returns ErrState while the batch is queued or fetching (an operator
// cannot refetch what is already on its way), ErrState with the reason once
// retention has passed since RetentionStart (the provider no longer keeps
// the results: a refetch could only fail), and ErrNotFound for an unknown
// id.
func (s *Store) Refetch(id string, retention time.Duration, now time.Time) (*Batch, error) {
	var out *Batch
	err := s.db.Update(func(tx *bolt.Tx) error {
		b, err := getBatch(tx, id)
		if err != nil {
			return err
		}
		if !b.State.Final() {
			return fmt.Errorf("batch %s is %s: %w", id, b.State, ErrState)
		}
		// The old directory is deleted next (by the dispatcher, or the
		// purger for a purged export): a new export published before that
		// would be deleted with it.
		if r, ok := pendingFileRemoval(tx, id); ok && r.Purge {
			return fmt.Errorf("batch %s: its purged export is being deleted; try again in a moment: %w", id, ErrState)
		} else if ok {
			return fmt.Errorf("batch %s: its export is being removed; try again in a moment: %w", id, ErrState)
		}
		if start := b.RetentionStart(); now.Sub(start) > retention && b.State == StatePurged {
			return fmt.Errorf("batch %s was purged and the provider no longer keeps its results (retention %s from %s ended %s): %w",
				id, retention, start.UTC().Format(time.RFC3339), start.Add(retention).UTC().Format(time.RFC3339), ErrState)
		}
		if start := b.RetentionStart(); now.Sub(start) > retention {
			return fmt.Errorf("batch %s: the provider no longer keeps its results (retention %s from %s ended %s): %w",
				id, retention, start.UTC().Format(time.RFC3339), start.Add(retention).UTC().Format(time.RFC3339), ErrState)
		}
		if err := setState(tx, b, StateQueued); err != nil {
			return err
		}
		b.Checkpoint, b.FetchAttempts, b.LastError, b.ErrorKind = Checkpoint{}, 0, "", ""
		b.Refetch, b.RefetchAt, b.UpdatedAt, b.FinishedAt = true, now, now, time.Time{}
		if err := schedule(tx, b, now); err != nil {
			return err
		}
		tx.OnCommit(s.notify)
		out = b
		return putBatch(tx, b)
	})
	if err != nil {
		return nil, fmt.Errorf("refetch batch %s: %w", id, err)
	}
	return out, nil
}
