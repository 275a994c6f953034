package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/export"
	"github.com/batchhook/batchhook/sink"
	"github.com/batchhook/batchhook/store"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// testSink is a sink.Sink whose answers the test scripts: each Deliver
// reads the items, marks the parts it is told to, and answers the next
// result in line (the last one repeats).
type testSink struct {
	name string
	mu   sync.Mutex
	// answers are returned in order; the last repeats.
	answers []sink.Result
	// marks: parts to mark (1..marks) before answering.
	marks int
	// block, when set, holds Deliver until it is closed or ctx ends.
	block chan struct{}
	calls []call
	// started is sent the batch id when Deliver begins (buffered).
	started chan string
	// gate, when set, holds Deliver before it reads the items, until it
	// is closed (or ctx ends: Retry).
	gate chan struct{}
	// countItems makes Deliver check the lines it reads against e.Items
	// and fail for good on a mismatch, as the sinks once did.
	countItems bool
}

type call struct {
	e     sink.Export
	items string
	done  int
}

func (s *testSink) Name() string { return s.name }

func (s *testSink) Deliver(ctx context.Context, e sink.Export, p sink.Progress) sink.Result {
	if s.started != nil {
		s.started <- e.BatchID
	}
	if s.gate != nil {
		select {
		case <-s.gate:
		case <-ctx.Done():
			return sink.Result{Outcome: sink.Retry, Kind: "cancelled", Reason: "cancelled"}
		}
	}
	rc, err := e.OpenItems()
	if err != nil {
		return sink.Result{Outcome: sink.Retry, Kind: "local", Reason: err.Error()}
	}
	items, _ := io.ReadAll(rc)
	rc.Close()
	if n := int64(bytes.Count(items, []byte("\n"))); s.countItems && n != e.Items {
		return sink.Result{Outcome: sink.Failed, Kind: "local", Reason: "results.ndjson has fewer items than the manifest says"}
	}
	s.mu.Lock()
	s.calls = append(s.calls, call{e: e, items: string(items), done: p.Done()})
	res := s.answers[min(len(s.calls)-1, len(s.answers)-1)]
	marks, block := s.marks, s.block
	s.mu.Unlock()
	for n := p.Done() + 1; n <= marks; n++ {
		if err := p.Mark(n); err != nil {
			return sink.Result{Outcome: sink.Retry, Kind: "local", Reason: err.Error()}
		}
	}
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return sink.Result{Outcome: sink.Retry, Kind: "shutdown", Reason: "cancelled"}
		}
	}
	return res
}

func (s *testSink) callsSoFar() []call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]call(nil), s.calls...)
}

type env struct {
	st   *store.Store
	dir  *export.Dir
	logs *bytes.Buffer
	now  time.Time
}

