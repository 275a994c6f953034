package store

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestListNewestFirstPagedAndFiltered(t *testing.T) {
	s := openTest(t, t.TempDir())
	for i := 0; i < 7; i++ {
		if _, err := s.Record(note(fmt.Sprintf("b%d", i), t0.Add(time.Duration(i)*time.Second))); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		batches, next, err := s.List("", 3, cursor)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range batches {
			got = append(got, b.ID)
		}
		if next == "" {
			break
		}
		if pages > 5 {
			t.Fatal("cursor never ends")
		}
		cursor = next
	}
	if fmt.Sprint(got) != "[b6 b5 b4 b3 b2 b1 b0]" {
		t.Fatalf("listed %v", got)
	}
	// b0 (oldest) is leased and finished: only it is exported.
	b, _, _ := s.Lease(t0)
	if err := s.Finish(b.ID, StateExported, "/x", "", 0, t0); err != nil {
		t.Fatal(err)
	}
	exported, next, err := s.List(StateExported, 10, "")
	if err != nil || len(exported) != 1 || exported[0].ID != "b0" || next != "" {
		t.Fatalf("exported = %v, %q, %v", exported, next, err)
	}
	if _, _, err := s.List("", 3, "zz"); !errors.Is(err, ErrBadCursor) {
		t.Fatalf("bad cursor = %v", err)
	}
	counts, _ := s.Counts()
	if counts[StateQueued] != 6 || counts[StateExported] != 1 || counts[StateFetching] != 0 {
		t.Fatalf("counts = %v", counts)
	}
	oldest, ok, err := s.OldestPending()
	if err != nil || !ok || !oldest.Equal(t0.Add(time.Second)) {
		t.Fatalf("OldestPending = %v %v %v, want b1's time", oldest, ok, err)
	}
}
