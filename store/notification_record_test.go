package store

import (
	"errors"
	"testing"
	"time"
)

func TestRecordIsIdempotentAndDurable(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if known, _ := s.Known("b1"); known {
		t.Fatal("b1 known before Record")
	}
	created, err := s.Record(note("b1", t0))
	if err != nil || !created {
		t.Fatalf("first Record = %v, %v", created, err)
	}
	second := note("b1", t0.Add(time.Minute))
	second.Status = "failed"
	created, err = s.Record(second)
	if err != nil || created {
		t.Fatalf("second Record = %v, %v; want not created", created, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, dir)
	b, err := s.Get("b1")
	if err != nil {
		t.Fatal(err)
	}
	if b.State != StateQueued || b.Notification.Status != "completed" || !b.Notification.ReceivedAt.Equal(t0) {
		t.Fatalf("record after reopen = %+v; want the first delivery, queued", b)
	}
	if string(b.Notification.Raw) != `{"raw":true}` || *b.Notification.TotalRequested != 3 {
		t.Fatalf("notification not kept: %+v", b.Notification)
	}
	if known, _ := s.Known("b1"); !known {
		t.Fatal("b1 not known after reopen")
	}
	if _, err := s.Get("nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get unknown = %v, want ErrNotFound", err)
	}
}

func TestRecordWakesTheFetcher(t *testing.T) {
	s := openTest(t, t.TempDir())
	if _, err := s.Record(note("b1", t0)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Wakeups():
	case <-time.After(5 * time.Second):
		t.Fatal("no wakeup after Record")
	}
}
