package dispatch

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/internal/backoff"
	"github.com/batchhook/batchhook/sink"
	"github.com/batchhook/batchhook/store"
)

// KindLocal is the Result.Kind of a delivery that could not start here:
// the published export is missing, or does not match its manifest. It is
// retried, never failed: the delivery is not lost to a local fault.
const KindLocal = "local"

// process makes one attempt at a leased delivery and records its outcome.
// At shutdown (ctx ended) an attempt that did not deliver records nothing:
// the delivery stays pending, due at once at the next start, with the
// parts it marked.
func (d *Dispatcher) process(ctx context.Context, name string, s sink.Sink, del *store.Delivery) {
	attempt := del.Attempts + 1
	log := d.o.Logger.With().Str("sink", name).Str("batch_id", del.BatchID).Int("attempt", attempt).Logger()
	e, res, ok := d.open(del)
	if ok {
		res = s.Deliver(ctx, e, &progress{out: d.o.Outbox, del: del, done: del.PartsDone})
	}
	if res.Outcome != sink.Delivered && ctx.Err() != nil {
		log.Info().Str("event", "sink_interrupted").Msg("delivery cut by shutdown; it stays pending")
		return
	}
	switch res.Outcome {
	case sink.Delivered:
		remove, err := d.o.Outbox.Delivered(del.BatchID, name, del.Generation, d.o.Now(), !d.o.KeepExports)
		if err != nil {
			d.recordFailed(log, err)
			return
		}
		d.o.Observer.SinkOutcome(name, sink.Delivered.String())
		log.Info().Str("event", "sink_delivered").Int("version", del.Version).Msg("export delivered")
		if remove {
			d.removeExport(log, del.BatchID)
		}
	case sink.Failed:
		if err := d.o.Outbox.FailDelivery(del.BatchID, name, del.Generation, res.Kind, res.Reason); err != nil {
			d.recordFailed(log, err)
			return
		}
		d.o.Observer.SinkOutcome(name, sink.Failed.String())
		log.Error().Str("event", "sink_failed").Str("kind", res.Kind).Str("reason", res.Reason).
			Msg("the sink refused the export for good; only an operator's redeliver sends it again")
	default: // Retry, or an outcome this version does not know
		if res.Outcome != sink.Retry {
			res = sink.Result{Outcome: sink.Retry, Kind: KindLocal, Reason: fmt.Sprintf("sink answered unknown outcome %d", res.Outcome)}
		}
		delay := backoff.Delay(attempt, d.o.BackoffBase, d.o.BackoffMax, res.RetryAfter, d.o.Jitter())
		at := d.o.Now().Add(delay)
		if err := d.o.Outbox.RetryDelivery(del.BatchID, name, del.Generation, at, res.Kind, res.Reason, true); err != nil {
			d.recordFailed(log, err)
			return
		}
		d.o.Observer.SinkOutcome(name, sink.Retry.String())
		log.Warn().Str("event", "sink_retry").Str("kind", res.Kind).Str("reason", res.Reason).
			Int64("retry_in_ms", delay.Milliseconds()).Msg("delivery failed; will retry")
	}
}

// recordFailed logs an outcome the store did not take. The delivery stays
// as the store has it: pending and due (it is tried again, so a delivered
// export may be sent twice, which message ids let a receiver absorb), or
// already queued again by an operator (ErrState: the new generation goes).
func (d *Dispatcher) recordFailed(log zerolog.Logger, err error) {
	if errors.Is(err, store.ErrState) {
		log.Info().Str("event", "sink_superseded").Err(err).
			Msg("the delivery was queued again during this attempt; the new one is delivered instead")
		return
	}
	log.Error().Str("event", "sink_record_failed").Err(err).Msg("could not record the delivery's outcome")
}

// open builds the sink's view of the published export, checked against its
// manifest. When it cannot, it returns a Retry of kind local with the
// reason, and ok=false.
func (d *Dispatcher) open(del *store.Delivery) (sink.Export, sink.Result, bool) {
	raw, m, ok, err := d.o.Exports.Read(del.BatchID)
	if err != nil {
		return sink.Export{}, sink.Result{Outcome: sink.Retry, Kind: KindLocal, Reason: fmt.Sprintf("read the published export: %v", err)}, false
	}
	if !ok {
		return sink.Export{}, sink.Result{Outcome: sink.Retry, Kind: KindLocal,
			Reason: "the published export is missing or does not match its manifest (refetch the batch if it stays so)"}, false
	}
	id := del.BatchID
	return sink.Export{
		BatchID: id, Status: m.Status, Dir: d.o.Exports.Path(id), Manifest: raw, Items: m.Items,
		ExportedAt: m.ExportedAt, Version: del.Version,
		OpenItems: func() (io.ReadCloser, error) { return d.o.Exports.OpenResults(id) },
	}, sink.Result{}, true
}

// progress is sink.Progress backed by the delivery's record.
type progress struct {
	out  Outbox
	del  *store.Delivery
	done int
}

func (p *progress) Done() int { return p.done }

func (p *progress) Mark(n int) error {
	if err := p.out.MarkParts(p.del.BatchID, p.del.Sink, p.del.Generation, n); err != nil {
		return err
	}
	p.done = n
	return nil
}

// removeExport removes a delivered export (file is not a configured sink)
// and then drops it from the store's removal list; a failure leaves it
// listed, for the next start to finish.
func (d *Dispatcher) removeExport(log zerolog.Logger, batchID string) {
	if err := d.o.Exports.Remove(batchID); err != nil {
		log.Error().Str("event", "export_remove_failed").Err(err).Msg("could not remove the delivered export; retried at next start")
		return
	}
	if err := d.o.Outbox.ExportRemovalDone(batchID); err != nil {
		log.Error().Str("event", "export_remove_failed").Err(err).Msg("export removed, but not recorded; done again at next start")
		return
	}
	log.Info().Str("event", "export_removed").Msg("every sink has the export and file is not a configured sink: its directory was removed")
}

// sweepRemovals finishes the removals a crash or a failure left undone.
func (d *Dispatcher) sweepRemovals() {
	ids, err := d.o.Outbox.ExportRemovals()
	if err != nil {
		d.o.Logger.Error().Str("event", "export_remove_failed").Err(err).Msg("could not list the exports to remove")
		return
	}
	for _, id := range ids {
		d.removeExport(d.o.Logger.With().Str("batch_id", id).Logger(), id)
	}
}
