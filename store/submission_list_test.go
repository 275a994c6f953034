package store

import (
	"errors"
	"testing"
)

// TestListSubmissionsPagesWholeSubmissions: with several chunks each, a
// page of one holds one submission with all its chunks counted, and the
// cursor resumes at the next older one, across every page size.
func TestListSubmissionsPagesWholeSubmissions(t *testing.T) {
	s := openTest(t, t.TempDir())
	addSub(t, s, "s1", []string{"11144477735"}, []string{"52998224725"})
	addSub(t, s, "s2", []string{"12345678909"})
	addSub(t, s, "s3", []string{"11144477735"}, []string{"52998224725"}, []string{"12345678909"})
	c := mustNext(t, s) // s1's chunk 0 fails
	if err := s.ChunkSending(c.Seq, c.Index, t0); err != nil {
		t.Fatal(err)
	}
	if err := s.ChunkGiveUp(c.Seq, c.Index, ChunkFailed, "HTTP 400", t0); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		id     string
		chunks map[ChunkState]int
	}{
		{"s3", map[ChunkState]int{ChunkWaiting: 3}},
		{"s2", map[ChunkState]int{ChunkWaiting: 1}},
		{"s1", map[ChunkState]int{ChunkFailed: 1, ChunkWaiting: 1}},
	}
	for limit := 1; limit <= 4; limit++ {
		var got []SubmissionSummary
		cursor := ""
		for pages := 0; ; pages++ {
			page, next, err := s.ListSubmissions(limit, cursor)
			if err != nil || len(page) > limit || pages > len(want) {
				t.Fatalf("limit %d, page %d: %d items, %v", limit, pages, len(page), err)
			}
			got = append(got, page...)
			if next == "" {
				break
			}
			cursor = next
		}
		if len(got) != len(want) {
			t.Fatalf("limit %d: %d submissions, want %d", limit, len(got), len(want))
		}
		for i, w := range want {
			g := got[i]
			if g.ID != w.id || len(g.ChunkStates) != len(w.chunks) || g.Chunks != sum(w.chunks) {
				t.Fatalf("limit %d, item %d: %s %v, want %s %v", limit, i, g.ID, g.ChunkStates, w.id, w.chunks)
			}
			for st, n := range w.chunks {
				if g.ChunkStates[st] != n {
					t.Fatalf("limit %d, %s: %v, want %v", limit, g.ID, g.ChunkStates, w.chunks)
				}
			}
		}
	}
	if _, _, err := s.ListSubmissions(10, "nothex"); !errors.Is(err, ErrBadCursor) {
		t.Fatalf("a bad cursor: %v, want ErrBadCursor", err)
	}
}

func sum(m map[ChunkState]int) (n int) {
	for _, v := range m {
		n += v
	}
	return n
}
