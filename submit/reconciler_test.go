package submit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/store"
)

type fakeReader struct {
	status map[string]string
	err    error
	calls  int
}

func (f *fakeReader) Status(_ context.Context, id string) (string, error) {
	f.calls++
	return f.status[id], f.err
}

func TestReconcilerPollsBacksOffAndQueuesFinalBatch(t *testing.T) {
	st := openStore(t)
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	clock := &fakeClock{now: t0}
	if _, _, err := st.Track("b1", t0.Add(time.Minute), t0); err != nil {
		t.Fatal(err)
	}
	reader := &fakeReader{status: map[string]string{"b1": "processing"}}
	r, err := NewReconciler(ReconcilerOptions{Queue: st, Reader: reader, Logger: zerolog.Nop(), Retention: 7 * 24 * time.Hour,
		BackoffBase: time.Second, BackoffMax: time.Minute, Now: clock.Now, Jitter: func() float64 { return 0.999 }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if wait, _ := r.Step(ctx); wait != time.Minute || reader.calls != 0 {
		t.Fatalf("before the poll is due: wait %v, %d polls", wait, reader.calls)
	}
	clock.Advance(time.Minute)
	var gaps []time.Duration
	last := clock.Now()
	for reader.calls < 5 {
		before := reader.calls
		wait, err := r.Step(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if reader.calls > before {
			gaps = append(gaps, clock.Now().Sub(last))
			last = clock.Now()
		}
		clock.Advance(wait)
	}
	// Polls back off: 1s, 2s, 4s, 8s after the first (jitter near 1).
	for i := 2; i < len(gaps); i++ {
		if gaps[i] <= gaps[i-1] {
			t.Fatalf("poll gaps %v do not grow", gaps)
		}
	}
	reader.err = errors.New("HTTP 503")
	clock.Advance(time.Minute)
	if _, err := r.Step(ctx); err != nil {
		t.Fatal(err)
	}
	if b, _ := st.Get("b1"); b.State != store.StateTracked || !strings.Contains(b.LastError, "503") {
		t.Fatalf("after a failed poll: %+v", b)
	}
	reader.err, reader.status["b1"] = nil, "expired"
	clock.Advance(time.Minute)
	if _, err := r.Step(ctx); err != nil {
		t.Fatal(err)
	}
	b, _ := st.Get("b1")
	if b.State != store.StateQueued || b.Notification.Source != store.SourcePoll || b.Notification.Status != "expired" ||
		b.Notification.CompletedAt != nil || b.Notification.TotalFound != nil {
		t.Fatalf("reconciled batch = %+v", b)
	}
	calls := reader.calls
	clock.Advance(time.Hour)
	if _, err := r.Step(ctx); err != nil || reader.calls != calls {
		t.Fatalf("queued batch polled again (%d polls, %v)", reader.calls-calls, err)
	}
	// A notification arriving after the poll is a duplicate.
	if known, _ := st.Known("b1"); !known {
		t.Fatal("b1 not known after reconciliation: a late webhook would be accepted twice")
	}
}

func TestReconcilerAbandonsAfterRetention(t *testing.T) {
	st := openStore(t)
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	clock := &fakeClock{now: t0.Add(7*24*time.Hour + time.Second)}
	st.Track("b1", t0, t0)
	reader := &fakeReader{status: map[string]string{"b1": "processing"}}
	r, _ := NewReconciler(ReconcilerOptions{Queue: st, Reader: reader, Logger: zerolog.Nop(), Retention: 7 * 24 * time.Hour,
		BackoffBase: time.Second, BackoffMax: time.Minute, Now: clock.Now})
	if _, err := r.Step(context.Background()); err != nil {
		t.Fatal(err)
	}
	b, _ := st.Get("b1")
	if b.State != store.StateAbandoned || !strings.Contains(b.LastError, "retention") || reader.calls != 0 {
		t.Fatalf("batch %+v after retention (%d polls)", b, reader.calls)
	}
}

func TestReconcilerAbandonsAnUnknownBatchAfterGrace(t *testing.T) {
	st := openStore(t)
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	clock := &fakeClock{now: t0}
	st.Track("b_typo", t0, t0)
	reader := &fakeReader{err: fmt.Errorf("%w: HTTP 404", ErrUnknownBatch)}
	r, _ := NewReconciler(ReconcilerOptions{Queue: st, Reader: reader, Logger: zerolog.Nop(), Retention: 7 * 24 * time.Hour,
		NotFoundGrace: time.Hour, BackoffBase: time.Second, BackoffMax: time.Minute, Now: clock.Now})
	if _, err := r.Step(context.Background()); err != nil {
		t.Fatal(err)
	}
	if b, _ := st.Get("b_typo"); b.State != store.StateTracked {
		t.Fatalf("abandoned within the grace: %+v", b)
	}
	clock.Advance(time.Hour + time.Minute)
	if _, err := r.Step(context.Background()); err != nil {
		t.Fatal(err)
	}
	if b, _ := st.Get("b_typo"); b.State != store.StateAbandoned || !strings.Contains(b.LastError, "NOT_FOUND_GRACE") {
		t.Fatalf("after the grace: %+v", b)
	}
}

// TestPollStatusEchoingACPFIsMaskedInTheLog: a status the provider wrote
// reaches the debug log only scrubbed and cut short.
func TestPollStatusEchoingACPFIsMaskedInTheLog(t *testing.T) {
	st := openStore(t)
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	if _, _, err := st.Track("b1", t0, t0); err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	reader := &fakeReader{status: map[string]string{"b1": "processing 529 982 247 25 " + strings.Repeat("x", 200)}}
	r, err := NewReconciler(ReconcilerOptions{Queue: st, Reader: reader, Logger: zerolog.New(&logs).Level(zerolog.DebugLevel),
		Retention: 7 * 24 * time.Hour, BackoffBase: time.Second, BackoffMax: time.Minute, Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Step(context.Background()); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	if !strings.Contains(out, `"event":"poll_not_final"`) || !strings.Contains(out, "processing ***") {
		t.Fatalf("no scrubbed poll_not_final line in %s", out)
	}
	if strings.Contains(out, "982") || strings.Contains(out, strings.Repeat("x", 100)) {
		t.Fatalf("log carries the CPF or the whole status: %s", out)
	}
}
