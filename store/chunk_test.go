package store

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

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
