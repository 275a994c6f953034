package store

import (
	"errors"
	"strings"
	"testing"
	"time"
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
