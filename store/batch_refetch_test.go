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

func TestRefetchOnlyFinalBatches(t *testing.T) {
	s := openTest(t, t.TempDir())
	if _, err := s.Record(note("b1", t0)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Refetch("b1", week, t0); !errors.Is(err, ErrState) {
		t.Fatalf("refetch of a queued batch = %v, want ErrState", err)
	}
	if _, err := s.Refetch("nope", week, t0); !errors.Is(err, ErrNotFound) {
		t.Fatalf("refetch of an unknown batch = %v", err)
	}
	b, _, _ := s.Lease(t0)
	s.Checkpoint("b1", Checkpoint{Done: true, Items: 3, Pages: 1, StagedBytes: 30}, t0)
	if _, err := s.Refetch("b1", week, t0); !errors.Is(err, ErrState) {
		t.Fatalf("refetch while fetching = %v, want ErrState", err)
	}
	if err := s.Finish(b.ID, StateExported, "/x/b1", "", 0, t0); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.OldestPending(); ok {
		t.Fatal("an exported batch is still pending")
	}
	r, err := s.Refetch("b1", week, t0.Add(time.Hour))
	if err != nil || r.State != StateQueued || !r.Refetch || r.Checkpoint != (Checkpoint{}) {
		t.Fatalf("Refetch = %+v, %v", r, err)
	}
	if _, ok, _ := s.OldestPending(); !ok {
		t.Fatal("a refetched batch is not pending")
	}
	b, _, _ = s.Lease(t0.Add(time.Hour))
	if b == nil || !b.Refetch {
		t.Fatalf("leased %+v, want the refetch", b)
	}
	s.Finish("b1", StateExported, "/x/b1", "", 0, t0)
	b, _ = s.Get("b1")
	if b.Refetch {
		t.Fatal("Refetch flag survives the export")
	}
}

func TestRetryNowMovesOnlyThatKind(t *testing.T) {
	s := openTest(t, t.TempDir())
	for _, id := range []string{"auth1", "auth2", "other"} {
		s.Record(note(id, t0))
		s.Lease(t0)
	}
	s.Retry("auth1", t0.Add(time.Hour), "auth", "401", true, t0)
	s.Retry("auth2", t0.Add(time.Hour), "auth", "403", true, t0)
	s.Retry("other", t0.Add(time.Hour), "transient", "500", true, t0)
	n, err := s.RetryNow("auth", t0)
	if err != nil || n != 2 {
		t.Fatalf("RetryNow = %d, %v", n, err)
	}
	leased := map[string]bool{}
	for {
		b, _, _ := s.Lease(t0)
		if b == nil {
			break
		}
		leased[b.ID] = true
	}
	if !leased["auth1"] || !leased["auth2"] || leased["other"] {
		t.Fatalf("leased %v", leased)
	}
}

func TestListQuarantined(t *testing.T) {
	s := openTest(t, t.TempDir())
	for _, id := range []string{"c", "a", "b"} {
		s.Quarantine(Quarantined{ID: id, Reason: "r" + id, Raw: []byte("{}")})
	}
	first, next, err := s.ListQuarantined(2, "")
	if err != nil || len(first) != 2 || first[0].ID != "a" || first[1].ID != "b" || next != "b" || first[0].Raw != nil {
		t.Fatalf("page 1 = %+v %q %v", first, next, err)
	}
	rest, next, _ := s.ListQuarantined(2, next)
	if len(rest) != 1 || rest[0].ID != "c" || next != "" {
		t.Fatalf("page 2 = %+v %q", rest, next)
	}
}
