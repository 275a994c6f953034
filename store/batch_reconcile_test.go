package store

import (
	"errors"
	"testing"
	"time"
)

func TestWebhookMovesSubmittedBatchToQueuedOnce(t *testing.T) {
	s := openTest(t, t.TempDir())
	addSub(t, s, "sa", []string{"52998224725"})
	c := mustNext(t, s)
	s.ChunkSending(c.Seq, c.Index, t0)
	pollAt := t0.Add(15 * time.Minute)
	if _, err := s.ChunkSubmitted(c.Seq, c.Index, "b1", pollAt, t0); err != nil {
		t.Fatal(err)
	}
	if due, next, err := s.NextPoll(t0); due != nil || !next.Equal(pollAt) || err != nil {
		t.Fatalf("NextPoll before due = %v, %v, %v", due, next, err)
	}
	created, err := s.Record(note("b1", t0.Add(time.Minute)))
	if err != nil || !created {
		t.Fatalf("webhook for submitted batch = %v, %v; want accepted", created, err)
	}
	b, _ := s.Get("b1")
	if b.State != StateQueued || b.SubmissionID != "sa" || !b.CreatedAt.Equal(t0) || !b.NextPollAt.IsZero() {
		t.Fatalf("batch = %+v", b)
	}
	if due, next, _ := s.NextPoll(pollAt.Add(time.Hour)); due != nil || !next.IsZero() {
		t.Fatalf("batch still polled after its webhook: %v, %v", due, next)
	}
	if created, _ := s.Record(note("b1", t0.Add(2*time.Minute))); created {
		t.Fatal("second webhook accepted")
	}
	if known, _ := s.Known("b1"); !known {
		t.Fatal("b1 not known after its webhook")
	}
	counts, _ := s.Counts()
	if counts[StateSubmitted] != 0 || counts[StateQueued] != 1 {
		t.Fatalf("counts %v", counts)
	}
}

// TestWebhookBeforeSubmitCommit: the provider may notify before batchhook
// commits the batch id; the batch keeps its queued state and gains the
// submission's details.
func TestWebhookBeforeSubmitCommit(t *testing.T) {
	s := openTest(t, t.TempDir())
	addSub(t, s, "sa", []string{"52998224725"})
	c := mustNext(t, s)
	s.ChunkSending(c.Seq, c.Index, t0)
	if _, err := s.Record(note("b1", t0)); err != nil {
		t.Fatal(err)
	}
	b, err := s.ChunkSubmitted(c.Seq, c.Index, "b1", t0.Add(time.Hour), t0)
	if err != nil || b.State != StateQueued || b.SubmissionID != "sa" || !b.NextPollAt.IsZero() {
		t.Fatalf("ChunkSubmitted = %+v, %v", b, err)
	}
	counts, _ := s.Counts()
	if counts[StateSubmitted] != 0 || counts[StateQueued] != 1 {
		t.Fatalf("counts %v", counts)
	}
}

func TestPollRescheduleReconcileAndAbandon(t *testing.T) {
	s := openTest(t, t.TempDir())
	b, created, err := s.Track("bt", t0, t0)
	if err != nil || !created || b.State != StateTracked {
		t.Fatalf("Track = %+v, %v, %v", b, created, err)
	}
	if again, created, _ := s.Track("bt", t0.Add(time.Hour), t0); created || !again.NextPollAt.Equal(t0) {
		t.Fatalf("second Track changed the batch: %+v", again)
	}
	due, _, err := s.NextPoll(t0)
	if err != nil || due == nil || due.ID != "bt" {
		t.Fatalf("NextPoll = %v, %v", due, err)
	}
	if err := s.PollLater("bt", t0.Add(time.Minute), "", t0); err != nil {
		t.Fatal(err)
	}
	if due, next, _ := s.NextPoll(t0.Add(time.Second)); due != nil || !next.Equal(t0.Add(time.Minute)) {
		t.Fatalf("after PollLater: %v, %v", due, next)
	}
	n := note("bt", t0.Add(2*time.Minute))
	n.Source = SourcePoll
	if created, err := s.Record(n); err != nil || !created {
		t.Fatalf("poll result = %v, %v", created, err)
	}
	got, _ := s.Get("bt")
	if got.State != StateQueued || got.Notification.Source != SourcePoll || got.PollAttempts != 1 {
		t.Fatalf("reconciled batch = %+v", got)
	}
	if err := s.PollLater("bt", t0, "", t0); !errors.Is(err, ErrState) {
		t.Fatalf("PollLater on queued = %v", err)
	}

	s.Track("gone", t0, t0)
	if err := s.AbandonAwaiting("gone", "retention elapsed", t0); err != nil {
		t.Fatal(err)
	}
	gone, _ := s.Get("gone")
	if gone.State != StateAbandoned || gone.LastError != "retention elapsed" {
		t.Fatalf("abandoned = %+v", gone)
	}
	if due, next, _ := s.NextPoll(t0.Add(time.Hour)); due != nil || !next.IsZero() {
		t.Fatalf("abandoned batch still polled: %v %v", due, next)
	}
	counts, _ := s.Counts()
	if counts[StateTracked] != 0 || counts[StateAbandoned] != 1 || counts[StateQueued] != 1 {
		t.Fatalf("counts %v", counts)
	}
	// No notification was ever recorded for it: a late genuine one is
	// accepted and queues the batch, once.
	if known, _ := s.Known("gone"); known {
		t.Fatal("a batch abandoned before any notification is known: its late webhook would be a duplicate")
	}
	late := note("gone", t0.Add(3*time.Minute))
	if created, err := s.Record(late); err != nil || !created {
		t.Fatalf("late webhook for an abandoned batch = %v, %v; want accepted", created, err)
	}
	got, _ = s.Get("gone")
	if got.State != StateQueued || !got.Notification.ReceivedAt.Equal(late.ReceivedAt) || !got.FinishedAt.IsZero() || got.LastError != "" {
		t.Fatalf("late webhook left %+v", got)
	}
	if known, _ := s.Known("gone"); !known {
		t.Fatal("the late notification is recorded, yet the batch is not known")
	}
	if created, _ := s.Record(note("gone", t0.Add(4*time.Minute))); created {
		t.Fatal("a second late webhook was recorded again")
	}
	counts, _ = s.Counts()
	if counts[StateAbandoned] != 0 || counts[StateQueued] != 2 {
		t.Fatalf("counts after the late webhook %v", counts)
	}
}

// TestAbandonedAfterANotificationStaysKnown: a batch the fetcher abandoned
// had its notification recorded; a replay is a duplicate.
func TestAbandonedAfterANotificationStaysKnown(t *testing.T) {
	s := openTest(t, t.TempDir())
	if _, err := s.Record(note("b1", t0)); err != nil {
		t.Fatal(err)
	}
	if b, _, err := s.Lease(t0); err != nil || b == nil {
		t.Fatalf("Lease = %v, %v", b, err)
	}
	if err := s.Finish("b1", StateAbandoned, "", "gone", 0, t0); err != nil {
		t.Fatal(err)
	}
	if known, _ := s.Known("b1"); !known {
		t.Fatal("a batch abandoned after its notification is not known")
	}
	if created, _ := s.Record(note("b1", t0.Add(time.Minute))); created {
		t.Fatal("a replay re-queued a batch abandoned after its notification")
	}
}
