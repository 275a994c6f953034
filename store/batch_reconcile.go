package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Reconciliation: a submitted or tracked batch whose batch.completed has
// not come is polled. The polls bucket orders (next poll time, id), like
// the due bucket orders fetches; an entry is removed when the batch stops
// awaiting (webhook, poll result, abandonment) or is rescheduled.
var bucketPolls = []byte("polls")

func schedulePoll(tx *bolt.Tx, b *Batch, at time.Time) error {
	if err := unschedulePoll(tx, b); err != nil {
		return err
	}
	b.NextPollAt = at
	return tx.Bucket(bucketPolls).Put(timeKey(at, b.ID), nil)
}

func unschedulePoll(tx *bolt.Tx, b *Batch) error {
	if b.NextPollAt.IsZero() {
		return nil
	}
	err := tx.Bucket(bucketPolls).Delete(timeKey(b.NextPollAt, b.ID))
	b.NextPollAt = time.Time{}
	return err
}

// Track starts watching a batch submitted outside batchhook: it is recorded
// as tracked and polled at pollAt. It returns the batch and whether the
// call created it; a batch batchhook already knows is returned unchanged.
func (s *Store) Track(id string, pollAt, now time.Time) (*Batch, bool, error) {
	var (
		out     *Batch
		created bool
	)
	err := s.db.Update(func(tx *bolt.Tx) error {
		b, err := getBatch(tx, id)
		if err == nil {
			out = b
			return nil
		}
		if !errors.Is(err, ErrNotFound) {
			return err
		}
		b = &Batch{ID: id, CreatedAt: now, UpdatedAt: now, SubmittedAt: now}
		if err := setState(tx, b, StateTracked); err != nil {
			return err
		}
		if err := schedulePoll(tx, b, pollAt); err != nil {
			return err
		}
		out, created = b, true
		return putBatch(tx, b)
	})
	if err != nil {
		return nil, false, fmt.Errorf("track batch %s: %w", id, err)
	}
	if created {
		s.notifyPoll()
	}
	return out, created, nil
}

// NextPoll returns the awaiting batch whose poll is due soonest, if due at
// now. When none is due it returns nil and when the next one falls due
// (zero when none waits). It writes nothing: the entry stays until
// PollLater, Record or AbandonAwaiting replaces it, so a crash mid-poll
// only repeats the poll.
func (s *Store) NextPoll(now time.Time) (*Batch, time.Time, error) {
	var (
		due  *Batch
		next time.Time
	)
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketPolls).Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			at := time.Unix(0, int64(binary.BigEndian.Uint64(k[:8])))
			if at.After(now) {
				next = at
				return nil
			}
			b, err := getBatch(tx, string(k[8:]))
			if errors.Is(err, ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			if b.State.Awaiting() && b.NextPollAt.Equal(at) {
				due = b
				return nil
			}
		}
		return nil
	})
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("next poll: %w", err)
	}
	return due, next, nil
}

// PollLater records a poll that did not find batch id final (reason says
// why when the poll failed) and schedules the next one at at.
func (s *Store) PollLater(id string, at time.Time, reason string, now time.Time) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		b, err := getBatch(tx, id)
		if err != nil {
			return err
		}
		if !b.State.Awaiting() {
			return fmt.Errorf("batch %s is %s: %w", id, b.State, ErrState)
		}
		b.PollAttempts++
		b.LastError, b.UpdatedAt = reason, now
		if err := schedulePoll(tx, b, at); err != nil {
			return err
		}
		return putBatch(tx, b)
	})
	if err != nil {
		return fmt.Errorf("reschedule poll of batch %s: %w", id, err)
	}
	return nil
}

// AbandonAwaiting ends a submitted or tracked batch that never became
// final within RETENTION, with reason.
func (s *Store) AbandonAwaiting(id, reason string, now time.Time) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		b, err := getBatch(tx, id)
		if err != nil {
			return err
		}
		if !b.State.Awaiting() {
			return fmt.Errorf("batch %s is %s: %w", id, b.State, ErrState)
		}
		if err := unschedulePoll(tx, b); err != nil {
			return err
		}
		if err := setState(tx, b, StateAbandoned); err != nil {
			return err
		}
		b.LastError, b.UpdatedAt, b.FinishedAt = reason, now, now
		return putBatch(tx, b)
	})
	if err != nil {
		return fmt.Errorf("abandon batch %s: %w", id, err)
	}
	return nil
}

// PollWakeups delivers a value after a batch was submitted or tracked, so
// that the reconciler recomputes its next wake-up.
func (s *Store) PollWakeups() <-chan struct{} { return s.pollWake }

func (s *Store) notifyPoll() {
	select {
	case s.pollWake <- struct{}{}:
	default:
	}
}
