package store

import (
	"errors"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func openTest(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func note(id string, at time.Time) Notification {
	n := int64(3)
	return Notification{Event: "batch.completed", BatchID: id, Status: "completed", TotalRequested: &n,
		ReceivedAt: at, Source: SourceWebhook, Raw: []byte(`{"raw":true}`), Attempt: 1}
}

func TestSecondOpenFailsFastWithErrLocked(t *testing.T) {
	dir := t.TempDir()
	openTest(t, dir)
	done := make(chan error, 1)
	go func() {
		s, err := Open(dir, 100*time.Millisecond)
		if err == nil {
			s.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrLocked) {
			t.Fatalf("second Open = %v, want ErrLocked", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("second Open still waiting after 3s; it must fail fast")
	}
}

func TestDatabaseFileMode(t *testing.T) {
	s := openTest(t, t.TempDir())
	st, err := statMode(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	if st&0o077 != 0 {
		t.Fatalf("database mode %o is readable by others", st)
	}
}
