package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/sink"
	"github.com/batchhook/batchhook/store"
)

// paySink is a sink.PaymentSink whose answers the test scripts: each call
// takes the next answer (the last repeats): deliver `done` of the run
// (-1 = all), then answer res.
type paySink struct {
	name    string
	mu      sync.Mutex
	answers []payAnswer
	calls   [][]sink.Payment
	got     []sink.Payment // every event it delivered, in order
	// block, when set, holds each call until ctx ends.
	block bool
	enter chan struct{}
}

type payAnswer struct {
	done int
	res  sink.Result
}

func (s *paySink) Name() string { return s.name }

func (s *paySink) DeliverPayments(ctx context.Context, ps []sink.Payment) (int, sink.Result) {
	s.mu.Lock()
	s.calls = append(s.calls, ps)
	a := payAnswer{done: -1}
	if len(s.answers) > 0 {
		a = s.answers[min(len(s.calls)-1, len(s.answers)-1)]
	}
	block, enter := s.block, s.enter
	s.mu.Unlock()
	if enter != nil {
		enter <- struct{}{}
	}
	if block {
		<-ctx.Done()
		return 0, sink.Result{Outcome: sink.Retry, Kind: "cancelled", Reason: "cancelled"}
	}
	done := a.done
	if done < 0 || done > len(ps) {
		done = len(ps)
	}
	s.mu.Lock()
	s.got = append(s.got, ps[:done]...)
	s.mu.Unlock()
	return done, a.res
}

func (s *paySink) delivered() []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []uint64
	for _, p := range s.got {
		out = append(out, p.Seq)
	}
	return out
}

type payCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *payCounter) PaymentOutcome(s, o string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[s+"/"+o] += n
}

func (c *payCounter) get(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[k]
}

// payEnv is a real store in a temporary directory, a fixed clock and a
// log buffer.
type payEnv struct {
	dir  string
	st   *store.Store
	now  time.Time
	mu   sync.Mutex
	logs *bytes.Buffer
}

func newPayEnv(t *testing.T, sinks ...string) *payEnv {
	t.Helper()
	e := &payEnv{dir: t.TempDir(), now: t0, logs: &bytes.Buffer{}}
	e.open(t, sinks...)
	t.Cleanup(func() { e.st.Close() })
	return e
}

func (e *payEnv) open(t *testing.T, sinks ...string) {
	t.Helper()
	st, err := store.Open(e.dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	st.SetPaymentSinks(sinks)
	e.st = st
}

func (e *payEnv) clock() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.now
}

func (e *payEnv) advance(d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.now = e.now.Add(d)
}

// record logs n payment events received at at, at+1s, … and returns their
// seqs.
func (e *payEnv) record(t *testing.T, n int, at time.Time) []uint64 {
	t.Helper()
	var seqs []uint64
	for i := 0; i < n; i++ {
		last, _ := e.st.LastPaymentSeq()
		raw := fmt.Sprintf(`{"transaction": {"id": "tx-%d", "status": "paid"}}`, last+1)
		seq, created, err := e.st.RecordPayment(store.PaymentEvent{
			ReceivedAt: at.Add(time.Duration(i) * time.Second), Event: "transaction.paid", Attempt: 1,
			DedupKey: fmt.Sprintf("tx-%d|paid", last+1), TransactionID: fmt.Sprintf("tx-%d", last+1),
		}, []byte(raw))
		if err != nil || !created {
			t.Fatalf("record: %v %v", created, err)
		}
		seqs = append(seqs, seq)
	}
	return seqs
}

