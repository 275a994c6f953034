package store

import (
	"errors"
	"testing"
)

// Checkpoints commits every leased batch's checkpoint in one transaction;
// a batch that moved on, or that does not exist, fails alone.
func TestCheckpointsCommitTogetherAndFailAlone(t *testing.T) {
	s := openTest(t, t.TempDir())
	for _, id := range []string{"b1", "b2", "b3"} {
		if _, err := s.Record(note(id, t0)); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 { // b1 and b2 are leased; b3 stays queued
		if b, _, err := s.Lease(t0); b == nil || err != nil {
			t.Fatal(b, err)
		}
	}
	leased := map[string]bool{}
	for _, id := range []string{"b1", "b2", "b3"} {
		b, _ := s.Get(id)
		leased[id] = b.State == StateFetching
	}
	if !leased["b1"] || !leased["b2"] || leased["b3"] {
		t.Fatalf("leased: %v", leased)
	}
	var ups []CheckpointUpdate
	for i, id := range []string{"b1", "b2", "b3", "nope"} {
		ups = append(ups, CheckpointUpdate{ID: id, Checkpoint: Checkpoint{Cursor: "c", StagedBytes: int64(10 * (i + 1)), Items: 1, Pages: 1}})
	}
	errs := s.Checkpoints(ups, t0)
	for i, u := range ups {
		b, err := s.Get(u.ID)
		switch {
		case u.ID == "nope":
			if !errors.Is(errs[i], ErrNotFound) {
				t.Fatalf("unknown batch: %v", errs[i])
			}
		case leased[u.ID]:
			if errs[i] != nil || err != nil || b.Checkpoint != u.Checkpoint {
				t.Fatalf("%s: err %v, checkpoint %+v", u.ID, errs[i], b.Checkpoint)
			}
		default:
			if !errors.Is(errs[i], ErrState) || err != nil || b.Checkpoint != (Checkpoint{}) {
				t.Fatalf("%s (not leased): err %v, checkpoint %+v", u.ID, errs[i], b.Checkpoint)
			}
		}
	}
}
