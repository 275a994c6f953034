package store

import (
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// CheckpointUpdate is one leased batch's new checkpoint, for Checkpoints.
type CheckpointUpdate struct {
	ID         string
	Checkpoint Checkpoint
}

// Checkpoints records the checkpoints of several leased batches in one
// durable transaction. Every checkpoint is its own fsynced commit
// otherwise, and the fetcher's workers queue for the one writer: sharing a
// commit is what lets FETCH_WORKERS pages be checkpointed for the price of
// one. Each update does what Checkpoint does. errs[i] is ups[i]'s outcome:
// a batch that cannot be read or is no longer fetching (ErrNotFound,
// ErrState) fails alone and the others commit; a failed write or commit
// fails them all.
func (s *Store) Checkpoints(ups []CheckpointUpdate, now time.Time) []error {
	errs := make([]error, len(ups))
	err := s.db.Update(func(tx *bolt.Tx) error {
		for i, u := range ups {
			errs[i] = nil // a retried transaction starts over
			b, err := getBatch(tx, u.ID)
			if err == nil && b.State != StateFetching {
				err = fmt.Errorf("batch %s is %s, want %s: %w", u.ID, b.State, StateFetching, ErrState)
			}
			if err != nil {
				errs[i] = fmt.Errorf("checkpoint batch %s: %w", u.ID, err)
				continue // nothing of this batch is written
			}
			b.Checkpoint = u.Checkpoint
			b.FetchAttempts = 0
			b.LastError, b.ErrorKind = "", ""
			b.UpdatedAt = now
			if err := putBatch(tx, b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		for i, u := range ups {
			errs[i] = fmt.Errorf("checkpoint batch %s: %w", u.ID, err)
		}
	}
	return errs
}

// Checkpoint is how far the fetch of a batch got. It is committed only after
// the staged bytes it counts are on disk, so a restart resumes at the next
// page with nothing lost or written twice.
type Checkpoint struct {
	// Cursor is the next_cursor to request next; empty before the first page.
	Cursor string `json:"cursor,omitempty"`
	// Done is true once the page with a null next_cursor is staged.
	Done bool `json:"done"`
	// StagedBytes is the length of the staged results file that the pages
	// so far account for; anything beyond it is cut on resume.
	StagedBytes int64 `json:"staged_bytes"`
	Items       int64 `json:"items"`
	Pages       int64 `json:"pages"`
	// Seen remembers every cursor this fetch was given, so that a cursor
	// that comes back (A→B→A…) is caught at once: the first 8 bytes of
	// each cursor's SHA-256, hex, concatenated (a string keeps Checkpoint
	// comparable and the record small; a batch has at most a few thousand
	// pages). The fetcher reads and extends it.
	Seen string `json:"seen_cursors,omitempty"`
}
