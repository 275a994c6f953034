package submit

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/store"
)

// flakyMoves is a real store whose moves out of sending (ChunkRequeue,
// ChunkGiveUp) fail the first failures times, as a full disk or a
// transient I/O error would.
type flakyMoves struct {
	*store.Store
	failures int
	calls    int
	err      error // what a failure returns; nil = an I/O error
}

func (q *flakyMoves) fail() error {
	q.calls++
	if q.calls <= q.failures {
		if q.err != nil {
			return q.err
		}
		return errors.New("injected: input/output error")
	}
	return nil
}

func (q *flakyMoves) ChunkRequeue(seq uint64, index int, reason string, reached bool, now time.Time) error {
	if err := q.fail(); err != nil {
		return err
	}
	return q.Store.ChunkRequeue(seq, index, reason, reached, now)
}

func (q *flakyMoves) ChunkGiveUp(seq uint64, index int, state store.ChunkState, reason string, now time.Time) error {
	if err := q.fail(); err != nil {
		return err
	}
	return q.Store.ChunkGiveUp(seq, index, state, reason, now)
}

// TestFailedMoveOutOfSendingIsRetriedInPlace: after each outcome, the
// store refuses the chunk's transition three times; the submitter retries
// it with backoff on its own clock, and the chunk ends in the state the
// outcome calls for, never left sending (which would wedge every later
// step and become submit_unknown at the next start).
func TestFailedMoveOutOfSendingIsRetriedInPlace(t *testing.T) {
	for _, tc := range []struct {
		outcome Outcome
		want    store.ChunkState
	}{
		{OutcomeServerError, store.ChunkWaiting},
		{OutcomeNotSent, store.ChunkWaiting},
		{OutcomeRejected, store.ChunkFailed},
		{OutcomeUnknown, store.ChunkUnknown},
	} {
		t.Run(string(tc.outcome), func(t *testing.T) {
			st := openStore(t)
			clock := &fakeClock{now: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
			queueChunks(t, st, 2, clock.Now())
			q := &flakyMoves{Store: st, failures: 3}
			sender := &scriptedSender{clock: clock, st: st, script: []Result{{Outcome: tc.outcome, Reason: "x"}}}
			var slept []time.Duration
			s, err := NewSubmitter(SubmitterOptions{Queue: q, Sender: sender, Logger: zerolog.Nop(),
				PerMinute: 10, MaxInFlight: 50, ReconcileAfter: time.Minute, BackoffBase: time.Second, BackoffMax: time.Minute,
				Now: clock.Now, Jitter: func() float64 { return 0.5 },
				Sleep: func(ctx context.Context, d time.Duration) bool {
					slept = append(slept, d)
					clock.Advance(d)
					return ctx.Err() == nil
				}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Step(context.Background()); err != nil {
				t.Fatalf("Step: %v", err)
			}
			if q.calls != 4 || len(slept) != 3 || !(slept[0] < slept[1] && slept[1] < slept[2]) {
				t.Fatalf("%d store calls, sleeps %v: want 4 calls and 3 growing sleeps", q.calls, slept)
			}
			_, chunks, err := st.GetSubmission("s1")
			if err != nil {
				t.Fatal(err)
			}
			if chunks[0].State != tc.want {
				t.Fatalf("chunk 0 is %s, want %s", chunks[0].State, tc.want)
			}
			// The submitter is not wedged: the queue goes on (a waiting
			// chunk 0 is sent again, a given-up one is passed over).
			for range 5 {
				wait, err := s.Step(context.Background())
				if err != nil {
					t.Fatalf("later Step: %v", err)
				}
				clock.Advance(wait)
			}
			_, chunks, _ = st.GetSubmission("s1")
			if chunks[1].State != store.ChunkSubmitted {
				t.Fatalf("chunk 1 is %s after the store recovered, want submitted", chunks[1].State)
			}
			// A restart now finds nothing left sending.
			if unknown, err := st.ResolveSending(clock.Now()); err != nil || len(unknown) != 0 {
				t.Fatalf("ResolveSending at the next start: %v, %v", unknown, err)
			}
		})
	}
}

// TestMoveRetryEndsWithTheContext: a store that never recovers does not
// hold shutdown; Step returns an error once ctx ends.
func TestMoveRetryEndsWithTheContext(t *testing.T) {
	st := openStore(t)
	clock := &fakeClock{now: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	queueChunks(t, st, 1, clock.Now())
	q := &flakyMoves{Store: st, failures: 1 << 30}
	sender := &scriptedSender{clock: clock, st: st, script: []Result{{Outcome: OutcomeRejected, Reason: "x"}}}
	ctx, cancel := context.WithCancel(context.Background())
	s, err := NewSubmitter(SubmitterOptions{Queue: q, Sender: sender, Logger: zerolog.Nop(),
		PerMinute: 10, MaxInFlight: 50, ReconcileAfter: time.Minute, BackoffBase: time.Second, BackoffMax: time.Minute,
		Now: clock.Now, Sleep: func(ctx context.Context, d time.Duration) bool {
			if q.calls == 5 {
				cancel()
			}
			return ctx.Err() == nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := s.Step(ctx); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Step after shutdown: %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Step kept retrying after the context ended")
	}
	if q.calls != 5 {
		t.Fatalf("%d store calls, want 5", q.calls)
	}
}

// TestAFailedStoreEndsTheRetry: a store that failed closed (ErrFailed)
// never takes a write again and the daemon is exiting, and a chunk no
// longer sending (ErrState) or gone (ErrNotFound) cannot be moved: the
// submitter stops retrying at once instead of backing off for ever.
func TestAFailedStoreEndsTheRetry(t *testing.T) {
	for _, sentinel := range []error{store.ErrFailed, store.ErrState, store.ErrNotFound} {
		t.Run(sentinel.Error(), func(t *testing.T) {
			st := openStore(t)
			clock := &fakeClock{now: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
			queueChunks(t, st, 1, clock.Now())
			q := &flakyMoves{Store: st, failures: 1 << 30, err: fmt.Errorf("requeue chunk: %w", sentinel)}
			sender := &scriptedSender{clock: clock, st: st, script: []Result{{Outcome: OutcomeServerError, Reason: "x"}}}
			sleeps := 0
			s, err := NewSubmitter(SubmitterOptions{Queue: q, Sender: sender, Logger: zerolog.Nop(),
				PerMinute: 10, MaxInFlight: 50, ReconcileAfter: time.Minute, BackoffBase: time.Second, BackoffMax: time.Minute,
				Now: clock.Now, Jitter: func() float64 { return 0.5 },
				Sleep: func(ctx context.Context, d time.Duration) bool {
					sleeps++
					clock.Advance(d)
					return sleeps < 100 && ctx.Err() == nil
				}})
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.Step(context.Background())
			if !errors.Is(err, sentinel) || q.calls != 1 || sleeps != 0 {
				t.Fatalf("Step: %v after %d calls and %d sleeps; want %v at once", err, q.calls, sleeps, sentinel)
			}
		})
	}
}
