package submit

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/store"
)

// TestEveryAttemptThatReachedTheProviderCountsAgainstTheRate: refused,
// unknown and 503 attempts reached the provider too; at most 10 of them
// go out in any minute, whatever their outcome.
func TestEveryAttemptThatReachedTheProviderCountsAgainstTheRate(t *testing.T) {
	for _, outcome := range []Outcome{OutcomeUnknown, OutcomeRejected, OutcomeServerError} {
		st := openStore(t)
		clock := &fakeClock{now: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
		queueChunks(t, st, 25, clock.Now())
		var script []Result
		for range 25 {
			script = append(script, Result{Outcome: outcome, Reason: "x"})
		}
		sender := &scriptedSender{clock: clock, st: st, script: script}
		s := newTestSubmitter(t, st, clock, sender)
		start := clock.Now()
		for clock.Now().Sub(start) < 59*time.Second {
			wait, err := s.Step(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			clock.Advance(max(wait, 100*time.Millisecond))
		}
		// A 503 also backs off, so it sends fewer; the others stop at the limit.
		if n := len(sender.calls); n > 10 || (outcome != OutcomeServerError && n != 10) {
			t.Fatalf("%s: %d POSTs in the first minute, want 10 (at most 10 after a 503)", outcome, n)
		}
	}
}

type failOnceQueue struct {
	*store.Store
	failed bool
}

func (q *failOnceQueue) ChunkSubmitted(seq uint64, index int, id string, pollAt, now time.Time) (*store.Batch, error) {
	if !q.failed {
		q.failed = true
		return nil, errors.New("injected: disk full")
	}
	return q.Store.ChunkSubmitted(seq, index, id, pollAt, now)
}

// TestAcceptedChunkIsRecordedAfterAStoreError: the provider accepted the
// chunk but the first commit failed; the submitter records it before
// sending anything else, then goes on.
func TestAcceptedChunkIsRecordedAfterAStoreError(t *testing.T) {
	st := openStore(t)
	clock := &fakeClock{now: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	queueChunks(t, st, 3, clock.Now())
	sender := &scriptedSender{clock: clock, st: st}
	s, err := NewSubmitter(SubmitterOptions{Queue: &failOnceQueue{Store: st}, Sender: sender, PerMinute: 10, MaxInFlight: 50,
		ReconcileAfter: time.Minute, BackoffBase: time.Second, BackoffMax: time.Minute, Now: clock.Now, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Step(context.Background()); err == nil {
		t.Fatal("the injected store error was not reported")
	}
	for range 10 {
		if _, err := s.Step(context.Background()); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Second)
	}
	b, err := st.Get("b0000")
	if err != nil || b.State != store.StateSubmitted || len(sender.calls) != 3 {
		t.Fatalf("b0000 = %+v (%v); %d sends, want 3 (each chunk once)", b, err, len(sender.calls))
	}
}

// TestShutdownDoesNotCutASubmissionOnTheWire: the daemon stops while the
// provider is answering; the answer is still read and recorded.
func TestShutdownDoesNotCutASubmissionOnTheWire(t *testing.T) {
	arrived := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		time.Sleep(300 * time.Millisecond)
		w.WriteHeader(http.StatusAccepted)
		w.Write([]byte(`{"batch_id":"b_late"}`))
	}))
	defer srv.Close()
	st := openStore(t)
	queueChunks(t, st, 1, time.Now())
	s, err := NewSubmitter(SubmitterOptions{Queue: st, Sender: newClient(t, srv.URL), Logger: zerolog.Nop(), PerMinute: 10,
		MaxInFlight: 50, ReconcileAfter: time.Minute, BackoffBase: time.Second, BackoffMax: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-arrived; cancel() }() // SIGTERM while the provider works
	if _, err := s.Step(ctx); err != nil {
		t.Fatal(err)
	}
	if b, err := st.Get("b_late"); err != nil || b.State != store.StateSubmitted {
		t.Fatalf("accepted batch after shutdown began: %+v, %v", b, err)
	}
}

type webhookDuringPoll struct{ st *store.Store }

func (w webhookDuringPoll) Status(_ context.Context, id string) (string, error) {
	w.st.Record(store.Notification{Event: "batch.completed", BatchID: id, Status: "completed", ReceivedAt: time.Now(), Source: store.SourceWebhook})
	return "processing", nil
}

// TestWebhookDuringPollIsNotAnError: the notification wins the race with a
// poll; the reconciler has nothing left to do and reports no error.
func TestWebhookDuringPollIsNotAnError(t *testing.T) {
	st := openStore(t)
	t0 := time.Now()
	if _, _, err := st.Track("b1", t0, t0); err != nil {
		t.Fatal(err)
	}
	r, _ := NewReconciler(ReconcilerOptions{Queue: st, Reader: webhookDuringPoll{st}, Logger: zerolog.Nop(),
		Retention: time.Hour, BackoffBase: time.Second, BackoffMax: time.Minute})
	if _, err := r.Step(context.Background()); err != nil {
		t.Fatalf("Step: %v", err)
	}
	if b, _ := st.Get("b1"); b.State != store.StateQueued || b.Notification.Source != store.SourceWebhook {
		t.Fatalf("batch %+v", b)
	}
}
