package kafkasink

import (
	"context"
	"errors"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/batchhook/batchhook/sink"
)

// The headers of a payment record (besides HeaderKind = KindPayment).
const (
	KindPayment = "payment"
	HeaderSeq   = "batchhook-seq"
	HeaderEvent = "batchhook-event"
)

var _ sink.PaymentSink = (*Sink)(nil)

// DeliverPayments sends the events of ps to the payments topic in one
// transaction, in log order: each record's value is the event's line, its
// key transaction.id when the body has one (so a transaction's events stay
// in one partition, in order), else the dedup key; its headers say the
// kind (payment), the seq and the event name. It holds the producer for
// the whole run, so payment and batch transactions never interleave (one
// transactional producer, DECISIONS 30). When the broker refuses the run
// for good and it holds several events, they are sent again one per
// transaction, so that only the event at fault is failed.
//
// A crash between the commit and the dispatcher's record sends the run
// again in a new transaction: a consumer that must not see an event twice
// deduplicates on the seq header (docs/sinks.md, kafka sink).
func (s *Sink) DeliverPayments(ctx context.Context, ps []sink.Payment) (int, sink.Result) {
	if len(ps) == 0 {
		return 0, sink.Result{Outcome: sink.Delivered}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	res := s.paymentTxn(ctx, ps)
	if res.Outcome == sink.Delivered {
		return len(ps), res
	}
	if res.Outcome != sink.Failed || len(ps) == 1 {
		return 0, res
	}
	for i := range ps {
		if r := s.paymentTxn(ctx, ps[i:i+1]); r.Outcome != sink.Delivered {
			return i, r
		}
	}
	return len(ps), sink.Result{Outcome: sink.Delivered}
}

// paymentTxn sends ps in one transaction; the caller holds s.mu. Any
// failure aborts it and drops the producer, as for a batch.
func (s *Sink) paymentTxn(ctx context.Context, ps []sink.Payment) sink.Result {
	if err := ctx.Err(); err != nil {
		return cancelled(err)
	}
	cl, err := s.clientLocked()
	if err != nil {
		return local(sink.Retry, err)
	}
	res := s.sendPayments(ctx, cl, ps)
	if res.Outcome != sink.Delivered {
		s.dropClient()
	}
	return res
}

func (s *Sink) sendPayments(ctx context.Context, cl *kgo.Client, ps []sink.Payment) sink.Result {
	if err := cl.BeginTransaction(); err != nil {
		return classify("begin transaction", err)
	}
	pctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	errs := make(chan error, len(ps))
	for _, p := range ps {
		key := p.TransactionID
		if key == "" {
			key = p.DedupKey
		}
		if key == "" {
			s.abort(ctx, cl)
			return local(sink.Failed, errors.New("payment event "+strconv.FormatUint(p.Seq, 10)+" has neither a transaction id nor a dedup key"))
		}
		cl.Produce(pctx, &kgo.Record{Topic: s.payment, Key: []byte(key), Value: p.Line, Headers: []kgo.RecordHeader{
			{Key: HeaderKind, Value: []byte(KindPayment)},
			{Key: HeaderSeq, Value: []byte(strconv.FormatUint(p.Seq, 10))},
			{Key: HeaderEvent, Value: []byte(p.Event)},
		}}, func(_ *kgo.Record, err error) { errs <- err })
	}
	if err := cl.Flush(pctx); err != nil {
		s.abort(ctx, cl)
		return classify("flush", err)
	}
	for range ps {
		if err := <-errs; err != nil {
			s.abort(ctx, cl)
			return classify("produce", err)
		}
	}
	// As for a batch, the commit is not cut by a shutdown.
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
	defer ccancel()
	if err := cl.EndTransaction(cctx, kgo.TryCommit); err != nil {
		s.abort(ctx, cl)
		return classify("commit", err)
	}
	return sink.Result{Outcome: sink.Delivered}
}
