package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Lease moves the batch that is due soonest, if due at now, from queued to
// fetching and returns it: one worker holds one batch. When none is due it
// returns nil and the time the next one falls due (zero when none waits).
func (s *Store) Lease(now time.Time) (*Batch, time.Time, error) {
	var (
		leased *Batch
		next   time.Time
	)
	err := s.db.Update(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketDue).Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.First() {
			at := time.Unix(0, int64(binary.BigEndian.Uint64(k[:8])))
			if at.After(now) {
				next = at
				return nil
			}
			id := string(k[8:])
			if err := c.Delete(); err != nil {
				return fmt.Errorf("remove due entry %s: %w", id, err)
			}
			b, err := getBatch(tx, id)
			if errors.Is(err, ErrNotFound) {
				continue // stale entry: no such batch
			}
			if err != nil {
				return err
			}
			if b.State != StateQueued || !b.NextAttemptAt.Equal(at) {
				continue // stale entry: the batch moved on or was rescheduled
			}
			if err := setState(tx, b, StateFetching); err != nil {
				return err
			}
			b.UpdatedAt = now
			leased = b
			return putBatch(tx, b)
		}
		return nil
	})
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("lease batch: %w", err)
	}
	return leased, next, nil
}

// update applies fn to batch id inside one write transaction, after
// checking that the batch is in state want.
func (s *Store) update(id string, want State, fn func(tx *bolt.Tx, b *Batch) error) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b, err := getBatch(tx, id)
		if err != nil {
			return err
		}
		if b.State != want {
			return fmt.Errorf("batch %s is %s, want %s: %w", id, b.State, want, ErrState)
		}
		if err := fn(tx, b); err != nil {
			return err
		}
		return putBatch(tx, b)
	})
}

// Checkpoint records how far the fetch of a leased batch got. Call it only
// after the staged bytes that cp counts are synced to disk. A successful
// page also clears the batch's failure count.
func (s *Store) Checkpoint(id string, cp Checkpoint, now time.Time) error {
	err := s.update(id, StateFetching, func(_ *bolt.Tx, b *Batch) error {
		b.Checkpoint = cp
		b.FetchAttempts = 0
		b.LastError, b.ErrorKind = "", ""
		b.UpdatedAt = now
		return nil
	})
	if err != nil {
		return fmt.Errorf("checkpoint batch %s: %w", id, err)
	}
	return nil
}

// Retry puts a leased batch back in the queue after a failed attempt, due at
// at, with the failure recorded. countAttempt says whether the failure
// counts towards the backoff (a shutdown does not).
func (s *Store) Retry(id string, at time.Time, kind, reason string, countAttempt bool, now time.Time) error {
	err := s.update(id, StateFetching, func(tx *bolt.Tx, b *Batch) error {
		if err := setState(tx, b, StateQueued); err != nil {
			return err
		}
		if countAttempt {
			b.FetchAttempts++
		}
		if reason != "" {
			b.LastError, b.ErrorKind = reason, kind
		}
		b.UpdatedAt = now
		// Wake the dispatcher even for a future time: it may be sleeping
		// until a later due time, or for its whole idle poll.
		tx.OnCommit(s.notify)
		return schedule(tx, b, at)
	})
	if err != nil {
		return fmt.Errorf("requeue batch %s: %w", id, err)
	}
	return nil
}

// Restart puts a leased batch back in the queue, due at at, to be fetched
// again from the first page: its checkpoint is reset in the same
// transaction that records the failure, which counts towards the backoff.
// The fetcher calls it when the pages staged so far cannot be trusted (a
// cursor cycle, more pages or items than the batch can hold), after it has
// removed them.
func (s *Store) Restart(id string, at time.Time, kind, reason string, now time.Time) error {
	err := s.update(id, StateFetching, func(tx *bolt.Tx, b *Batch) error {
		if err := setState(tx, b, StateQueued); err != nil {
			return err
		}
		b.Checkpoint = Checkpoint{}
		b.FetchAttempts++
		b.LastError, b.ErrorKind = reason, kind
		b.UpdatedAt = now
		tx.OnCommit(s.notify)
		return schedule(tx, b, at)
	})
	if err != nil {
		return fmt.Errorf("restart batch %s: %w", id, err)
	}
	return nil
}

