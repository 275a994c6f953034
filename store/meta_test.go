package store

import (
	"regexp"
	"sync"
	"testing"
)

// A stable id is made once, survives a reopen, differs per name and per
// database, and concurrent first calls agree on one value.
func TestStableIDSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	got := make([]string, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, err := s.StableID("kafka_transactional_id")
			if err != nil {
				t.Error(err)
			}
			got[i] = id
		}()
	}
	wg.Wait()
	first := got[0]
	if !regexp.MustCompile(`^batchhook-[0-9a-f]{16}$`).MatchString(first) {
		t.Fatalf("stable id %q has the wrong form", first)
	}
	for _, id := range got {
		if id != first {
			t.Fatalf("concurrent first calls disagree: %v", got)
		}
	}
	other, err := s.StableID("something_else")
	if err != nil || other == first {
		t.Fatalf("another name gave %q (%v), want a value of its own", other, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openTest(t, dir)
	again, err := s2.StableID("kafka_transactional_id")
	if err != nil || again != first {
		t.Fatalf("after reopen: %q (%v), want %q", again, err, first)
	}
	fresh, err := openTest(t, t.TempDir()).StableID("kafka_transactional_id")
	if err != nil || fresh == first {
		t.Fatalf("a new database gave %q (%v), want a new value", fresh, err)
	}
	if _, err := s2.StableID(""); err == nil {
		t.Fatal("an empty name was accepted")
	}
}
