package store

import (
	"context"
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
//
// The requests are what the webhooks write: batch notifications (Record),
// payment events (RecordPayment), quarantine and audit entries. A caller
// whose context ends first stops waiting with ErrSlowCommit (its webhook
// answers 503 in time); a request the writer has taken is committed all the
// same, and the sender's retry then finds it.

// maxGroup bounds one transaction, so one commit's latency stays bounded.
const maxGroup = 512

// writeReq is one request to the group-commit writer.
type writeReq struct {
	// apply makes the request's writes in the group's transaction (and
	// marks the keys it makes known); an error fails the whole group.
	apply func(tx *bolt.Tx) (writeRes, error)
	// what names the request in its errors ("record batch b1").
	what string
	done chan writeRes
}

type writeRes struct {
	created bool
	seq     uint64
	err     error
}

// writer is the group-commit loop; it runs until quit is closed.
func (s *Store) writer() {
	defer close(s.writerDone)
	group := make([]writeReq, 0, maxGroup)
	for {
		select {
		case <-s.quit:
			for { // refuse what queued behind the close
				select {
				case r := <-s.records:
					r.done <- writeRes{err: fmt.Errorf("%s: %w", r.what, ErrClosed)}
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

// commitGroup applies every request of the group in one transaction. If the
// transaction fails, every caller gets the error (and answers 503).
func (s *Store) commitGroup(group []writeReq) {
	results := make([]writeRes, len(group))
	// The test knob refuses before anything is written: a write error
	// (counted, readiness false until a write commits), not a failed commit,
	// so the store recovers once the knob is removed.
	err := s.injectedFault()
	if err != nil {
		s.db.writeFailed(err)
	} else {
		err = s.db.Update(func(tx *bolt.Tx) error {
			for i, r := range group {
				res, err := r.apply(tx)
				if err != nil {
					return err
				}
				results[i] = res
			}
			return nil
		})
	}
	for i, r := range group {
		if err != nil {
			results[i] = writeRes{err: fmt.Errorf("%s: %w", r.what, err)}
		}
		r.done <- results[i]
	}
}

// write hands apply to the group-commit writer and waits for its commit.
// When ctx ends first it returns ErrSlowCommit: if the writer had taken the
// request, it is committed all the same.
func (s *Store) write(ctx context.Context, what string, apply func(tx *bolt.Tx) (writeRes, error)) writeRes {
	done := make(chan writeRes, 1)
	select {
	case s.records <- writeReq{apply: apply, what: what, done: done}:
	case <-s.quit:
		return writeRes{err: fmt.Errorf("%s: %w", what, ErrClosed)}
	case <-ctx.Done():
		return writeRes{err: fmt.Errorf("%s: not begun: %w (%w)", what, ErrSlowCommit, context.Cause(ctx))}
	}
	select {
	case res := <-done:
		return res
	case <-ctx.Done():
		return writeRes{err: fmt.Errorf("%s: its commit goes on: %w (%w)", what, ErrSlowCommit, context.Cause(ctx))}
	case <-s.writerDone:
		select { // the writer may have answered just before it stopped
		case res := <-done:
			return res
		default:
			return writeRes{err: fmt.Errorf("%s: %w", what, ErrClosed)}
		}
	}
}
