package fetcher_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/export"
	"github.com/batchhook/batchhook/fetcher"
	"github.com/batchhook/batchhook/store"
)

const week = 168 * time.Hour

func (r *rig) get(t *testing.T, id string) *store.Batch {
	t.Helper()
	b, err := r.store.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (r *rig) partialEntries(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(r.sink.Root(), ".partial"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// exportOnce records b1 (completed at t0) and exports it.
func exportOnce(t *testing.T, r *rig) *store.Batch {
	t.Helper()
	r.record(t, "b1", t0)
	r.runOnce(t)
	b := r.get(t, "b1")
	if b.State != store.StateExported {
		t.Fatalf("first export: %+v", b)
	}
	return b
}

// A refetch that cannot complete leaves the batch exported
// with its previous export and the reason, never abandoned with its path
// cleared.
func TestARefetchThatCannotCompleteKeepsTheExport(t *testing.T) {
	cases := []struct {
		name   string
		breaks func(r *rig, p *provider)
		reason string
	}{
		{"retention passes before the worker runs", func(r *rig, _ *provider) { r.advance(8 * 24 * time.Hour) }, "retention elapsed"},
		{"the provider answers 404 past NOT_FOUND_GRACE", func(r *rig, p *provider) {
			r.advance(2 * time.Hour)
			p.mu.Lock()
			p.fail = func(int, int) int { return 404 }
			p.mu.Unlock()
		}, "not_found"},
		{"the provider refuses the request", func(r *rig, p *provider) {
			p.mu.Lock()
			p.fail = func(int, int) int { return 410 }
			p.mu.Unlock()
		}, "rejected"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := &provider{n: 12, pageSize: 10}
			r := newRig(t, p, 1)
			first := exportOnce(t, r)
			want := readExport(t, first)
			r.advance(time.Minute)
			if _, err := r.store.Refetch("b1", week, *r.now.Load()); err != nil {
				t.Fatal(err)
			}
			c.breaks(r, p)
			r.advance(time.Second)
			r.runOnce(t)
			b := r.get(t, "b1")
			if b.State != store.StateExported || b.ExportPath != first.ExportPath || !strings.Contains(b.LastError, c.reason) || b.Refetch {
				t.Fatalf("after the failed refetch: state %s, path %q, last_error %q, refetch %v; want exported at %s with %q",
					b.State, b.ExportPath, b.LastError, b.Refetch, first.ExportPath, c.reason)
			}
			if ok, err := export.Verify(b.ExportPath); !ok || err != nil {
				t.Fatalf("the previous export no longer verifies: %v", err)
			}
			if string(readExport(t, b)) != string(want) {
				t.Fatal("the previous export changed")
			}
			if names := r.partialEntries(t); len(names) != 0 {
				t.Fatalf("staging left behind: %v", names)
			}
		})
	}
}

// An export published just before a crash completes the
// batch at the next start, even when that start is past retention.
func TestAnExportPublishedBeforeACrashWinsOverRetention(t *testing.T) {
	p := &provider{n: 3, pageSize: 10}
	r := newRig(t, p, 1)
	r.record(t, "b1", t0)
	b, _, err := r.store.Lease(t0)
	if err != nil || b == nil {
		t.Fatalf("lease: %v", err)
	}
	// The worker staged and published, then the process died before Finish.
	items := []json.RawMessage{json.RawMessage(item(0)), json.RawMessage(item(1)), json.RawMessage(item(2))}
	n, err := r.sink.Append("b1", 0, items)
	if err != nil {
		t.Fatal(err)
	}
	b.Checkpoint = store.Checkpoint{Done: true, Items: 3, Pages: 1, StagedBytes: n}
	path, _, err := r.sink.Publish(*b, t0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.store.ReleaseLeases(t0); err != nil {
		t.Fatal(err)
	}
	r.advance(8 * 24 * time.Hour)
	r.runOnce(t)
	if b := r.get(t, "b1"); b.State != store.StateExported || b.ExportPath != path || p.calls != 0 {
		t.Fatalf("after a restart past retention: %s at %q after %d calls; want exported at %s without fetching", b.State, b.ExportPath, p.calls, path)
	}
}

// A batch that is abandoned leaves no staged results.
func TestAbandonRemovesTheStaging(t *testing.T) {
	p := &provider{n: 25, pageSize: 10}
	p.fail = func(_ int, offset int) int {
		if offset >= 10 {
			return 400
		}
		return 0
	}
	r := newRig(t, p, 1)
	r.record(t, "b1", t0)
	r.runOnce(t)
	if b := r.get(t, "b1"); b.State != store.StateAbandoned {
		t.Fatalf("state %s, want abandoned", b.State)
	}
	if names := r.partialEntries(t); len(names) != 0 {
		t.Fatalf("an abandoned batch left staging: %v", names)
	}
}

// When a crash came after the new export was swapped in
// but before the old one (now in staging) was removed, the next start
// completes the batch and removes the old copy.
func TestTheOldExportLeftInStagingIsRemoved(t *testing.T) {
	p := &provider{n: 4, pageSize: 10}
	r := newRig(t, p, 1)
	first := exportOnce(t, r)
	old := filepath.Join(r.sink.Root(), ".partial", "b1")
	r.advance(time.Minute)
	refetched, err := r.store.Refetch("b1", week, *r.now.Load())
	if err != nil {
		t.Fatal(err)
	}
	// The refetch published its export; the old one is back in staging,
	// as RENAME_EXCHANGE leaves it, and then the process died.
	r.advance(time.Second)
	if _, _, err := r.store.Lease(*r.now.Load()); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(old, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{export.ResultsFile, export.ManifestFile} {
		data, err := os.ReadFile(filepath.Join(first.ExportPath, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(old, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	manifest := filepath.Join(first.ExportPath, export.ManifestFile)
	var m map[string]any
	data, _ := os.ReadFile(manifest)
	json.Unmarshal(data, &m)
	m["exported_at"] = refetched.RefetchAt.Add(time.Second)
	data, _ = json.Marshal(m)
	if err := os.WriteFile(manifest, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := r.store.ReleaseLeases(*r.now.Load()); err != nil {
		t.Fatal(err)
	}
	calls := p.calls
	r.runOnce(t)
	if b := r.get(t, "b1"); b.State != store.StateExported || p.calls != calls {
		t.Fatalf("state %s after %d calls, want exported without fetching", b.State, p.calls-calls)
	}
	if names := r.partialEntries(t); len(names) != 0 {
		t.Fatalf("the old export stayed in staging: %v", names)
	}
}

// endless serves pages for any batch: next(cursor) gives the next cursor,
// items(call) the page's items. After maxCalls it answers 400, so that a
// fetcher without caps ends (abandoned) instead of running for ever.
type endless struct {
	mu       sync.Mutex
	calls    int
	maxCalls int
	next     func(cursor string) string
	items    int
}

func (e *endless) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	e.calls++
	calls := e.calls
	e.mu.Unlock()
	if calls > e.maxCalls {
		w.WriteHeader(400)
		return
	}
	list := make([]string, e.items)
	for i := range list {
		list[i] = item(calls*e.items + i)
	}
	fmt.Fprintf(w, `{"results":[%s],"next_cursor":%q}`, strings.Join(list, ","), e.next(r.URL.Query().Get("cursor")))
}

func (e *endless) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.calls
}

// A cursor cycle, an endless cursor and a flood of items
// stop at once; the batch waits as a protocol error with the reason, its
// staged pages removed and its checkpoint reset.
func TestEndlessCursorsStop(t *testing.T) {
	cycle := func(c string) string {
		if c == "A" {
			return "B"
		}
		return "A"
	}
	var fresh atomic.Int64
	cases := []struct {
		name      string
		e         *endless
		requested *int64
		wantCalls int
		reason    string
	}{
		{"cursor cycle A→B→A", &endless{maxCalls: 50, next: cycle, items: 2}, nil, 3, "cursor cycle"},
		{"fresh cursors, empty pages", &endless{maxCalls: 500, next: func(string) string { return fmt.Sprint(fresh.Add(1)) }},
			i64(5), 12, "more than 12 pages"},
		{"more items than a batch holds", &endless{maxCalls: 50, next: func(string) string { return fmt.Sprint(fresh.Add(1)) }, items: 400},
			nil, 3, "more than the 1000"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRigWith(t, c.e, 10)
			completed := t0
			n := store.Notification{Event: "batch.completed", BatchID: "b1", Status: "completed", CompletedAt: &completed,
				TotalRequested: c.requested, ReceivedAt: t0, Source: store.SourceWebhook}
			if _, err := r.store.Record(n); err != nil {
				t.Fatal(err)
			}
			r.runOnce(t)
			b := r.get(t, "b1")
			if got := c.e.count(); got != c.wantCalls {
				t.Errorf("%d page requests, want %d", got, c.wantCalls)
			}
			if b.State != store.StateQueued || b.ErrorKind != "protocol" || !strings.Contains(b.LastError, c.reason) || b.FetchAttempts != 1 {
				t.Fatalf("batch %s kind %q attempts %d error %q; want queued, protocol, %q", b.State, b.ErrorKind, b.FetchAttempts, b.LastError, c.reason)
			}
			if b.Checkpoint != (store.Checkpoint{}) || !b.NextAttemptAt.After(t0) {
				t.Fatalf("checkpoint %+v, next attempt %v; want reset and backed off", b.Checkpoint, b.NextAttemptAt)
			}
			if names := r.partialEntries(t); len(names) != 0 {
				t.Fatalf("staged pages left: %v", names)
			}
		})
	}
}

func i64(v int64) *int64 { return &v }

// A cursor seen before a restart is still remembered after it.
func TestCursorCycleAcrossARestart(t *testing.T) {
	e := &endless{maxCalls: 50, next: func(c string) string {
		return map[string]string{"": "A", "A": "B", "B": "C", "C": "A"}[c]
	}, items: 1}
	r := newRigWith(t, e, 10)
	r.record(t, "b1", t0)
	ctx, cancel := context.WithCancel(context.Background())
	// Stop the worker after its second page: it goes back to the queue at
	// its checkpoint, as at a shutdown.
	q := &cancelAfter{Store: r.store, n: 2, cancel: cancel}
	f := r.fetcherWith(t, q, 10)
	if ok, err := f.RunOnce(ctx); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if b := r.get(t, "b1"); b.State != store.StateQueued || b.Checkpoint.Pages != 2 {
		t.Fatalf("after the stop: %+v", b.Checkpoint)
	}
	// The first run may have read page 3 ahead before the stop; what
	// counts is that the resumed run stops at the first repeat: B gives C,
	// C gives A, seen before the restart (forgotten, A would be read too).
	before := e.count()
	r.runOnce(t)
	b := r.get(t, "b1")
	if b.ErrorKind != "protocol" || !strings.Contains(b.LastError, "cursor cycle") || e.count()-before != 2 {
		t.Fatalf("after resuming: kind %q error %q after %d calls", b.ErrorKind, b.LastError, e.count()-before)
	}
}

// cancelAfter cancels the context after n checkpoints.
type cancelAfter struct {
	*store.Store
	n      int
	cancel context.CancelFunc
}

func (q *cancelAfter) Checkpoints(ups []store.CheckpointUpdate, now time.Time) []error {
	errs := q.Store.Checkpoints(ups, now)
	if q.n -= len(ups); q.n == 0 {
		q.cancel()
	}
	return errs
}

// flaky fails its first failFinish Finish and failRetry Retry calls, as a
// store does on a transient write error.
type flaky struct {
	*store.Store
	mu                    sync.Mutex
	failFinish, failRetry int
	err                   error // what a failure returns; nil = errWrite
	calls                 int   // Finish calls
}

var errWrite = errors.New("write failed: input/output error")

func (q *flaky) Finish(id string, s store.State, path, reason string, version int, now time.Time) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.calls++
	if q.failFinish > 0 {
		q.failFinish--
		if q.err != nil {
			return q.err
		}
		return errWrite
	}
	return q.Store.Finish(id, s, path, reason, version, now)
}

func (q *flaky) Retry(id string, at time.Time, kind, reason string, count bool, now time.Time) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.failRetry > 0 {
		q.failRetry--
		return errWrite
	}
	return q.Store.Retry(id, at, kind, reason, count, now)
}

// A failed Finish or Retry is retried in place; the batch
// never stays fetching with no due entry.
func TestAFailedTransitionIsRetriedInPlace(t *testing.T) {
	cases := []struct {
		name  string
		fail  func(int, int) int
		q     func(*store.Store) *flaky
		state store.State
	}{
		{"finish exported", nil, func(s *store.Store) *flaky { return &flaky{Store: s, failFinish: 3} }, store.StateExported},
		{"finish abandoned", func(int, int) int { return 400 }, func(s *store.Store) *flaky { return &flaky{Store: s, failFinish: 3} }, store.StateAbandoned},
		{"retry", func(int, int) int { return 503 }, func(s *store.Store) *flaky { return &flaky{Store: s, failRetry: 3} }, store.StateQueued},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := &provider{n: 5, pageSize: 10, fail: c.fail}
			r := newRig(t, p, 1)
			r.record(t, "b1", t0)
			q := c.q(r.store)
			f := r.fetcherWith(t, q, 10)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if ok, err := f.RunOnce(ctx); !ok || err != nil {
				t.Fatal(ok, err)
			}
			if b := r.get(t, "b1"); b.State != c.state {
				t.Fatalf("state %s after the store failed 3 times, want %s", b.State, c.state)
			}
			if q.failFinish+q.failRetry != 0 {
				t.Fatal("the injected failures were not all consumed")
			}
		})
	}
}

// A store that failed closed never takes a write again (the daemon exits):
// the fetcher does not retry against it.
func TestAFailedStoreIsNotRetried(t *testing.T) {
	p := &provider{n: 5, pageSize: 10}
	r := newRig(t, p, 1)
	r.record(t, "b1", t0)
	q := &flaky{Store: r.store, failFinish: 1 << 30, err: fmt.Errorf("finish batch b1: %w", store.ErrFailed)}
	f := r.fetcherWith(t, q, 10)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if ok, err := f.RunOnce(ctx); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if ctx.Err() != nil || q.calls != 1 {
		t.Fatalf("Finish called %d times against a failed store (context %v), want once", q.calls, ctx.Err())
	}
}

// A transition still failing when the fetcher stops leaves the batch for
// the next start, which always puts it back in the queue.
func TestAStopDuringATransitionRetryLeavesTheBatchForTheNextStart(t *testing.T) {
	p := &provider{n: 5, pageSize: 10}
	r := newRig(t, p, 1)
	r.record(t, "b1", t0)
	q := &flaky{Store: r.store, failFinish: 1 << 30}
	f := r.fetcherWith(t, q, 10)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.RunOnce(ctx)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("RunOnce did not return after its context ended")
	}
	if b := r.get(t, "b1"); b.State != store.StateFetching {
		t.Fatalf("state %s, want fetching", b.State)
	}
	if n, err := r.store.ReleaseLeases(t0); err != nil || n != 1 {
		t.Fatalf("ReleaseLeases = %d, %v", n, err)
	}
	r.runOnce(t)
	if b := r.get(t, "b1"); b.State != store.StateExported {
		t.Fatalf("state %s after the restart, want exported", b.State)
	}
}

// newRigWith is newRig with PAGE_LIMIT set.
func newRigWith(t *testing.T, p http.Handler, pageLimit int) *rig {
	t.Helper()
	r := newRig(t, p, 1)
	r.f = r.fetcherWith(t, r.store, pageLimit)
	return r
}

// fetcherWith builds a fetcher like the rig's over q.
func (r *rig) fetcherWith(t *testing.T, q fetcher.Queue, pageLimit int) *fetcher.Fetcher {
	t.Helper()
	f, err := fetcher.New(fetcher.Options{Queue: q, Stager: r.sink, Pager: r.pager, Logger: zerolog.Nop(), Workers: 1,
		Retention: week, NotFoundGrace: time.Hour, BackoffBase: time.Second, BackoffMax: time.Minute, PageLimit: pageLimit,
		IdlePoll: 50 * time.Millisecond, Now: func() time.Time { return *r.now.Load() }, Jitter: func() float64 { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// A batch whose every page is staged and checkpointed
// (the last checkpoint says done) needs nothing more from the provider. A
// crash, or a publish that failed (disk full), before the export appeared,
// then a start past retention, must publish what is staged: abandoning it
// would delete the only copy of results the provider no longer keeps.
func TestFullyStagedResultsArePublishedPastRetention(t *testing.T) {
	p := &provider{n: 3, pageSize: 10}
	r := newRig(t, p, 1)
	r.record(t, "b1", t0)
	b, _, err := r.store.Lease(t0)
	if err != nil || b == nil {
		t.Fatalf("lease: %v", err)
	}
	// The worker staged and checkpointed the last page, then died before
	// Publish.
	items := []json.RawMessage{json.RawMessage(item(0)), json.RawMessage(item(1)), json.RawMessage(item(2))}
	n, err := r.sink.Append("b1", 0, items)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.store.Checkpoint("b1", store.Checkpoint{Done: true, Items: 3, Pages: 1, StagedBytes: n}, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := r.store.ReleaseLeases(t0); err != nil {
		t.Fatal(err)
	}
	r.advance(8 * 24 * time.Hour)
	r.runOnce(t)
	b = r.get(t, "b1")
	if b.State != store.StateExported || p.calls != 0 {
		t.Fatalf("fully staged batch after a start past retention: %s (last_error %q) after %d calls; want exported without fetching",
			b.State, b.LastError, p.calls)
	}
	if ok, err := export.Verify(b.ExportPath); !ok || err != nil {
		t.Fatalf("export does not verify: %v", err)
	}
}
