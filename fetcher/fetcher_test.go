package fetcher_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
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

// provider serves n items for any batch, pageSize at a time, with the cursor
// being the next offset. fail(page) may return a status to answer instead.
type provider struct {
	n, pageSize int
	mu          sync.Mutex
	fail        func(call int, offset int) int
	calls       int
}

func item(i int) string {
	return fmt.Sprintf(`{"cpf":"%011d","result":"found","profile":{"name":"Jo\u00e3o %d"}}`, i, i)
}

func (p *provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	offset, _ := strconv.Atoi(r.URL.Query().Get("cursor"))
	p.mu.Lock()
	p.calls++
	call := p.calls
	fail := p.fail
	p.mu.Unlock()
	if fail != nil {
		if code := fail(call, offset); code != 0 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(code)
			return
		}
	}
	end := min(offset+p.pageSize, p.n)
	var buf bytes.Buffer
	buf.WriteString(`{"status":"completed","results":[`)
	for i := offset; i < end; i++ {
		if i > offset {
			buf.WriteString(", ")
		}
		buf.WriteString(item(i))
	}
	buf.WriteString(`],"next_cursor":`)
	if end < p.n {
		fmt.Fprintf(&buf, `"%d"`, end)
	} else {
		buf.WriteString("null")
	}
	buf.WriteString("}")
	w.Write(buf.Bytes())
}

