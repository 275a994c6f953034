package dispatch

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/batchhook/batchhook/sink"
	"github.com/batchhook/batchhook/store"
)

// eraseDuring is a network payment sink (http, kafka, nats) whose run was
// read before an erasure committed and is sent after it finished.
type eraseDuring struct {
	*paySink
	erase func()
	once  bool
}

func (s *eraseDuring) DeliverPayments(ctx context.Context, ps []sink.Payment) (int, sink.Result) {
	if !s.once {
		s.once = true
		s.erase()
	}
	return s.paySink.DeliverPayments(ctx, ps)
}

// TestErasureRecordListsASinkThatGotTheBodyInFlight: an erasure lists the
// payment sinks that already had each erased event (DECISIONS 24) from
// their cursors when it runs, but a run the dispatcher read before the
// erasure committed is still sent after it. Recording that delivery
// amends the (finished) erasure's record, so it names the sink.
func TestErasureRecordListsASinkThatGotTheBodyInFlight(t *testing.T) {
	e := newPayEnv(t, "http")
	const cpf = "52998224725"
	seq, _, err := e.st.RecordPayment(store.PaymentEvent{ReceivedAt: t0, Event: "transaction.paid", Attempt: 1, DedupKey: "k"},
		[]byte(fmt.Sprintf(`{"transaction":{"id":"tx-1","document_number":%q}}`, cpf)))
	if err != nil {
		t.Fatal(err)
	}
	var id string
	s := &eraseDuring{paySink: &paySink{name: "http"}, erase: func() {
		er, _, err := e.st.BeginErasure("hash", e.clock())
		if err != nil {
			t.Fatal(err)
		}
		id = er.ID
		if _, err := e.st.ErasePayments(id, func(d string) bool { return d == cpf }, e.clock()); err != nil {
			t.Fatal(err)
		}
		if _, err := e.st.FinishErasure(id, nil, e.clock()); err != nil {
			t.Fatal(err)
		}
	}}
	drain(t, e.payments(t, nil, nil, s), "http")
	if !slices.Contains(s.delivered(), seq) {
		t.Fatal("the sink did not get the event read before the erasure: the test did not set up the race")
	}
	all, err := e.st.Erasures(false)
	if err != nil || len(all) != 1 || len(all[0].Payments) != 1 {
		t.Fatalf("erasures = %+v %v", all, err)
	}
	if !slices.Contains(all[0].Payments[0].Sinks, "http") {
		t.Fatalf("http received event %d's body after the erasure, but the erasure's record lists sinks %v", seq, all[0].Payments[0].Sinks)
	}
}
