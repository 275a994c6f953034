package store

import (
	"fmt"
	"testing"
	"time"
)

func TestRejectedRingIsBoundedPurgedAndErased(t *testing.T) {
	s, err := Open(t.TempDir(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	entry := func(i int) Rejected {
		return Rejected{ReceivedAt: t0.Add(time.Duration(i) * time.Hour), Reason: "mismatch", Signature: fmt.Sprint("sig", i),
			Raw: []byte(fmt.Sprintf(`{"n":%d,"doc":"52998224725"}`, i)), BodyLen: 30}
	}
	if err := s.KeepRejected([]Rejected{entry(1), entry(2)}, 3); err != nil {
		t.Fatal(err)
	}
	if err := s.KeepRejected([]Rejected{entry(3), entry(4), entry(5)}, 3); err != nil {
		t.Fatal(err)
	}
	list, err := s.ListRejected()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 3 || list[0].ID != 5 || list[2].ID != 3 || list[0].Raw != nil || list[0].Signature != "sig5" {
		t.Fatalf("ring = %+v, want 5,4,3 without bodies", list)
	}
	r, err := s.GetRejected("4")
	if err != nil || string(r.Raw) != `{"n":4,"doc":"***********"}` || !r.Masked { // served masked
		t.Fatalf("GetRejected(4) = %+v, %v", r, err)
	}
	for _, id := range []string{"1", "0", "x", "99"} {
		if _, err := s.GetRejected(id); err != ErrNotFound {
			t.Fatalf("GetRejected(%s): %v, want ErrNotFound", id, err)
		}
	}
	// RECORD_RETENTION: entries received at or before the cut go.
	n, _, err := s.PurgeRejected(t0.Add(3*time.Hour), "", 100)
	if err != nil || n != 1 {
		t.Fatalf("PurgeRejected = %d, %v; want 1", n, err)
	}
	// An erasure reaches the kept bodies.
	if _, _, err := s.BeginErasure("h", t0); err != nil {
		t.Fatal(err)
	}
	es, err := s.Erasures(true)
	if err != nil || len(es) != 1 {
		t.Fatalf("erasures %v %v", es, err)
	}
	got, err := s.EraseBodies(es[0].ID, func(d string) bool { return d == "52998224725" })
	if err != nil || len(got) != 2 || got[0].Kind != "rejected" {
		t.Fatalf("EraseBodies = %+v, %v; want the 2 rejected bodies", got, err)
	}
	if r, _ := s.GetRejected("5"); r.Raw != nil || r.ErasedBy != es[0].ID {
		t.Fatalf("after erasure: %+v", r)
	}
	// Keep 0 empties the ring.
	if err := s.KeepRejected(nil, 0); err != nil {
		t.Fatal(err)
	}
	if list, _ := s.ListRejected(); len(list) != 0 {
		t.Fatalf("keep 0 left %d", len(list))
	}
}
