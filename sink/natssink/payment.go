package natssink

import (
	"context"
	"strconv"

	"github.com/nats-io/nats.go"

	"github.com/batchhook/batchhook/sink"
)

// The headers of a payment message (besides Nats-Msg-Id and HeaderKind =
// KindPayment).
const (
	KindPayment = "payment"
	HeaderSeq   = "Batchhook-Seq"
	HeaderEvent = "Batchhook-Event"
)

var _ sink.PaymentSink = (*Sink)(nil)

// DeliverPayments publishes each event of ps on the payments subject, in
// order, each waiting for its JetStream ack, and stops at the first that
// is not acked. The payload is the event's line and Nats-Msg-Id is
// PaymentMessageID(seq), so the stream's duplicate window drops an event
// sent again after a crash or a retry.
func (s *Sink) DeliverPayments(ctx context.Context, ps []sink.Payment) (int, sink.Result) {
	if len(ps) == 0 {
		return 0, sink.Result{Outcome: sink.Delivered}
	}
	_, js, err := s.conn()
	if err != nil {
		return 0, sink.Result{Outcome: sink.Retry, Kind: "connection", Reason: err.Error()}
	}
	for i, p := range ps {
		if err := ctx.Err(); err != nil {
			return i, sink.Result{Outcome: sink.Retry, Kind: "cancelled", Reason: "delivery interrupted: " + err.Error()}
		}
		m := &nats.Msg{Subject: s.o.PaymentsSubject, Header: nats.Header{}, Data: p.Line}
		m.Header.Set(HeaderKind, KindPayment)
		m.Header.Set(HeaderSeq, strconv.FormatUint(p.Seq, 10))
		if headerSafe(p.Event) {
			m.Header.Set(HeaderEvent, p.Event)
		}
		if err := s.publish(ctx, js, m, PaymentMessageID(p.Seq)); err != nil {
			return i, classify(i+1, len(ps), err)
		}
	}
	return len(ps), sink.Result{Outcome: sink.Delivered}
}

// PaymentMessageID is the Nats-Msg-Id of payment event seq:
// "payment:<seq>".
func PaymentMessageID(seq uint64) string { return "payment:" + strconv.FormatUint(seq, 10) }
