package dispatch

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/lifecycle/erasure"
	"github.com/batchhook/batchhook/sink"
	"github.com/batchhook/batchhook/store"
)

// The second person's item of the test export, left once the first
// person (CPF 123.456.789-09) is erased.
const itemLeft = "{\"cpf\":\"98765432100\",\"result\":\"not_found\"}\n"

func (e *env) erasures(t *testing.T) *erasure.Service {
	t.Helper()
	svc, err := erasure.New(erasure.Options{Store: e.st, Exports: e.dir, CPFField: "cpf", Logger: zerolog.Nop(),
		Now: func() time.Time { return e.now }})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// TestAnErasureMidDeliveryStartsTheNewVersionFromItsFirstPart: a delivery
// that sent part 1 of version 0 and then met an outage must not skip "part
// 1" of the rewritten export (the other person's item): it moves to version
// 1 and starts from its first part, under version 1's ids.
func TestAnErasureMidDeliveryStartsTheNewVersionFromItsFirstPart(t *testing.T) {
	e := newEnv(t, "http")
	e.export(t, "b1")
	h := &testSink{name: "http", marks: 1, answers: []sink.Result{{Outcome: sink.Retry, Kind: "status", Reason: "503"}, {Outcome: sink.Delivered}}}
	d := e.dispatcher(t, true, nil, h)
	runOnce(t, d, "http")
	if got := delivery(t, e.st, "b1", "http"); got.PartsDone != 1 || got.Version != 0 {
		t.Fatalf("after the outage: %+v", got)
	}
	rec, err := e.erasures(t).Erase("123.456.789-09")
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Batches) != 1 || rec.Batches[0].Version != 1 || len(rec.Batches[0].Sinks) != 1 ||
		rec.Batches[0].Sinks[0] != (store.SinkReceipt{Sink: "http", Received: store.ReceivedMaybe, Version: 0}) {
		t.Fatalf("erasure record %+v", rec)
	}
	got := delivery(t, e.st, "b1", "http")
	if got.State != store.DeliveryPending || got.Version != 1 || got.PartsDone != 0 || got.Attempts != 0 || !got.NextAttemptAt.Equal(e.now) {
		t.Fatalf("after the erasure the delivery is %+v; want pending, version 1, from part 0, due now", got)
	}
	h.marks = 0
	if !runOnce(t, d, "http") {
		t.Fatal("the moved delivery was not due")
	}
	calls := h.callsSoFar()
	last := calls[len(calls)-1]
	if last.done != 0 || last.e.Version != 1 || last.items != itemLeft || last.e.Items != 1 {
		t.Fatalf("the sink resumed at part %d of version %d with %q; want part 0 of version 1 with the other person's item",
			last.done, last.e.Version, last.items)
	}
	if got := delivery(t, e.st, "b1", "http"); got.State != store.DeliveryDelivered || got.Version != 1 {
		t.Fatalf("delivery %+v", got)
	}
}

// TestAnErasureAsADeliveryStartsNeverFailsIt: the erasure lands after the
// sink took the export and before it read the items. The sink reads the
// content it was handed (never the new file against the old manifest), the
// erasure waits until the attempt is over, the attempt counts nothing and
// the delivery moves to version 1; it is never failed.
func TestAnErasureAsADeliveryStartsNeverFailsIt(t *testing.T) {
	e := newEnv(t, "http")
	e.export(t, "b1")
	h := &testSink{name: "http", started: make(chan string, 1), gate: make(chan struct{}), countItems: true,
		answers: []sink.Result{{Outcome: sink.Delivered}}}
	d := e.dispatcher(t, true, nil, h)
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		d.RunOnce(context.Background(), "http")
	}()
	<-h.started
	erased := make(chan error, 1)
	go func() {
		_, err := e.erasures(t).Erase("12345678909")
		erased <- err
	}()
	select {
	case <-ran: // the change cut the attempt short
	case err := <-erased:
		t.Fatalf("the erasure returned (%v) while a sink was still delivering the old content", err)
	case <-time.After(20 * time.Second):
		t.Fatal("the attempt was not cut short by the erasure")
	}
	close(h.gate)
	if err := <-erased; err != nil {
		t.Fatal(err)
	}
	got := delivery(t, e.st, "b1", "http")
	if got.State != store.DeliveryPending || got.Version != 1 || got.Attempts != 0 || got.PartsDone != 0 {
		t.Fatalf("after an erasure during an attempt the delivery is %+v; want pending, version 1, no attempt counted", got)
	}
	if !strings.Contains(e.logs.String(), `"event":"sink_export_changed"`) {
		t.Fatalf("no sink_export_changed line: %s", e.logs)
	}
	runOnce(t, d, "http")
	if got := delivery(t, e.st, "b1", "http"); got.State != store.DeliveryDelivered || got.Version != 1 {
		t.Fatalf("delivery %+v", got)
	}
	if calls := h.callsSoFar(); len(calls) != 1 || calls[0].items != itemLeft || calls[0].e.Version != 1 {
		t.Fatalf("sink saw %+v", calls)
	}
}

// TestANewerVersionInPlaceMovesTheDelivery: an erasure rewrote the export
// and a crash came before the store recorded the new version; the
// dispatcher finds the newer version in the manifest and moves every
// undelivered delivery to it rather than continuing the old one's parts.
func TestANewerVersionInPlaceMovesTheDelivery(t *testing.T) {
	e := newEnv(t, "http", "nats")
	e.export(t, "b1")
	h := &testSink{name: "http", marks: 1, answers: []sink.Result{{Outcome: sink.Retry, Kind: "status", Reason: "503"}, {Outcome: sink.Delivered}}}
	n := &testSink{name: "nats", answers: []sink.Result{{Outcome: sink.Delivered}}}
	d := e.dispatcher(t, true, nil, h, n)
	runOnce(t, d, "http")
	runOnce(t, d, "nats")
	// The rewrite alone, as a crash right after the swap leaves it.
	if _, v, _, err := e.dir.Erase("b1", 0, "cpf", func(s string) bool { return s == "12345678909" }, nil); err != nil || v != 1 {
		t.Fatalf("Erase = %d, %v", v, err)
	}
	e.now = e.now.Add(time.Hour)
	runOnce(t, d, "http")
	got := delivery(t, e.st, "b1", "http")
	if got.Version != 1 || got.PartsDone != 0 || got.State != store.DeliveryPending {
		t.Fatalf("delivery %+v; want moved to version 1 from part 0", got)
	}
	if nd := delivery(t, e.st, "b1", "nats"); nd.State != store.DeliveryDelivered || nd.Version != 0 {
		t.Fatalf("a delivered delivery was moved: %+v", nd)
	}
	if b, _ := e.st.Get("b1"); b.Version() != 1 {
		t.Fatalf("batch version %d, want 1", b.Version())
	}
	runOnce(t, d, "http")
	calls := h.callsSoFar()
	if last := calls[len(calls)-1]; last.done != 0 || last.e.Version != 1 || last.items != itemLeft {
		t.Fatalf("sink saw %+v", last)
	}
}
