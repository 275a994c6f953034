package store

import (
	"errors"
	"testing"
)

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

func TestQuarantineAndAuditAreKeptOnce(t *testing.T) {
	s := openTest(t, t.TempDir())
	q := Quarantined{ID: "abc", Reason: "status bad", ReceivedAt: t0, Raw: []byte("{}")}
	for i := 0; i < 3; i++ {
		q.Reason = []string{"first", "second", "third"}[i]
		if err := s.Quarantine(q); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.GetQuarantined("abc")
	if err != nil || got.Reason != "first" {
		t.Fatalf("GetQuarantined = %+v, %v; want the first entry", got, err)
	}
	if n, _ := s.CountQuarantined(); n != 1 {
		t.Fatalf("CountQuarantined = %d", n)
	}
	if err := s.Audit(AuditEvent{ID: "e1", Event: "batch.started", BatchID: "b9", Raw: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	e, err := s.GetAudit("e1")
	if err != nil || e.Event != "batch.started" {
		t.Fatalf("GetAudit = %+v, %v", e, err)
	}
	if known, _ := s.Known("b9"); known {
		t.Fatal("an audited event made its batch known")
	}
	if _, err := s.GetQuarantined("zzz"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetQuarantined unknown = %v", err)
	}
}