func (e *payEnv) payments(t *testing.T, out PaymentOutbox, obs PaymentObserver, sinks ...sink.PaymentSink) *Payments {
	t.Helper()
	m := map[string]sink.PaymentSink{}
	for _, s := range sinks {
		m[s.Name()] = s
	}
	if out == nil {
		out = e.st
	}
	p, err := NewPayments(PaymentOptions{Outbox: out, Sinks: m, BackoffBase: time.Second, BackoffMax: 20 * time.Second,
		Run: 3, IdlePoll: 50 * time.Millisecond, Logger: zerolog.New(&syncWriter{w: e.logs}),
		Now: e.clock, Jitter: func() float64 { return 0 }, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (e *payEnv) log() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.logs.String()
}

func drain(t *testing.T, p *Payments, name string) {
	t.Helper()
	for i := 0; ; i++ {
		worked, err := p.RunOnce(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		if !worked {
			return
		}
		if i > 1000 {
			t.Fatal("the dispatcher never runs out of work")
		}
	}
}

func TestPaymentsGoInOrderInRunsWithTheirLines(t *testing.T) {
	e := newPayEnv(t, "http")
	e.record(t, 5, t0)
	s := &paySink{name: "http"}
	obs := &payCounter{}
	p := e.payments(t, nil, obs, s)
	drain(t, p, "http")
	if got := fmt.Sprint(s.delivered()); got != "[1 2 3 4 5]" {
		t.Fatalf("delivered %s", got)
	}
	if len(s.calls) != 2 || len(s.calls[0]) != 3 {
		t.Errorf("runs of %d calls, first of %d; want runs of 3", len(s.calls), len(s.calls[0]))
	}
	first := s.calls[0][0]
	var line map[string]any
	if err := json.Unmarshal(first.Line, &line); err != nil {
		t.Fatal(err)
	}
	if line["seq"] != 1.0 || line["event"] != "transaction.paid" || first.TransactionID != "tx-1" || first.DedupKey != "tx-1|paid" ||
		line["body"].(map[string]any)["transaction"].(map[string]any)["id"] != "tx-1" {
		t.Errorf("first event %+v line %s", first, first.Line)
	}
	c, _ := e.st.PaymentCursor("http")
	if c.Through != 5 || obs.get("http/delivered") != 5 {
		t.Errorf("cursor %+v, delivered counted %d", c, obs.get("http/delivered"))
	}
	if n := strings.Count(e.log(), `"event":"payment_delivered"`); n != 5 {
		t.Errorf("%d payment_delivered lines", n)
	}
}

func TestPaymentRetryKeepsTheHeadAndHonoursRetryAfter(t *testing.T) {
	e := newPayEnv(t, "http")
	e.record(t, 3, t0)
	s := &paySink{name: "http", answers: []payAnswer{
		{done: 1, res: sink.Result{Outcome: sink.Retry, Kind: "status", Reason: "HTTP 429", RetryAfter: 7 * time.Second}},
		{done: 0, res: sink.Result{Outcome: sink.Retry, Kind: "status", Reason: "HTTP 503"}},
		{done: -1, res: sink.Result{Outcome: sink.Delivered}},
	}}
	obs := &payCounter{}
	p := e.payments(t, nil, obs, s)
	if worked, err := p.RunOnce(context.Background(), "http"); !worked || err != nil {
		t.Fatalf("first pass: %v %v", worked, err)
	}
	c, _ := e.st.PaymentCursor("http")
	// attempt 1: base 1s jittered to 0.5s, but Retry-After asks 7s.
	if c.Through != 1 || c.Attempts != 1 || !c.NextAttemptAt.Equal(t0.Add(7*time.Second)) || c.ErrorKind != "status" {
		t.Fatalf("cursor after a 429: %+v", c)
	}
	if worked, _ := p.RunOnce(context.Background(), "http"); worked {
		t.Fatal("the head was handed before its retry time")
	}
	e.advance(7 * time.Second)
	p.RunOnce(context.Background(), "http")
	c, _ = e.st.PaymentCursor("http")
	// attempt 2: 2s jittered to 1s.
	if c.Through != 1 || c.Attempts != 2 || !c.NextAttemptAt.Equal(e.clock().Add(time.Second)) {
		t.Fatalf("cursor after a 503: %+v", c)
	}
	e.advance(time.Second)
	drain(t, p, "http")
	if got := fmt.Sprint(s.delivered()); got != "[1 2 3]" {
		t.Fatalf("delivered %s", got)
	}
	if obs.get("http/retry") != 2 || obs.get("http/delivered") != 3 || !strings.Contains(e.log(), `"event":"payment_delivery_retry"`) {
		t.Errorf("counts %v", obs.n)
	}
}

func TestPaymentRetryAfterIsCapped(t *testing.T) {
	e := newPayEnv(t, "http")
	e.record(t, 1, t0)
	s := &paySink{name: "http", answers: []payAnswer{{done: 0, res: sink.Result{Outcome: sink.Retry, Kind: "status", RetryAfter: 1000 * time.Hour}}}}
	e.payments(t, nil, nil, s).RunOnce(context.Background(), "http")
	if c, _ := e.st.PaymentCursor("http"); !c.NextAttemptAt.Equal(t0.Add(20 * time.Second)) {
		t.Fatalf("next attempt %v; want BackoffMax after now", c.NextAttemptAt)
	}
}

func TestPaymentFailedIsRecordedAndPassed(t *testing.T) {
	e := newPayEnv(t, "kafka")
	e.record(t, 3, t0)
	s := &paySink{name: "kafka", answers: []payAnswer{
		{done: 1, res: sink.Result{Outcome: sink.Failed, Kind: "too_large", Reason: "record too large"}},
		{done: -1, res: sink.Result{Outcome: sink.Delivered}},
	}}
	obs := &payCounter{}
	drain(t, e.payments(t, nil, obs, s), "kafka")
	if got := fmt.Sprint(s.delivered()); got != "[1 3]" {
		t.Fatalf("delivered %s", got)
	}
	fs, _ := e.st.PaymentFailures("kafka")
	if len(fs) != 1 || fs[0].Seq != 2 || fs[0].Kind != "too_large" {
		t.Fatalf("failures %+v", fs)
	}
	if obs.get("kafka/failed") != 1 || !strings.Contains(e.log(), `"event":"payment_delivery_failed"`) {
		t.Errorf("counts %v", obs.n)
	}
}

// dropBodies is the real store with the bodies of some events gone, as a
// purge or an erasure leaves them.
type dropBodies struct {
	*store.Store
	gone map[uint64]bool
}

func (d dropBodies) NextPayments(s string, now time.Time, limit int) ([]store.PaymentRecord, time.Time, error) {
	recs, next, err := d.Store.NextPayments(s, now, limit)
	for i := range recs {
		if d.gone[recs[i].Seq] {
			recs[i].Body = nil
		}
	}
	return recs, next, err
}

func TestPaymentWithoutBodyIsFailedNeverSentEmpty(t *testing.T) {
	e := newPayEnv(t, "http")
	e.record(t, 4, t0)
	s := &paySink{name: "http"}
	obs := &payCounter{}
	drain(t, e.payments(t, dropBodies{e.st, map[uint64]bool{1: true, 3: true}}, obs, s), "http")
	if got := fmt.Sprint(s.delivered()); got != "[2 4]" {
		t.Fatalf("delivered %s", got)
	}
	for _, call := range s.calls {
		for _, p := range call {
			if p.Seq == 1 || p.Seq == 3 {
				t.Fatalf("event %d was handed to the sink without its body", p.Seq)
			}
		}
	}
	fs, _ := e.st.PaymentFailures("http")
	if len(fs) != 2 || fs[0].Kind != KindBodyDropped || fs[1].Seq != 3 {
		t.Fatalf("failures %+v", fs)
	}
	if c, _ := e.st.PaymentCursor("http"); c.Through != 4 || obs.get("http/failed") != 2 {
		t.Fatalf("cursor %+v counts %v", c, obs.n)
	}
}

func TestPaymentShutdownLeavesTheHeadPending(t *testing.T) {
	e := newPayEnv(t, "http")
	e.record(t, 2, t0)
	s := &paySink{name: "http", block: true, enter: make(chan struct{}, 1)}
	p := e.payments(t, nil, nil, s)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- p.Run(ctx) }()
	select {
	case <-s.enter:
	case <-time.After(5 * time.Second):
		t.Fatal("the sink was never called")
	}
	cancel()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not stop")
	}
	c, _ := e.st.PaymentCursor("http")
	if c.Through != 0 || c.Attempts != 0 || !c.NextAttemptAt.IsZero() || c.LastError != "" {
		t.Fatalf("cursor after a shutdown: %+v", c)
	}
	if !strings.Contains(e.log(), `"event":"payment_delivery_interrupted"`) {
		t.Error("no payment_delivery_interrupted line")
	}
}

func TestPaymentRunWakesOnANewEvent(t *testing.T) {
	e := newPayEnv(t, "http", "nats")
	s := &paySink{name: "http", enter: make(chan struct{}, 8)}
	p := e.payments(t, nil, nil, s)
	p.o.IdlePoll = time.Hour // only the store's wakeup can start the pass
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go p.Run(ctx)
	e.record(t, 1, t0)
	select {
	case <-s.enter:
	case <-time.After(5 * time.Second):
		t.Fatal("a new event did not wake the loop")
	}
}

// failingOutbox is the real store whose PaymentsDelivered fails (as a
// crash between the sink's answer and the commit would lose it) from the
// failAt-th call on.
type failingOutbox struct {
	*store.Store
	mu     sync.Mutex
	calls  int
	failAt int
}

func (f *failingOutbox) PaymentsDelivered(s string, through uint64, now time.Time) error {
	f.mu.Lock()
	f.calls++
	n := f.calls
	f.mu.Unlock()
	if n >= f.failAt {
		return errors.New("killed before the commit")
	}
	return f.Store.PaymentsDelivered(s, through, now)
}
