package submit

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/store"
)

// TestWaitSaysWhatHoldsTheSubmitterBack: the rate limit after 10 sends in
// a minute (until the first is a minute old), the in-flight cap at 50
// batches, nothing once the queue is empty.
func TestWaitSaysWhatHoldsTheSubmitterBack(t *testing.T) {
	st := openStore(t)
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	clock := &fakeClock{now: t0}
	queueChunks(t, st, 60, clock.Now())
	sender := &scriptedSender{clock: clock, st: st}
	s := newTestSubmitter(t, st, clock, sender)
	ctx := context.Background()
	for len(sender.calls) < 10 {
		if _, err := s.Step(ctx); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Second)
	}
	if w := s.Wait(); w.Reason != "" {
		t.Fatalf("after the tenth send: %+v, want nothing holding it yet", w)
	}
	wait, err := s.Step(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w := s.Wait()
	if w.Reason != WaitRateLimit || !w.Until.Equal(t0.Add(time.Minute)) || w.PerMinute != 10 || wait != w.Until.Sub(clock.Now()) {
		t.Fatalf("at the rate limit: %+v (wait %v), want rate_limit until %v", w, wait, t0.Add(time.Minute))
	}
	// 40 more pending chunks at 10 a minute: the last goes 3 minutes
	// after the limit lifts (bursts of 10 a minute apart).
	if done, ok := EstimateDone(w, 40, clock.Now()); !ok || !done.Equal(t0.Add(4*time.Minute)) {
		t.Fatalf("estimate %v %v, want %v", done, ok, t0.Add(4*time.Minute))
	}
	for len(sender.calls) < 50 {
		wait, err := s.Step(ctx)
		if err != nil {
			t.Fatal(err)
		}
		clock.Advance(wait)
	}
	if _, err := s.Step(ctx); err != nil {
		t.Fatal(err)
	}
	if w := s.Wait(); w.Reason != WaitInFlight || w.InFlight != 50 || w.MaxInFlight != 50 {
		t.Fatalf("with 50 batches in flight: %+v, want in_flight_cap 50/50", w)
	}
	if _, ok := EstimateDone(s.Wait(), 10, clock.Now()); ok {
		t.Fatal("an estimate under the in-flight cap, which the provider's pace decides")
	}
	for _, c := range sender.calls { // the provider finishes every batch
		if _, err := st.Record(store.Notification{Event: "batch.completed", BatchID: c.batchID, Status: "completed",
			ReceivedAt: clock.Now(), Source: store.SourceWebhook}); err != nil {
			t.Fatal(err)
		}
	}
	for len(sender.calls) < 60 {
		wait, err := s.Step(ctx)
		if err != nil {
			t.Fatal(err)
		}
		clock.Advance(wait)
	}
	if _, err := s.Step(ctx); err != nil {
		t.Fatal(err)
	}
	if w := s.Wait(); w.Reason != "" {
		t.Fatalf("with an empty queue: %+v, want nothing", w)
	}
}

// TestWaitKeepsARefusedKeyBehindTheRateLimit: retries of a refused key
// count against the rate, so the rate limit soon holds the chunk too; the
// wait still names the key (with its hint) and gives no estimate, since
// only an operator can end it. An accepted attempt clears it.
func TestWaitKeepsARefusedKeyBehindTheRateLimit(t *testing.T) {
	st := openStore(t)
	clock := &fakeClock{now: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	queueChunks(t, st, 1, clock.Now())
	refused := Result{Outcome: OutcomeAuth, Reason: "HTTP 401 from POST http://provider/api/v1/batches: the provider refused the API key"}
	sender := &scriptedSender{clock: clock, st: st}
	for range 10 {
		sender.script = append(sender.script, refused)
	}
	s, err := NewSubmitter(SubmitterOptions{Queue: st, Sender: sender, Logger: zerolog.Nop(), PerMinute: 10, MaxInFlight: 50,
		ReconcileAfter: time.Minute, BackoffBase: time.Second, BackoffMax: time.Second, Now: clock.Now, Jitter: func() float64 { return 0.5 }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for len(sender.calls) < 10 {
		wait, err := s.Step(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if w := s.Wait(); w.Reason != WaitBackoff || w.ErrorKind != "auth" || w.LastError != refused.Reason || w.Hint != Hint(OutcomeAuth) {
			t.Fatalf("after refusal %d: %+v, want backoff with the refused key", len(sender.calls), w)
		}
		clock.Advance(wait)
	}
	// Ten attempts in ten seconds: the rate limit holds the eleventh.
	if _, err := s.Step(ctx); err != nil {
		t.Fatal(err)
	}
	w := s.Wait()
	if w.Reason != WaitRateLimit || w.ErrorKind != "auth" || w.Hint == "" || len(sender.calls) != 10 {
		t.Fatalf("after 10 refusals in %v: %+v, want the rate limit with the refused key still named", clock.Now().Sub(sender.calls[0].at), w)
	}
	if _, ok := EstimateDone(w, 1, clock.Now()); ok {
		t.Fatal("an estimate while the key is refused")
	}
	for steps := 0; len(sender.calls) < 11; steps++ { // the key was fixed: the next attempt is accepted
		if steps > 10 {
			t.Fatalf("no eleventh attempt: %+v", s.Wait())
		}
		wait, err := s.Step(ctx)
		if err != nil {
			t.Fatal(err)
		}
		clock.Advance(wait)
	}
	if _, err := s.Step(ctx); err != nil {
		t.Fatal(err)
	}
	if w := s.Wait(); w.ErrorKind != "" || w.Hint != "" || w.Reason != "" {
		t.Fatalf("after an accepted attempt: %+v, want nothing", w)
	}
}