func newEnv(t *testing.T, sinks ...string) *env {
	t.Helper()
	st, err := store.Open(t.TempDir(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	st.SetSinks(sinks)
	dir, err := export.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &env{st: st, dir: dir, logs: &bytes.Buffer{}, now: t0}
}

const items = "{\"cpf\":\"12345678909\",\"result\":\"found\"}\n{\"cpf\":\"98765432100\",\"result\":\"not_found\"}\n"

// export publishes a two-item export of id and records it exported.
func (e *env) export(t *testing.T, id string) string {
	t.Helper()
	var raw []json.RawMessage
	for _, l := range strings.Split(strings.TrimSpace(items), "\n") {
		raw = append(raw, json.RawMessage(l))
	}
	n, err := e.dir.Append(id, 0, raw)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.Record(store.Notification{Event: "batch.completed", BatchID: id, Status: "completed", ReceivedAt: e.now, Raw: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	b, _, err := e.st.Lease(e.now)
	if err != nil || b == nil {
		t.Fatalf("lease: %v %v", b, err)
	}
	b.Checkpoint = store.Checkpoint{Done: true, Items: 2, Pages: 1, StagedBytes: n}
	path, _, err := e.dir.Publish(*b, e.now)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.st.Finish(id, store.StateExported, path, "", 0, e.now); err != nil {
		t.Fatal(err)
	}
	return path
}

type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) SinkOutcome(s, o string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[s+"/"+o]++
}

func (e *env) dispatcher(t *testing.T, keep bool, obs Observer, sinks ...*testSink) *Dispatcher {
	t.Helper()
	m := map[string]sink.Sink{}
	for _, s := range sinks {
		m[s.name] = s
	}
	d, err := New(Options{Outbox: e.st, Exports: e.dir, Sinks: m, Workers: 2, KeepExports: keep,
		BackoffBase: time.Second, BackoffMax: 20 * time.Second, IdlePoll: 50 * time.Millisecond,
		Logger: zerolog.New(&syncWriter{w: e.logs}), Now: func() time.Time { return e.now }, Jitter: func() float64 { return 0 },
		Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func delivery(t *testing.T, st *store.Store, id, name string) store.Delivery {
	t.Helper()
	ds, err := st.Deliveries(id)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		if d.Sink == name {
			return d
		}
	}
	t.Fatalf("no delivery of %s to %s", id, name)
	return store.Delivery{}
}

func runOnce(t *testing.T, d *Dispatcher, name string) bool {
	t.Helper()
	ran, err := d.RunOnce(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return ran
}

func TestDeliverHandsTheSinkThePublishedExport(t *testing.T) {
	e := newEnv(t, "http")
	path := e.export(t, "b1")
	h := &testSink{name: "http", answers: []sink.Result{{Outcome: sink.Delivered}}}
	obs := &counter{}
	d := e.dispatcher(t, true, obs, h)
	if !runOnce(t, d, "http") {
		t.Fatal("nothing leased")
	}
	calls := h.callsSoFar()
	manifest, _ := os.ReadFile(filepath.Join(path, export.ManifestFile))
	if len(calls) != 1 || calls[0].items != items || !bytes.Equal(calls[0].e.Manifest, manifest) ||
		calls[0].e.Items != 2 || calls[0].e.Status != "completed" || calls[0].e.Dir != path || calls[0].e.Version != 0 {
		t.Fatalf("sink saw %+v", calls)
	}
	got := delivery(t, e.st, "b1", "http")
	if got.State != store.DeliveryDelivered || got.Attempts != 1 || !got.DeliveredAt.Equal(t0) {
		t.Fatalf("delivery = %+v", got)
	}
	if runOnce(t, d, "http") {
		t.Fatal("a delivered export was leased again")
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("with file configured the export must stay: %v", err)
	}
	if obs.n["http/delivered"] != 1 {
		t.Fatalf("observer = %v", obs.n)
	}
	logs := e.logs.String()
	if !strings.Contains(logs, `"event":"sink_delivered"`) || !strings.Contains(logs, `"sink":"http"`) ||
		!strings.Contains(logs, `"batch_id":"b1"`) || !strings.Contains(logs, `"attempt":1`) {
		t.Fatalf("log lacks the delivered line with sink, batch_id, attempt: %s", logs)
	}
	if strings.Contains(logs, "12345678909") {
		t.Fatalf("an item reached the log: %s", logs)
	}
}

func TestExportRemovedOnceEverySinkDeliveredWithoutFile(t *testing.T) {
	e := newEnv(t, "http", "exec")
	path := e.export(t, "b1")
	h := &testSink{name: "http", answers: []sink.Result{{Outcome: sink.Delivered}}}
	x := &testSink{name: "exec", answers: []sink.Result{{Outcome: sink.Delivered}}}
	d := e.dispatcher(t, false, nil, h, x)
	runOnce(t, d, "http")
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("export removed before exec had it: %v", err)
	}
	runOnce(t, d, "exec")
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("export still there after every sink delivered: %v", err)
	}
	if ids, _ := e.st.FileRemovals(); len(ids) != 0 {
		t.Fatalf("removal still listed: %v", ids)
	}
	if _, err := e.st.Redeliver("b1", "http", t0); err == nil || !strings.Contains(err.Error(), "export removed; refetch it first") {
		t.Fatalf("redeliver of a removed export = %v", err)
	}
}

func TestRetryBacksOffAndHonoursRetryAfterUpToTheCap(t *testing.T) {
	e := newEnv(t, "http")
	e.export(t, "b1")
	h := &testSink{name: "http", answers: []sink.Result{
		{Outcome: sink.Retry, Kind: "status", Reason: "HTTP 503"},
		{Outcome: sink.Retry, Kind: "status", Reason: "HTTP 429", RetryAfter: 10 * time.Second},
		{Outcome: sink.Retry, Kind: "status", Reason: "HTTP 429", RetryAfter: time.Hour},
	}}
	obs := &counter{}
	d := e.dispatcher(t, true, obs, h)
	runOnce(t, d, "http")
	got := delivery(t, e.st, "b1", "http")
	// attempt 1, base 1s, jitter 0: d/2 = 500ms.
	if got.State != store.DeliveryPending || got.Attempts != 1 || !got.NextAttemptAt.Equal(t0.Add(500*time.Millisecond)) || got.LastError != "HTTP 503" || got.ErrorKind != "status" {
		t.Fatalf("after a retry: %+v", got)
	}
	if runOnce(t, d, "http") {
		t.Fatal("leased before its next attempt")
	}
	e.now = got.NextAttemptAt
	runOnce(t, d, "http")
	got = delivery(t, e.st, "b1", "http")
	if !got.NextAttemptAt.Equal(e.now.Add(10 * time.Second)) {
		t.Fatalf("Retry-After not honoured: next %v, want %v", got.NextAttemptAt, e.now.Add(10*time.Second))
	}
	e.now = got.NextAttemptAt
	runOnce(t, d, "http")
	got = delivery(t, e.st, "b1", "http")
	if !got.NextAttemptAt.Equal(e.now.Add(20 * time.Second)) {
		t.Fatalf("Retry-After not capped by the backoff max: next %v", got.NextAttemptAt)
	}
	if obs.n["http/retry"] != 3 || !strings.Contains(e.logs.String(), `"event":"sink_retry"`) {
		t.Fatalf("observer %v, logs %s", obs.n, e.logs)
	}
}

func TestFailedIsFinalUntilRedeliverWhichResetsParts(t *testing.T) {
	e := newEnv(t, "http")
	e.export(t, "b1")
	h := &testSink{name: "http", marks: 2, answers: []sink.Result{
		{Outcome: sink.Retry, Kind: "timeout", Reason: "timeout"},
		{Outcome: sink.Failed, Kind: "status", Reason: "HTTP 410"},
		{Outcome: sink.Delivered},
	}}
	d := e.dispatcher(t, true, nil, h)
	runOnce(t, d, "http")
	if got := delivery(t, e.st, "b1", "http"); got.PartsDone != 2 {
		t.Fatalf("parts marked by the sink not recorded: %+v", got)
	}
	e.now = e.now.Add(time.Minute)
	runOnce(t, d, "http")
	if got := delivery(t, e.st, "b1", "http"); got.State != store.DeliveryFailed || got.LastError != "HTTP 410" {
		t.Fatalf("after Failed: %+v", got)
	}
	e.now = e.now.Add(24 * time.Hour)
	if runOnce(t, d, "http") {
		t.Fatal("a failed delivery was retried automatically")
	}
	if _, err := e.st.Redeliver("b1", "http", e.now); err != nil {
		t.Fatal(err)
	}
	runOnce(t, d, "http")
	calls := h.callsSoFar()
	if len(calls) != 3 || calls[1].done != 2 || calls[2].done != 0 {
		t.Fatalf("parts the sink saw done: %+v; want 2 on the retry, 0 after the redeliver", calls)
	}
	if got := delivery(t, e.st, "b1", "http"); got.State != store.DeliveryDelivered {
		t.Fatalf("after redeliver: %+v", got)
	}
	if !strings.Contains(e.logs.String(), `"event":"sink_failed"`) {
		t.Fatalf("no sink_failed line: %s", e.logs)
	}
}

func TestAMissingExportIsRetriedAsLocal(t *testing.T) {
	e := newEnv(t, "http")
	path := e.export(t, "b1")
	if err := os.WriteFile(filepath.Join(path, export.ResultsFile), []byte("{}\n{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := &testSink{name: "http", answers: []sink.Result{{Outcome: sink.Delivered}}}
	d := e.dispatcher(t, true, nil, h)
	runOnce(t, d, "http")
	got := delivery(t, e.st, "b1", "http")
	if len(h.callsSoFar()) != 0 || got.State != store.DeliveryPending || got.ErrorKind != KindLocal || !strings.Contains(got.LastError, "does not match") {
		t.Fatalf("a tampered export reached the sink or was not retried as local: %+v", got)
	}
}

func TestASlowSinkDoesNotHoldBackAnother(t *testing.T) {
	e := newEnv(t, "http", "exec")
	e.export(t, "b1")
	e.export(t, "b2")
	e.export(t, "b3")
	slow := &testSink{name: "exec", block: make(chan struct{}), started: make(chan string, 10), answers: []sink.Result{{Outcome: sink.Delivered}}}
	fast := &testSink{name: "http", answers: []sink.Result{{Outcome: sink.Delivered}}}
	d := e.dispatcher(t, true, nil, slow, fast)
	e.now = time.Now() // the loop runs on the wall clock here
	d.o.Now = time.Now
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	// exec's two workers are held; http delivers all three meanwhile.
	for range 2 {
		select {
		case <-slow.started:
		case <-time.After(10 * time.Second):
			t.Fatal("the slow sink's workers did not start")
		}
	}
	deadline := time.After(10 * time.Second)
	for {
		counts, _ := e.st.DeliveryCounts()
		if counts["http"][store.DeliveryDelivered] == 3 {
			break
		}
		select {
		case <-deadline:
			t.Fatalf("http held back by a slow exec: counts %v", counts)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if n := len(slow.callsSoFar()); n != 2 {
		t.Fatalf("exec ran %d deliveries at once, want its 2 workers", n)
	}
	cancel() // shutdown cancels the held deliveries
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not stop")
	}
	counts, _ := e.st.DeliveryCounts()
	if counts["exec"][store.DeliveryPending] != 3 {
		t.Fatalf("after shutdown: %v; want every exec delivery still pending", counts)
	}
	for _, id := range []string{"b1", "b2", "b3"} {
		if got := delivery(t, e.st, id, "exec"); got.Attempts != 0 {
			t.Fatalf("a cancelled attempt counted: %+v", got)
		}
	}
}

// A redeliver during an attempt makes that attempt's outcome stale: the
// new generation is delivered, the old answer is not recorded over it.
func TestARedeliverDuringAnAttemptSupersedesIt(t *testing.T) {
	e := newEnv(t, "http")
	e.export(t, "b1")
	h := &testSink{name: "http", block: make(chan struct{}), started: make(chan string, 2), answers: []sink.Result{{Outcome: sink.Failed, Kind: "status", Reason: "HTTP 410"}}}
	d := e.dispatcher(t, true, nil, h)
	done := make(chan bool, 1)
	go func() { done <- runOnce(t, d, "http") }()
	<-h.started
	if _, err := e.st.Redeliver("b1", "http", e.now); err != nil {
		t.Fatal(err)
	}
	close(h.block)
	<-done
	got := delivery(t, e.st, "b1", "http")
	if got.State != store.DeliveryPending || got.Generation != 2 || got.Attempts != 0 {
		t.Fatalf("a stale Failed was recorded over the redeliver: %+v", got)
	}
	if !strings.Contains(e.logs.String(), `"event":"sink_superseded"`) {
		t.Fatalf("no sink_superseded line: %s", e.logs)
	}
}