// Finish moves a leased batch to a final state: exported with its export
// path, or abandoned with the reason.
//
// Exported with no reason records a new export of version (the manifest's):
// in the same transaction one pending delivery of that version is queued
// per configured sink (SetSinks). Exported with a reason is a refetch that
// could not complete and kept the previous export: nothing is queued (its
// deliveries stand as they are) and version is not used.
func (s *Store) Finish(id string, state State, exportPath, reason string, version int, now time.Time) error {
	if !state.Final() {
		return fmt.Errorf("finish batch %s as %s: %w", id, state, ErrState)
	}
	err := s.update(id, StateFetching, func(tx *bolt.Tx, b *Batch) error {
		if err := setState(tx, b, state); err != nil {
			return err
		}
		newExport := state == StateExported && reason == ""
		if newExport && b.Refetch {
			b.Refetches++
		}
		b.Refetch = false
		b.ExportPath = exportPath
		if reason != "" {
			b.LastError = reason
		}
		b.UpdatedAt, b.FinishedAt = now, now
		if newExport {
			b.ExportRemoved = false
			b.ExportVersion = max(version, b.ExportVersion)
			return s.queueExport(tx, b, now)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("finish batch %s: %w", id, err)
	}
	return nil
}

// ReleaseLeases returns every batch left in fetching (by a crash or a kill)
// to queued, due at once, keeping its checkpoint. The daemon calls it at
// start, before any worker runs; it returns how many it released.
//
// It reads the leased index, not the records: a start costs the few
// batches the stopped run held, however many are stored. Open has made
// sure the index misses none (backfillLeased); an entry whose batch is no
// longer fetching is dropped. A released batch is put back in the pending
// index.
func (s *Store) ReleaseLeases(now time.Time) (int, error) {
	var n int
	err := s.db.Update(func(tx *bolt.Tx) error {
		var stuck []*Batch
		var stale [][]byte
		leased := tx.Bucket(bucketLeased)
		err := leased.ForEach(func(k, _ []byte) error {
			b, err := getBatch(tx, string(k))
			switch {
			case errors.Is(err, ErrNotFound):
				stale = append(stale, bytes.Clone(k))
			case err != nil:
				return err
			case b.State != StateFetching:
				stale = append(stale, bytes.Clone(k))
			default:
				stuck = append(stuck, b)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range stale {
			if err := leased.Delete(k); err != nil {
				return err
			}
		}
		for _, b := range stuck {
			if err := tx.Bucket(bucketPending).Put(timeKey(b.CreatedAt, b.ID), nil); err != nil {
				return err
			}
			if err := setState(tx, b, StateQueued); err != nil {
				return err
			}
			b.UpdatedAt = now
			if err := schedule(tx, b, now); err != nil {
				return err
			}
			if err := putBatch(tx, b); err != nil {
				return err
			}
		}
		n = len(stuck)
		if n > 0 {
			tx.OnCommit(s.notify)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("release leases: %w", err)
	}
	return n, nil
}

// fetchingMarker is how a record in fetching encodes its state. A string
// value cannot contain it unescaped, so a record without it is not fetching.
var fetchingMarker = []byte(`"state":"` + string(StateFetching) + `"`)

// pendingBatches returns the batches not in a final state that match keep,
// walking the pending index rather than every record ever stored.
func pendingBatches(tx *bolt.Tx, keep func(*Batch) bool) ([]*Batch, error) {
	var out []*Batch
	err := tx.Bucket(bucketPending).ForEach(func(k, _ []byte) error {
		b, err := getBatch(tx, string(k[8:]))
		if err != nil {
			return err
		}
		if keep(b) {
			out = append(out, b)
		}
		return nil
	})
	return out, err
}

// RetryKindNow makes every queued batch whose last failure was of kind due
// at once (after the API key was replaced, the batches waiting out a 401
// backoff should not keep waiting). It returns how many it moved.
func (s *Store) RetryKindNow(kind string, now time.Time) (int, error) {
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

// dueKey orders the due bucket by time, then id: the first key is the batch
// that is due soonest.
func dueKey(at time.Time, id string) []byte {
	k := make([]byte, 8+len(id))
	binary.BigEndian.PutUint64(k, uint64(at.UnixNano()))
	copy(k[8:], id)
	return k
}

func schedule(tx *bolt.Tx, b *Batch, at time.Time) error {
	b.NextAttemptAt = at
	due := tx.Bucket(bucketDue)
	due.FillPercent = appendFill
	return due.Put(dueKey(at, b.ID), nil)
}

// bucketDue is the fetch queue: a (due time, id) key for each queued batch
// (dueKey).
var bucketDue = []byte("due")
