package store

import (
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Group commit. One fsynced bbolt transaction costs about as much for one
// record as for a hundred, so concurrent webhooks should share it. A
// single writer goroutine takes the first waiting request, then everything
// that queued while the previous commit ran (up to maxGroup), applies them
// all in one transaction and answers each caller after the commit: a 2xx is
// still only sent for a durable record. A lone request pays one commit and
// no added delay (unlike bbolt's DB.Batch, which waits up to 10 ms).

// maxGroup bounds one transaction, so one commit's latency stays bounded.
const maxGroup = 512

// ErrClosed is returned by Record after Close.
var ErrClosed = errors.New("store is closed")

type recordReq struct {
	n    Notification
	done chan recordRes
}

type recordRes struct {
	created bool
	err     error
}

// writer is the group-commit loop; it runs until quit is closed.
func (s *Store) writer() {
	defer close(s.writerDone)
	group := make([]recordReq, 0, maxGroup)
	for {
		select {
		case <-s.quit:
			for { // refuse what queued behind the close
				select {
				case r := <-s.records:
					r.done <- recordRes{err: ErrClosed}
				default:
					return
				}
			}
		case r := <-s.records:
			group = append(group[:0], r)
		}
	drain:
		for len(group) < maxGroup {
			select {
			case r := <-s.records:
				group = append(group, r)
			default:
				break drain
			}
		}
		s.commitGroup(group)
		// The slice is reused: drop its references to the bodies, or the
		// largest burst's (up to maxGroup × MAX_BODY_BYTES) stays alive.
		clear(group)
	}
}

// commitGroup records every request of the group in one transaction. If the
// transaction fails, every caller gets the error (and answers 503).
func (s *Store) commitGroup(group []recordReq) {
	results := make([]recordRes, len(group))
	// The test knob refuses before anything is written: a write error
	// (counted, readiness false until a write commits), not a failed commit,
	// so the store recovers once the knob is removed.
	err := s.injectedFault()
	if err != nil {
		s.db.writeFailed(err)
	} else {
		err = s.applyGroup(group, results)
	}
	for i, r := range group {
		if err != nil {
			results[i] = recordRes{err: fmt.Errorf("record batch %s: %w", r.n.BatchID, err)}
		}
		r.done <- results[i]
	}
}

// applyGroup applies the group in one transaction, filling in results.
func (s *Store) applyGroup(group []recordReq, results []recordRes) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		for i, r := range group {
			created, err := recordTx(tx, r.n)
			if err != nil {
				return err
			}
			results[i].created = created
			if created {
				tx.OnCommit(s.notify)
			}
		}
		return nil
	})
}

// Record stores the first accepted batch.completed for n.BatchID and makes
// the batch due at once, in a durable transaction shared with concurrent
// callers. It returns false when the batch was already recorded (a
// concurrent delivery won the race); the stored record is then unchanged.
func (s *Store) Record(n Notification) (bool, error) {
	done := make(chan recordRes, 1)
	select {
	case s.records <- recordReq{n: n, done: done}:
	case <-s.quit:
		return false, ErrClosed
	}
	select {
	case res := <-done:
		return res.created, res.err
	case <-s.writerDone:
		select { // the writer may have answered just before it stopped
		case res := <-done:
			return res.created, res.err
		default:
			return false, ErrClosed
		}
	}
}
