package submit

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/store"
)

// fakeClock is advanced by the test (through Sleep) instead of real time.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// scriptedSender answers with the next scripted result, then "submitted".
type scriptedSender struct {
	clock  *fakeClock
	st     *store.Store
	script []Result
	calls  []sendCall
}

type sendCall struct {
	at       time.Time
	first    string // first CPF: identifies the chunk
	inFlight int
	batchID  string
}

func (s *scriptedSender) Submit(_ context.Context, cpfs []string) Result {
	counts, _ := s.st.Counts()
	call := sendCall{at: s.clock.Now(), first: cpfs[0], inFlight: counts[store.StateSubmitted]}
	res := Result{Outcome: OutcomeSubmitted, BatchID: fmt.Sprintf("b%04d", len(s.calls))}
	if len(s.script) > 0 {
		res, s.script = s.script[0], s.script[1:]
	}
	call.batchID = res.BatchID
	s.calls = append(s.calls, call)
	return res
}

func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(t.TempDir(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// queueChunks stores n one-CPF chunks named c0000, c0001, ….
func queueChunks(t *testing.T, st *store.Store, n int, now time.Time) {
	t.Helper()
	chunks := make([][]string, n)
	for i := range chunks {
		chunks[i] = []string{fmt.Sprintf("c%04d", i)}
	}
	if _, err := st.AddSubmission(store.Submission{ID: "s1"}, chunks, now); err != nil {
		t.Fatal(err)
	}
}

func newTestSubmitter(t *testing.T, st *store.Store, clock *fakeClock, sender Sender) *Submitter {
	t.Helper()
	s, err := NewSubmitter(SubmitterOptions{Queue: st, Sender: sender, Logger: zerolog.Nop(),
		PerMinute: 10, MaxInFlight: 50, ReconcileAfter: 15 * time.Minute,
		BackoffBase: time.Second, BackoffMax: 5 * time.Minute, Now: clock.Now, Jitter: func() float64 { return 0.5 }})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSubmitterAtTheProviderLimits runs 70 chunks through the submitter on
// a fake clock, with batches finishing 10 minutes after submission: it
// must reach but never pass 10 submissions in any rolling minute and 50
// batches in flight, and send every chunk exactly once, in order.
func TestSubmitterAtTheProviderLimits(t *testing.T) {
	st := openStore(t)
	clock := &fakeClock{now: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	queueChunks(t, st, 70, clock.Now())
	sender := &scriptedSender{clock: clock, st: st}
	s := newTestSubmitter(t, st, clock, sender)
	ctx := context.Background()
	completed := 0
	for steps := 0; len(sender.calls) < 70; steps++ {
		if steps > 10000 {
			t.Fatalf("stuck after %d sends", len(sender.calls))
		}
		wait, err := s.Step(ctx)
		if err != nil {
			t.Fatal(err)
		}
		clock.Advance(wait)
		// The provider finishes each batch 10 minutes after it was sent.
		for ; completed < len(sender.calls) && clock.Now().Sub(sender.calls[completed].at) >= 10*time.Minute; completed++ {
			n := store.Notification{Event: "batch.completed", BatchID: sender.calls[completed].batchID, Status: "completed",
				ReceivedAt: clock.Now(), Source: store.SourceWebhook}
			if ok, err := st.Record(n); err != nil || !ok {
				t.Fatalf("webhook for %s: %v %v", n.BatchID, ok, err)
			}
		}
	}
	maxInFlight, maxPerMinute := 0, 0
	for i, c := range sender.calls {
		if want := fmt.Sprintf("c%04d", i); c.first != want {
			t.Fatalf("send %d carried chunk %s, want %s (in order, once each)", i, c.first, want)
		}
		maxInFlight = max(maxInFlight, c.inFlight+1)
		n := 0
		for _, d := range sender.calls[i:] {
			if d.at.Sub(c.at) < time.Minute {
				n++
			}
		}
		maxPerMinute = max(maxPerMinute, n)
	}
	if maxInFlight != 50 || maxPerMinute != 10 {
		t.Fatalf("peak in flight %d (want exactly 50), peak per rolling minute %d (want exactly 10)", maxInFlight, maxPerMinute)
	}
	if c, _ := st.NextChunk(); c != nil {
		t.Fatalf("chunk %+v still queued", c)
	}
	if _, err := s.Step(ctx); err != nil {
		t.Fatal(err)
	}
	if len(sender.calls) != 70 {
		t.Fatalf("%d sends for 70 chunks", len(sender.calls))
	}
}

// TestSubmitterOutcomes: a 429 keeps the chunk first in line and waits out
// Retry-After; a request that never left is sent again; an unknown outcome
// and a refusal are never sent again.
func TestSubmitterOutcomes(t *testing.T) {
	st := openStore(t)
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	clock := &fakeClock{now: t0}
	queueChunks(t, st, 3, t0)
	sender := &scriptedSender{clock: clock, st: st, script: []Result{
		{Outcome: OutcomeRateLimited, RetryAfter: 30 * time.Second, Reason: "HTTP 429"},
		{Outcome: OutcomeNotSent, Reason: "connection refused"},
		{Outcome: OutcomeSubmitted, BatchID: "b-first"},
		{Outcome: OutcomeUnknown, Reason: "timeout after the request was sent"},
		{Outcome: OutcomeRejected, Reason: "HTTP 400"},
	}}
	s := newTestSubmitter(t, st, clock, sender)
	for range 20 {
		wait, err := s.Step(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		clock.Advance(wait)
	}
	var firsts []string
	for _, c := range sender.calls {
		firsts = append(firsts, c.first)
	}
	if want := []string{"c0000", "c0000", "c0000", "c0001", "c0002"}; !slices.Equal(firsts, want) {
		t.Fatalf("sends %v, want %v", firsts, want)
	}
	if gap := sender.calls[1].at.Sub(sender.calls[0].at); gap < 30*time.Second {
		t.Fatalf("resent %v after a 429 with Retry-After 30s", gap)
	}
	_, chunks, err := st.GetSubmission("s1")
	if err != nil {
		t.Fatal(err)
	}
	got := []store.ChunkState{chunks[0].State, chunks[1].State, chunks[2].State}
	if want := []store.ChunkState{store.ChunkSubmitted, store.ChunkUnknown, store.ChunkFailed}; !slices.Equal(got, want) {
		t.Fatalf("chunk states %v, want %v", got, want)
	}
	if chunks[0].BatchID != "b-first" || chunks[0].Attempts != 3 || chunks[1].LastError == "" {
		t.Fatalf("chunks %+v", chunks)
	}
	b, err := st.Get("b-first")
	if err != nil || b.State != store.StateSubmitted || !b.NextPollAt.Equal(b.SubmittedAt.Add(15*time.Minute)) {
		t.Fatalf("batch %+v, %v", b, err)
	}
}

// TestResumeEndsOnlyAnAuthPause: after a refused key, Resume (a reload)
// sends the chunk at once; after a 429 it does not shorten the wait.
func TestResumeEndsOnlyAnAuthPause(t *testing.T) {
	for _, tc := range []struct {
		outcome Outcome
		resumed bool
	}{{OutcomeAuth, true}, {OutcomeRateLimited, false}} {
		st := openStore(t)
		t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
		clock := &fakeClock{now: t0}
		queueChunks(t, st, 1, t0)
		sender := &scriptedSender{clock: clock, st: st, script: []Result{{Outcome: tc.outcome, Reason: "x"}}}
		s := newTestSubmitter(t, st, clock, sender)
		if wait, err := s.Step(context.Background()); err != nil || wait <= 0 {
			t.Fatalf("%s: first step wait %v, %v", tc.outcome, wait, err)
		}
		s.Resume()
		wait, err := s.Step(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if sent := len(sender.calls) == 2; sent != tc.resumed {
			t.Fatalf("%s: after Resume sent again = %v (wait %v), want %v", tc.outcome, sent, wait, tc.resumed)
		}
	}
}