// want is the export the provider's items must produce: compact, one a line.
func (p *provider) want() []byte {
	var buf bytes.Buffer
	for i := 0; i < p.n; i++ {
		var c bytes.Buffer
		json.Compact(&c, []byte(item(i)))
		buf.Write(c.Bytes())
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

type rig struct {
	store *store.Store
	sink  *export.Dir
	f     *fetcher.Fetcher
	pager fetcher.Pager
	now   *atomic.Pointer[time.Time]
}

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func newRig(t *testing.T, p http.Handler, workers int) *rig {
	t.Helper()
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	st, err := store.Open(t.TempDir(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	sink, err := export.New(filepath.Join(t.TempDir(), "exports"))
	if err != nil {
		t.Fatal(err)
	}
	client, err := fetcher.NewClient(fetcher.ClientOptions{BaseURL: srv.URL, APIKey: func() []byte { return []byte("k") },
		Limit: 10, CursorParam: "cursor", MaxPageBytes: 1 << 20, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	now := &atomic.Pointer[time.Time]{}
	now.Store(&t0)
	f, err := fetcher.New(fetcher.Options{Queue: st, Stager: sink, Pager: client, Logger: zerolog.Nop(), Workers: workers,
		Retention: 168 * time.Hour, NotFoundGrace: time.Hour, BackoffBase: time.Second, BackoffMax: time.Minute,
		IdlePoll: 50 * time.Millisecond, Now: func() time.Time { return *now.Load() }, Jitter: func() float64 { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	return &rig{store: st, sink: sink, f: f, pager: client, now: now}
}

func (r *rig) record(t *testing.T, id string, completedAt time.Time) {
	t.Helper()
	n := store.Notification{Event: "batch.completed", BatchID: id, Status: "completed", CompletedAt: &completedAt,
		ReceivedAt: *r.now.Load(), Source: store.SourceWebhook}
	if _, err := r.store.Record(n); err != nil {
		t.Fatal(err)
	}
}

func (r *rig) advance(d time.Duration) {
	next := r.now.Load().Add(d)
	r.now.Store(&next)
}

func (r *rig) runOnce(t *testing.T) bool {
	t.Helper()
	ok, err := r.f.RunOnce(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

func readExport(t *testing.T, b *store.Batch) []byte {
	t.Helper()
	got, err := os.ReadFile(filepath.Join(b.ExportPath, export.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestExportsEveryPageInOrder(t *testing.T) {
	p := &provider{n: 25, pageSize: 10}
	r := newRig(t, p, 1)
	r.record(t, "b1", t0)
	if !r.runOnce(t) {
		t.Fatal("nothing leased")
	}
	b, _ := r.store.Get("b1")
	if b.State != store.StateExported || b.Checkpoint.Pages != 3 || b.Checkpoint.Items != 25 {
		t.Fatalf("batch = %+v", b)
	}
	if got := readExport(t, b); !bytes.Equal(got, p.want()) {
		t.Fatalf("export differs:\n%s\nwant:\n%s", got, p.want())
	}
}

func TestResumesAfterAFailedPageWithoutDuplicates(t *testing.T) {
	p := &provider{n: 35, pageSize: 10}
	// Page at offset 20 fails once with 500.
	var failed atomic.Bool
	p.fail = func(_ int, offset int) int {
		if offset == 20 && failed.CompareAndSwap(false, true) {
			return 500
		}
		return 0
	}
	r := newRig(t, p, 1)
	r.record(t, "b1", t0)
	r.runOnce(t)
	b, _ := r.store.Get("b1")
	if b.State != store.StateQueued || b.Checkpoint.Pages != 2 || b.Checkpoint.Cursor != "20" || b.FetchAttempts != 1 || b.ErrorKind != "transient" {
		t.Fatalf("after failure: %+v", b)
	}
	if !b.NextAttemptAt.After(t0) {
		t.Fatalf("retry not delayed: %v", b.NextAttemptAt)
	}
	// A page staged but never checkpointed (a crash between the two) must not survive.
	staged := filepath.Join(r.sink.Root(), ".partial", "b1", export.ResultsFile)
	fh, err := os.OpenFile(staged, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fh.WriteString(item(20) + "\n" + item(21) + "\n")
	fh.Close()
	if r.runOnce(t) {
		t.Fatal("leased before the backoff elapsed")
	}
	r.advance(time.Minute)
	r.runOnce(t)
	b, _ = r.store.Get("b1")
	if b.State != store.StateExported || b.Checkpoint.Items != 35 || b.Checkpoint.Pages != 4 {
		t.Fatalf("after resume: %+v", b)
	}
	if got := readExport(t, b); !bytes.Equal(got, p.want()) {
		t.Fatalf("export after resume differs from the provider's items")
	}
}

func TestStagingLostStartsOver(t *testing.T) {
	p := &provider{n: 30, pageSize: 10}
	p.fail = func(_ int, offset int) int {
		if offset == 20 {
			return 503
		}
		return 0
	}
	r := newRig(t, p, 1)
	r.record(t, "b1", t0)
	r.runOnce(t)
	os.RemoveAll(filepath.Join(r.sink.Root(), ".partial", "b1"))
	p.mu.Lock()
	p.fail = nil
	p.mu.Unlock()
	r.advance(time.Hour)
	r.runOnce(t)
	b, _ := r.store.Get("b1")
	if b.State != store.StateExported || !bytes.Equal(readExport(t, b), p.want()) {
		t.Fatalf("after staging loss: %+v", b)
	}
}

func TestFailurePolicy(t *testing.T) {
	cases := []struct {
		name      string
		status    int
		advance   time.Duration
		wantState store.State
		wantKind  string
	}{
		{"401 keeps the batch queued", 401, 0, store.StateQueued, "auth"},
		{"403 keeps the batch queued", 403, 0, store.StateQueued, "auth"},
		{"429 retries", 429, 0, store.StateQueued, "transient"},
		{"404 within grace retries", 404, 0, store.StateQueued, "not_found"},
		{"404 after grace abandons", 404, 2 * time.Hour, store.StateAbandoned, ""},
		{"400 abandons", 400, 0, store.StateAbandoned, ""},
		{"422 abandons", 422, 0, store.StateAbandoned, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := &provider{n: 5, pageSize: 10, fail: func(int, int) int { return c.status }}
			r := newRig(t, p, 1)
			r.record(t, "b1", t0)
			r.advance(c.advance)
			r.runOnce(t)
			b, _ := r.store.Get("b1")
			if b.State != c.wantState || b.LastError == "" {
				t.Fatalf("state %s (%q), want %s", b.State, b.LastError, c.wantState)
			}
			if c.wantKind != "" && b.ErrorKind != c.wantKind {
				t.Fatalf("kind %q, want %q", b.ErrorKind, c.wantKind)
			}
		})
	}
}

func TestRetryAfterIsHonoured(t *testing.T) {
	p := &provider{n: 5, pageSize: 10}
	p.fail = func(int, int) int { return 0 }
	srv := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(429)
	})
	r := newRig(t, srv, 1)
	r.record(t, "b1", t0)
	r.runOnce(t)
	b, _ := r.store.Get("b1")
	if got := b.NextAttemptAt.Sub(t0); got != 30*time.Second {
		t.Fatalf("next attempt in %s, want the provider's 30s", got)
	}
}

func TestRetentionAbandons(t *testing.T) {
	p := &provider{n: 5, pageSize: 10}
	r := newRig(t, p, 1)
	r.record(t, "b1", t0.Add(-169*time.Hour))
	r.runOnce(t)
	b, _ := r.store.Get("b1")
	if b.State != store.StateAbandoned || p.calls != 0 {
		t.Fatalf("state %s after %d calls, want abandoned without fetching", b.State, p.calls)
	}
}

func TestAlreadyPublishedCompletesWithoutFetching(t *testing.T) {
	p := &provider{n: 12, pageSize: 10}
	r := newRig(t, p, 1)
	r.record(t, "b1", t0)
	r.runOnce(t)
	first, _ := r.store.Get("b1")
	// A second daemon database (say, restored from backup) records b1 again.
	r2 := newRig(t, p, 1)
	r2.sink = r.sink
	f, _ := fetcher.New(fetcher.Options{Queue: r2.store, Stager: r.sink, Pager: failPager{}, Logger: zerolog.Nop(), Workers: 1,
		Retention: time.Hour * 168, BackoffBase: time.Second, BackoffMax: time.Minute, Now: func() time.Time { return t0 }})
	r2.record(t, "b1", t0)
	if ok, err := f.RunOnce(context.Background()); !ok || err != nil {
		t.Fatal(ok, err)
	}
	b, _ := r2.store.Get("b1")
	if b.State != store.StateExported || b.ExportPath != first.ExportPath {
		t.Fatalf("second record = %+v, want exported at the existing path", b)
	}
}

type failPager struct{}

func (failPager) Page(context.Context, string, string) (*fetcher.Page, error) {
	return nil, fmt.Errorf("must not be called")
}

func TestRunProcessesNewWorkAndStopsCleanly(t *testing.T) {
	p := &provider{n: 15, pageSize: 10}
	r := newRig(t, p, 2)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.f.Run(ctx) }()
	for i := 0; i < 3; i++ {
		r.record(t, fmt.Sprintf("b%d", i), t0)
	}
	deadline := time.After(10 * time.Second)
	for exported := 0; exported < 3; {
		select {
		case <-deadline:
			t.Fatalf("only %d of 3 exported", exported)
		case <-time.After(10 * time.Millisecond):
		}
		exported = 0
		for i := 0; i < 3; i++ {
			if b, _ := r.store.Get(fmt.Sprintf("b%d", i)); b.State == store.StateExported {
				exported++
			}
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not stop")
	}
}

func TestZeroWorkersPause(t *testing.T) {
	p := &provider{n: 5, pageSize: 10}
	r := newRig(t, p, 0)
	r.record(t, "b1", t0)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := r.f.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if b, _ := r.store.Get("b1"); b.State != store.StateQueued || p.calls != 0 {
		t.Fatalf("paused fetcher touched the batch: %s, %d calls", b.State, p.calls)
	}
}

// A batch rescheduled after a failure must be retried at its time, not after
// the dispatcher's idle poll: Retry wakes the dispatcher.
func TestRetryIsPickedUpWithoutWaitingForTheIdlePoll(t *testing.T) {
	var failed atomic.Bool
	p := &provider{n: 5, pageSize: 10, fail: func(int, int) int {
		if failed.CompareAndSwap(false, true) {
			return 500
		}
		return 0
	}}
	srv := httptest.NewServer(p)
	defer srv.Close()
	st, err := store.Open(t.TempDir(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sink, _ := export.New(t.TempDir())
	client, _ := fetcher.NewClient(fetcher.ClientOptions{BaseURL: srv.URL, APIKey: func() []byte { return []byte("k") },
		Limit: 10, CursorParam: "cursor", MaxPageBytes: 1 << 20, Timeout: 5 * time.Second})
	f, _ := fetcher.New(fetcher.Options{Queue: st, Stager: sink, Pager: client, Logger: zerolog.Nop(), Workers: 2,
		Retention: 168 * time.Hour, BackoffBase: 20 * time.Millisecond, BackoffMax: 50 * time.Millisecond,
		IdlePoll: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	defer func() { cancel(); <-done }()
	if _, err := st.Record(store.Notification{BatchID: "b1", Status: "completed", ReceivedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := st.Get("b1")
		if b.State == store.StateExported {
			if b.FetchAttempts != 0 || !failed.Load() {
				t.Fatalf("exported without the failure being exercised: %+v", b)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("retry not picked up within 10s (state %s)", b.State)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRefetchReplacesTheExport(t *testing.T) {
	p := &provider{n: 12, pageSize: 10}
	r := newRig(t, p, 1)
	r.record(t, "b1", t0)
	r.runOnce(t)
	first, _ := r.store.Get("b1")
	if first.State != store.StateExported {
		t.Fatalf("first export: %+v", first)
	}
	// The provider now serves more items; an operator asks for a refetch.
	p.mu.Lock()
	p.n = 17
	p.mu.Unlock()
	r.advance(time.Minute)
	if _, err := r.store.Refetch("b1", 168*time.Hour, *r.now.Load()); err != nil {
		t.Fatal(err)
	}
	r.advance(time.Second)
	r.runOnce(t)
	b, _ := r.store.Get("b1")
	if b.State != store.StateExported || b.Checkpoint.Items != 17 || b.ExportPath != first.ExportPath {
		t.Fatalf("after refetch: %+v", b)
	}
	if got := readExport(t, b); !bytes.Equal(got, p.want()) {
		t.Fatal("refetched export is not the provider's current items")
	}
	entries, _ := os.ReadDir(filepath.Join(r.sink.Root(), ".partial"))
	if len(entries) != 0 {
		t.Fatalf("staging left behind after the replace: %v", entries)
	}
	if ok, err := export.Verify(b.ExportPath); !ok || err != nil {
		t.Fatalf("replaced export does not verify: %v", err)
	}
}

func TestRefetchAlreadyPublishedAfterTheRequestCompletes(t *testing.T) {
	p := &provider{n: 5, pageSize: 10}
	r := newRig(t, p, 1)
	r.record(t, "b1", t0)
	// The refetch was requested before the export now in place was made:
	// that export is the refetch's own (a crash came between publish and record).
	r.runOnce(t)
	if _, err := r.store.Refetch("b1", 168*time.Hour, t0.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	calls := p.calls
	r.runOnce(t)
	b, _ := r.store.Get("b1")
	if b.State != store.StateExported || p.calls != calls {
		t.Fatalf("state %s after %d more calls, want exported without fetching", b.State, p.calls-calls)
	}
}

func TestRejectedKeyIsLoggedAsAnError(t *testing.T) {
	p := &provider{n: 5, pageSize: 10, fail: func(int, int) int { return 401 }}
	r := newRig(t, p, 1)
	var logs bytes.Buffer
	srv := httptest.NewServer(p)
	defer srv.Close()
	c, _ := fetcher.NewClient(fetcher.ClientOptions{BaseURL: srv.URL, APIKey: func() []byte { return []byte("k") },
		Limit: 10, CursorParam: "cursor", MaxPageBytes: 1 << 20, Timeout: time.Second})
	f, _ := fetcher.New(fetcher.Options{Queue: r.store, Stager: r.sink, Pager: c, Logger: zerolog.New(&logs), Workers: 1,
		Retention: time.Hour, BackoffBase: time.Second, BackoffMax: time.Minute, Now: func() time.Time { return t0 }})
	r.record(t, "b1", t0)
	if ok, err := f.RunOnce(context.Background()); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if !strings.Contains(logs.String(), `"level":"error"`) || !strings.Contains(logs.String(), `"event":"api_key_rejected"`) {
		t.Fatalf("a 401 is not logged as api_key_rejected at error level:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), `"k"`) {
		t.Fatal("the API key reached the log")
	}
}
