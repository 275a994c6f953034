package dispatch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/internal/backoff"
	"github.com/batchhook/batchhook/sink"
	"github.com/batchhook/batchhook/store"
)

// pass is one round of a sink's loop. worked is true when it handed or
// recorded something; next is when the head falls due when it waits for a
// retry; err is a store error (the loop waits BackoffBase).
func (p *Payments) pass(ctx context.Context, name string, s sink.PaymentSink, log zerolog.Logger) (worked bool, next time.Time, err error) {
	recs, next, err := p.o.Outbox.NextPayments(name, p.o.Now(), p.o.Run)
	if err != nil || len(recs) == 0 {
		return false, next, err
	}
	run, stop := paymentRun(recs)
	if len(run) == 0 {
		// The head cannot be sent at all: record it failed and move on.
		return true, time.Time{}, p.fail(log, name, recs[0].Seq, stop)
	}
	done, res := s.DeliverPayments(ctx, run)
	done = min(max(done, 0), len(run))
	if done > 0 {
		through := run[done-1].Seq
		if err := p.o.Outbox.PaymentsDelivered(name, through, p.o.Now()); err != nil {
			// The sink has them; the next pass hands them again, and the
			// sink absorbs the repeat.
			return true, time.Time{}, fmt.Errorf("record payment events %d..%d delivered: %w", run[0].Seq, through, err)
		}
		p.o.Observer.PaymentOutcome(name, sink.Delivered.String(), done)
		for _, e := range run[:done] {
			log.Info().Str("event", "payment_delivered").Uint64("seq", e.Seq).Msg("payment event delivered")
		}
	}
	if done == len(run) {
		if done < len(recs) && stop.Outcome == sink.Failed {
			// The event after the run cannot be sent: it is the head now.
			return true, time.Time{}, p.fail(log, name, recs[done].Seq, stop)
		}
		return true, time.Time{}, nil
	}
	head := run[done].Seq
	if res.Outcome == sink.Delivered {
		res = sink.Result{Outcome: sink.Retry, Kind: KindLocal,
			Reason: fmt.Sprintf("the sink answered delivered for %d of %d events", done, len(run))}
	}
	if ctx.Err() != nil && res.Outcome != sink.Failed {
		log.Info().Str("event", "payment_delivery_interrupted").Uint64("seq", head).
			Msg("payment delivery cut by shutdown; the event stays pending")
		return true, time.Time{}, nil
	}
	if res.Outcome == sink.Failed {
		return true, time.Time{}, p.fail(log, name, head, res)
	}
	return true, time.Time{}, p.retry(log, name, head, res)
}

// paymentRun builds the sink's view of the leading events of recs that
// can be sent. When it stops before the end because an event cannot be
// sent (its body dropped, or not JSON), stop is that event's Failed
// outcome; the event is recorded failed once it is the head.
func paymentRun(recs []store.PaymentRecord) ([]sink.Payment, sink.Result) {
	run := make([]sink.Payment, 0, len(recs))
	for _, r := range recs {
		if r.Body == nil {
			return run, sink.Result{Outcome: sink.Failed, Kind: KindBodyDropped,
				Reason: "the event's body was dropped (retention or erasure) before it reached this sink; it is not sent without it"}
		}
		line, err := sink.PaymentLine(r.Seq, r.ReceivedAt, r.Event, r.Attempt, r.Body)
		if err != nil {
			return run, sink.Result{Outcome: sink.Failed, Kind: KindBadBody, Reason: err.Error()}
		}
		run = append(run, sink.Payment{
			Seq: r.Seq, ReceivedAt: r.ReceivedAt, Event: r.Event, Attempt: r.Attempt,
			DedupKey: r.DedupKey, TransactionID: r.TransactionID, Line: line,
		})
	}
	return run, sink.Result{Outcome: sink.Delivered}
}

// fail records that the head seq is refused for good; the cursor passes it.
func (p *Payments) fail(log zerolog.Logger, name string, seq uint64, res sink.Result) error {
	if err := p.o.Outbox.FailPayment(name, seq, res.Kind, res.Reason, p.o.Now()); err != nil {
		return p.recordErr(log, seq, err)
	}
	p.o.Observer.PaymentOutcome(name, sink.Failed.String(), 1)
	log.Error().Str("event", "payment_delivery_failed").Uint64("seq", seq).Str("kind", res.Kind).Str("reason", res.Reason).
		Msg("the sink refused the payment event for good; the next events go on")
	return nil
}

// retry keeps the head seq waiting for a backoff (the batch deliveries'
// policy: exponential from BackoffBase, jittered, at least RetryAfter,
// at most BackoffMax).
func (p *Payments) retry(log zerolog.Logger, name string, seq uint64, res sink.Result) error {
	c, err := p.o.Outbox.PaymentCursor(name)
	if err != nil {
		return p.recordErr(log, seq, err)
	}
	attempt := c.Attempts + 1
	delay := backoff.Delay(attempt, p.o.BackoffBase, p.o.BackoffMax, res.RetryAfter, p.o.Jitter())
	if err := p.o.Outbox.RetryPayment(name, seq, p.o.Now().Add(delay), res.Kind, res.Reason, true); err != nil {
		return p.recordErr(log, seq, err)
	}
	p.o.Observer.PaymentOutcome(name, sink.Retry.String(), 1)
	log.Warn().Str("event", "payment_delivery_retry").Uint64("seq", seq).Int("attempt", attempt).
		Str("kind", res.Kind).Str("reason", res.Reason).Int64("retry_in_ms", delay.Milliseconds()).
		Msg("payment delivery failed; will retry (the events after it wait)")
	return nil
}

// recordErr returns a store error for the loop to log and back off on;
// ErrState (the head moved under us, which one worker per sink should
// never see) is logged here and not retried in a hurry.
func (p *Payments) recordErr(log zerolog.Logger, seq uint64, err error) error {
	if errors.Is(err, store.ErrState) {
		log.Warn().Str("event", "payment_record_failed").Uint64("seq", seq).Err(err).
			Msg("the payment outbox moved during this attempt; it is read again")
		return nil
	}
	return fmt.Errorf("record the outcome of payment event %d: %w", seq, err)
}
