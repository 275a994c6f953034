package store

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// A queued batch waiting out a backoff is made due now, keeping its
// attempts and last error, and the fetcher is woken; Lease then takes it
// at now, not at the backoff's time.
func TestRetryNowMakesAWaitingBatchDue(t *testing.T) {
	s := openTest(t, t.TempDir())
	if _, err := s.Record(note("b1", t0)); err != nil {
		t.Fatal(err)
	}
	if b, _, _ := s.Lease(t0); b == nil {
		t.Fatal("b1 not leased")
	}
	later := t0.Add(time.Hour)
	if err := s.Retry("b1", later, "transient", "500 from the provider", true, t0); err != nil {
		t.Fatal(err)
	}
	drainWakeups(s)
	now := t0.Add(time.Minute)
	if b, next, _ := s.Lease(now); b != nil || !next.Equal(later) {
		t.Fatalf("before RetryNow: leased %v, next %v; want nothing until %v", b, next, later)
	}
	b, err := s.RetryNow("b1", now)
	if err != nil {
		t.Fatal(err)
	}
	if b.State != StateQueued || !b.NextAttemptAt.Equal(now) || b.FetchAttempts != 1 || b.LastError != "500 from the provider" {
		t.Fatalf("RetryNow = %+v, want queued, due %v, 1 attempt and the last error kept", b, now)
	}
	select {
	case <-s.Wakeups():
	case <-time.After(5 * time.Second):
		t.Fatal("no wakeup after RetryNow")
	}
	if got, _ := s.Get("b1"); !got.NextAttemptAt.Equal(now) || got.FetchAttempts != 1 {
		t.Fatalf("stored %+v, want due %v with 1 attempt", got, now)
	}
	leased, _, err := s.Lease(now)
	if err != nil || leased == nil || leased.ID != "b1" {
		t.Fatalf("Lease after RetryNow = %v, %v; want b1", leased, err)
	}
	// The old entry at the backoff's time went with it: nothing else is
	// queued, not even a stale entry for later.
	if b, next, _ := s.Lease(later); b != nil || !next.IsZero() {
		t.Fatalf("after the lease: leased %v, next %v; want an empty queue", b, next)
	}
}

// A queued batch already due is returned unchanged, without an error.
func TestRetryNowOfADueBatchChangesNothing(t *testing.T) {
	s := openTest(t, t.TempDir())
	if _, err := s.Record(note("b1", t0)); err != nil {
		t.Fatal(err)
	}
	before, _ := s.Get("b1")
	b, err := s.RetryNow("b1", t0.Add(time.Hour))
	if err != nil || b.State != StateQueued || !b.NextAttemptAt.Equal(before.NextAttemptAt) || !b.UpdatedAt.Equal(before.UpdatedAt) {
		t.Fatalf("RetryNow of a due batch = %+v, %v; want it unchanged (%+v)", b, err, before)
	}
}

// Any state but queued is refused with ErrState and the reason in words,
// and the batch is left as it was; an unknown id is ErrNotFound.
func TestRetryNowRefusesOtherStates(t *testing.T) {
	s := openTest(t, t.TempDir())
	for _, id := range []string{"fetching", "exported", "abandoned"} {
		if _, err := s.Record(note(id, t0)); err != nil {
			t.Fatal(err)
		}
		if b, _, _ := s.Lease(t0); b == nil || b.ID != id {
			t.Fatalf("leased %v, want %s", b, id)
		}
	}
	if err := s.Finish("exported", StateExported, "/x/exported", "", 0, t0); err != nil {
		t.Fatal(err)
	}
	if err := s.Finish("abandoned", StateAbandoned, "", "404 past NOT_FOUND_GRACE", 0, t0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Track("tracked", t0.Add(time.Hour), t0); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		"fetching":  "already being fetched",
		"exported":  "use refetch",
		"abandoned": "use refetch",
		"tracked":   "it waits for its batch.completed",
	}
	for id, want := range cases {
		before, _ := s.Get(id)
		_, err := s.RetryNow(id, t0.Add(time.Minute))
		if !errors.Is(err, ErrState) || !strings.Contains(err.Error(), "is "+id+": "+want) {
			t.Errorf("RetryNow of a %s batch = %v; want ErrState saying %q", id, err, want)
		}
		if after, _ := s.Get(id); after.State != before.State || !after.UpdatedAt.Equal(before.UpdatedAt) {
			t.Errorf("the refused RetryNow changed %s: %+v", id, after)
		}
	}
	// A purged batch: its abandoned record reduced once RECORD_RETENTION passed.
	if n, _, err := s.PurgeRecords(t0.Add(time.Hour), "", 10, t0.Add(time.Hour)); err != nil || n == 0 {
		t.Fatalf("PurgeRecords = %d, %v", n, err)
	}
	if b, _ := s.Get("abandoned"); b.State != StatePurged {
		t.Fatalf("abandoned after the purge is %s, want purged", b.State)
	}
	if _, err := s.RetryNow("abandoned", t0.Add(time.Hour)); !errors.Is(err, ErrState) || !strings.Contains(err.Error(), "is purged: use refetch") {
		t.Errorf("RetryNow of a purged batch = %v; want ErrState saying to use refetch", err)
	}
	if _, err := s.RetryNow("nope", t0); !errors.Is(err, ErrNotFound) {
		t.Errorf("RetryNow of an unknown batch = %v, want ErrNotFound", err)
	}
}

// drainWakeups empties the fetcher's wakeup channel (it holds at most one).
func drainWakeups(s *Store) {
	select {
	case <-s.Wakeups():
	default:
	}
}
