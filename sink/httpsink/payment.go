package httpsink

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/batchhook/batchhook/sink"
)

// PaymentType is the Standard Webhooks type of a payment event message.
const PaymentType = "payment.event"

var _ sink.PaymentSink = (*Sink)(nil)

// DeliverPayments posts each event of ps as one message, in order, and
// stops at the first that does not go through (its Result, classified as
// for exports). A message is
//
//	{"type":"payment.event","timestamp":<received_at>,"data":<the line object>}
//
// with webhook-id "payment:<seq>"; it depends only on the event, so a
// message sent again after a crash or a retry is byte-identical and a
// receiver deduplicates it on its webhook-id.
func (s *Sink) DeliverPayments(ctx context.Context, ps []sink.Payment) (int, sink.Result) {
	key := s.key()
	if len(key) == 0 {
		return 0, local(sink.Retry, errors.New("the signing key is empty"))
	}
	var body bytes.Buffer
	for i, p := range ps {
		if err := ctx.Err(); err != nil {
			return i, cancelled(err)
		}
		paymentBody(&body, p)
		if r, ok := s.post(ctx, key, PaymentMessageID(p.Seq), body.Bytes()); !ok {
			return i, r
		}
	}
	return len(ps), sink.Result{Outcome: sink.Delivered}
}

// paymentBody writes p's message into buf.
func paymentBody(buf *bytes.Buffer, p sink.Payment) {
	buf.Reset()
	buf.WriteString(`{"type":"` + PaymentType + `","timestamp":"`)
	buf.WriteString(p.ReceivedAt.UTC().Format(time.RFC3339Nano))
	buf.WriteString(`","data":`)
	buf.Write(p.Line)
	buf.WriteByte('}')
}

// PaymentMessageID is the webhook-id of payment event seq:
// "payment:<seq>". A batch whose id is "payment" would have the same ids
// for its parts; docs/payments.md says so.
func PaymentMessageID(seq uint64) string { return "payment:" + strconv.FormatUint(seq, 10) }
