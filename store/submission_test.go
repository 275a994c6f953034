package store

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func addSub(t *testing.T, s *Store, id string, chunks ...[]string) *Submission {
	t.Helper()
	sub, err := s.AddSubmission(Submission{ID: id, Valid: 3}, chunks, t0)
	if err != nil {
		t.Fatal(err)
	}
	return sub
}

func mustNext(t *testing.T, s *Store) *Chunk {
	t.Helper()
	c, err := s.NextChunk()
	if err != nil || c == nil {
		t.Fatalf("NextChunk = %v, %v; want a chunk", c, err)
	}
	return c
}

func TestChunksAreSentInOrderAndBecomeSubmittedBatches(t *testing.T) {
	s := openTest(t, t.TempDir())
	a := addSub(t, s, "sa", []string{"11144477735", "52998224725"}, []string{"12345678909"})
	b := addSub(t, s, "sb", []string{"39053344705"})
	if a.Seq >= b.Seq || a.Chunks != 2 {
		t.Fatalf("seq %d then %d, chunks %d", a.Seq, b.Seq, a.Chunks)
	}
	if _, err := s.AddSubmission(Submission{ID: "sa"}, nil, t0); !errors.Is(err, ErrExists) {
		t.Fatalf("second sa = %v, want ErrExists", err)
	}
	var got []string
	for i := range 3 {
		c := mustNext(t, s)
		got = append(got, c.SubmissionID+"/"+string(rune('0'+c.Index)))
		if len(c.CPFs) != c.CPFCount || c.CPFCount == 0 {
			t.Fatalf("chunk %+v: CPFs not kept until sent", c)
		}
		if err := s.ChunkSending(c.Seq, c.Index, t0); err != nil {
			t.Fatal(err)
		}
		id := "b" + string(rune('0'+i))
		batch, err := s.ChunkSubmitted(c.Seq, c.Index, id, t0.Add(time.Minute), t0)
		if err != nil {
			t.Fatal(err)
		}
		if batch.State != StateSubmitted || batch.SubmissionID != c.SubmissionID || batch.CPFCount != c.CPFCount || !batch.SubmittedAt.Equal(t0) {
			t.Fatalf("batch = %+v", batch)
		}
		if known, _ := s.Known(id); known {
			t.Fatalf("%s known: a webhook for a submitted batch must be accepted", id)
		}
	}
	if want := "sa/0 sa/1 sb/0"; strings.Join(got, " ") != want {
		t.Fatalf("order %v, want %s", got, want)
	}
	if c, err := s.NextChunk(); c != nil || err != nil {
		t.Fatalf("queue not empty: %+v, %v", c, err)
	}
	_, chunks, err := s.GetSubmission("sa")
	if err != nil || len(chunks) != 2 || chunks[1].BatchID != "b1" || chunks[1].State != ChunkSubmitted || chunks[0].CPFs != nil {
		t.Fatalf("GetSubmission = %+v, %v", chunks, err)
	}
	counts, _ := s.Counts()
	chunkCounts, _ := s.ChunkCounts()
	if counts[StateSubmitted] != 3 || chunkCounts[ChunkSubmitted] != 3 || chunkCounts[ChunkWaiting] != 0 {
		t.Fatalf("counts %v, chunk counts %v", counts, chunkCounts)
	}
	sends, err := s.RecentSends(t0.Add(-time.Minute))
	if err != nil || len(sends) != 3 {
		t.Fatalf("RecentSends = %v, %v", sends, err)
	}
	if _, _, err := s.GetSubmission("nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown submission = %v", err)
	}
}

// TestSubmittedChunkKeepsNoCPFs reads the stored chunk record itself: once
// the provider accepted a chunk, its CPFs are no longer kept.
func TestSubmittedChunkKeepsNoCPFs(t *testing.T) {
	s := openTest(t, t.TempDir())
	addSub(t, s, "sa", []string{"52998224725"})
	c := mustNext(t, s)
	raw := func() string {
		var v []byte
		s.db.View(func(tx *bolt.Tx) error {
			v = append(v, tx.Bucket(bucketChunks).Get(chunkKey(c.Seq, c.Index))...)
			return nil
		})
		return string(v)
	}
	if !strings.Contains(raw(), "52998224725") {
		t.Fatalf("waiting chunk lost its CPFs: %s", raw())
	}
	if err := s.ChunkSending(c.Seq, c.Index, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ChunkSubmitted(c.Seq, c.Index, "b1", t0, t0); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(raw(), "52998224725") {
		t.Fatalf("submitted chunk still holds its CPFs: %s", raw())
	}
}

// TestCrashBeforeSendingKeepsChunkWaiting: a chunk stored but not yet
// marked sending is sent normally after a restart.
func TestCrashBeforeSendingKeepsChunkWaiting(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir)
	addSub(t, s, "sa", []string{"52998224725"})
	s.Close()
	s = openTest(t, dir)
	unknown, err := s.ResolveSending(t0)
	if err != nil || len(unknown) != 0 {
		t.Fatalf("ResolveSending = %v, %v; want none", unknown, err)
	}
	if c := mustNext(t, s); c.State != ChunkWaiting || len(c.CPFs) != 1 {
		t.Fatalf("chunk after restart = %+v", c)
	}
}

