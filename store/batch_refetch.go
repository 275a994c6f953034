package store

import (
	"encoding/json"
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
		if tx.Bucket(bucketExportRemovals).Get([]byte(id)) != nil {
			// The dispatcher removes the old directory next: a new export
			// published before that would be removed with it.
			return fmt.Errorf("batch %s: its export is being removed; try again in a moment: %w", id, ErrState)
		}
		if exportBeingPurged(tx, id) {
			// The purger deletes the old directory next: a new export
			// published before that would be deleted with it.
			return fmt.Errorf("batch %s: its purged export is being deleted; try again in a moment: %w", id, ErrState)
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

// RetentionStart is when the provider's retention clock started for b: its
// completed_at; when that is unknown, its submission (a batch batchhook
// submitted or tracks: the earliest it can have completed), or else the
// notification's receipt.
func (b *Batch) RetentionStart() time.Time {
	if t := b.Notification.CompletedAt; t != nil {
		return *t
	}
	if !b.SubmittedAt.IsZero() {
		return b.SubmittedAt
	}
	return b.Notification.ReceivedAt
}

// RetryNow makes every queued batch whose last failure was of kind due at
// once (after the API key was replaced, the batches waiting out a 401
// backoff should not keep waiting). It returns how many it moved.
func (s *Store) RetryNow(kind string, now time.Time) (int, error) {
	var n int
	err := s.db.Update(func(tx *bolt.Tx) error {
		due, err := pendingBatches(tx, func(b *Batch) bool {
			return b.State == StateQueued && b.ErrorKind == kind && b.NextAttemptAt.After(now)
		})
		if err != nil {
			return err
		}
		for _, b := range due {
			if err := schedule(tx, b, now); err != nil {
				return err
			}
			if err := putBatch(tx, b); err != nil {
				return err
			}
		}
		n = len(due)
		if n > 0 {
			tx.OnCommit(s.notify)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("retry %s batches now: %w", kind, err)
	}
	return n, nil
}

// ListQuarantined returns up to limit quarantine entries after cursor (an
// entry id; empty for the first page), in id order, without their raw
// bodies; next is empty at the end.
func (s *Store) ListQuarantined(limit int, cursor string) (entries []Quarantined, next string, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketQuarantine).Cursor()
		k, v := c.First()
		if cursor != "" {
			if k, v = c.Seek([]byte(cursor)); k != nil && string(k) == cursor {
				k, v = c.Next()
			}
		}
		for ; k != nil; k, v = c.Next() {
			if len(entries) == limit {
				next = entries[len(entries)-1].ID
				return nil
			}
			var q Quarantined
			if err := json.Unmarshal(v, &q); err != nil {
				return fmt.Errorf("decode quarantine entry: %w", err)
			}
			q.Raw = nil
			entries = append(entries, q)
		}
		return nil
	})
	if err != nil {
		return nil, "", fmt.Errorf("list quarantine: %w", err)
	}
	return entries, next, nil
}