// TestCrashWhileSendingLeavesSubmitUnknown: a chunk marked sending when the
// process died may have reached the provider; it is never sent again.
func TestCrashWhileSendingLeavesSubmitUnknown(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir)
	addSub(t, s, "sa", []string{"52998224725"}, []string{"11144477735"})
	c := mustNext(t, s)
	if err := s.ChunkSending(c.Seq, c.Index, t0); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openTest(t, dir)
	unknown, err := s.ResolveSending(t0)
	if err != nil || len(unknown) != 1 || unknown[0].Index != 0 || unknown[0].State != ChunkUnknown || unknown[0].CPFs != nil {
		t.Fatalf("ResolveSending = %+v, %v", unknown, err)
	}
	if next := mustNext(t, s); next.Index != 1 {
		t.Fatalf("next chunk = %d, want 1: the unknown one must not be sent again", next.Index)
	}
	listed, err := s.ChunksIn(ChunkUnknown, 10)
	counts, _ := s.ChunkCounts()
	if err != nil || len(listed) != 1 || counts[ChunkUnknown] != 1 || counts[ChunkWaiting] != 1 || counts[ChunkSending] != 0 {
		t.Fatalf("listed %+v (%v), counts %v", listed, err, counts)
	}
	if err := s.ChunkSending(c.Seq, c.Index, t0); !errors.Is(err, ErrState) {
		t.Fatalf("sending an unknown chunk again = %v, want ErrState", err)
	}
}

func TestChunkRequeueAndGiveUp(t *testing.T) {
	s := openTest(t, t.TempDir())
	addSub(t, s, "sa", []string{"52998224725"}, []string{"11144477735"})
	c := mustNext(t, s)
	s.ChunkSending(c.Seq, c.Index, t0)
	if err := s.ChunkRequeue(c.Seq, c.Index, "HTTP 429", true, t0); err != nil {
		t.Fatal(err)
	}
	again := mustNext(t, s)
	if again.Index != 0 || again.State != ChunkWaiting || again.Attempts != 1 || again.LastError != "HTTP 429" {
		t.Fatalf("requeued chunk = %+v; want it first, waiting", again)
	}
	s.ChunkSending(c.Seq, c.Index, t0)
	if err := s.ChunkGiveUp(c.Seq, c.Index, ChunkFailed, "HTTP 400: bad", t0); err != nil {
		t.Fatal(err)
	}
	if err := s.ChunkGiveUp(c.Seq, c.Index, ChunkSubmitted, "", t0); !errors.Is(err, ErrState) {
		t.Fatalf("give up as submitted = %v", err)
	}
	if next := mustNext(t, s); next.Index != 1 {
		t.Fatalf("next = %+v", next)
	}
}

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
	// accepted and queues the batch (issue 10 item 6), once.
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

// TestEveryAttemptThatReachedTheProviderCountsInTheRateWindow: accepted,
// refused, unknown and rate-limited attempts all count; one that never left
// does not; a crash mid-send counts at the restart.
func TestEveryAttemptThatReachedTheProviderCountsInTheRateWindow(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir)
	addSub(t, s, "sa", []string{"1"}, []string{"2"}, []string{"3"}, []string{"4"}, []string{"5"})
	step := func(settle func(c *Chunk) error) {
		t.Helper()
		c := mustNext(t, s)
		if err := s.ChunkSending(c.Seq, c.Index, t0); err != nil {
			t.Fatal(err)
		}
		if err := settle(c); err != nil {
			t.Fatal(err)
		}
	}
	at := func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
	step(func(c *Chunk) error { return s.ChunkRequeue(c.Seq, c.Index, "connection refused", false, at(1)) })
	step(func(c *Chunk) error { return s.ChunkRequeue(c.Seq, c.Index, "HTTP 429", true, at(2)) })
	step(func(c *Chunk) error { _, err := s.ChunkSubmitted(c.Seq, c.Index, "b1", at(100), at(3)); return err })
	step(func(c *Chunk) error { return s.ChunkGiveUp(c.Seq, c.Index, ChunkFailed, "HTTP 400", at(4)) })
	step(func(c *Chunk) error { return s.ChunkGiveUp(c.Seq, c.Index, ChunkUnknown, "timeout", at(5)) })
	c := mustNext(t, s)
	s.ChunkSending(c.Seq, c.Index, at(6))
	s.Close()
	s = openTest(t, dir)
	if _, err := s.ResolveSending(at(7)); err != nil {
		t.Fatal(err)
	}
	sends, err := s.RecentSends(t0)
	if err != nil {
		t.Fatal(err)
	}
	var secs []int
	for _, x := range sends {
		secs = append(secs, int(x.Sub(t0)/time.Second))
	}
	if fmt.Sprint(secs) != "[2 3 4 5 7]" {
		t.Fatalf("rate window holds attempts at %v s, want [2 3 4 5 7]", secs)
	}
}

func TestChunkResendIsAnOperatorDecision(t *testing.T) {
	s := openTest(t, t.TempDir())
	addSub(t, s, "sa", []string{"52998224725"}, []string{"11144477735"})
	c := mustNext(t, s)
	if _, err := s.ChunkResend("sa", 0, t0); !errors.Is(err, ErrState) {
		t.Fatalf("resend of a waiting chunk = %v, want ErrState", err)
	}
	s.ChunkSending(c.Seq, c.Index, t0)
	s.ChunkGiveUp(c.Seq, c.Index, ChunkUnknown, "timeout", t0)
	if next := mustNext(t, s); next.Index != 1 {
		t.Fatalf("next = %d", next.Index)
	}
	got, err := s.ChunkResend("sa", 0, t0)
	if err != nil || got.State != ChunkWaiting || got.CPFs != nil {
		t.Fatalf("ChunkResend = %+v, %v", got, err)
	}
	if next := mustNext(t, s); next.Index != 0 || len(next.CPFs) != 1 {
		t.Fatalf("resent chunk is not first in line with its CPFs: %+v", next)
	}
	if _, err := s.ChunkResend("nope", 0, t0); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown submission = %v", err)
	}
	counts, _ := s.ChunkCounts()
	if counts[ChunkUnknown] != 0 || counts[ChunkWaiting] != 2 {
		t.Fatalf("chunk counts %v", counts)
	}
}
