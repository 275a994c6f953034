package dispatch

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/export"
	"github.com/batchhook/batchhook/internal/backoff"
	"github.com/batchhook/batchhook/sink"
	"github.com/batchhook/batchhook/store"
)

// KindLocal is the Result.Kind of a delivery that could not start here:
// the published export is missing, or does not match its manifest. It is
// retried, never failed: the delivery is not lost to a local fault.
const KindLocal = "local"

// KindChanged is the Result.Kind recorded when the export changed during an
// attempt (an erasure or a refetch): no attempt is counted.
const KindChanged = store.KindExportChanged

// process makes one attempt at a leased delivery and records its outcome.
// At shutdown (ctx ended) an attempt that did not deliver records nothing:
// the delivery stays pending, due at once at the next start, with the
// parts it marked.
//
// The sink reads a snapshot of the export (export.Snapshot): the manifest
// and results it checked, whatever replaces them meanwhile. A change of the
// export during the attempt (an erasure, a refetch) cuts the attempt short;
// the outcome is recorded before the snapshot is let go, because the change
// waits for that and then moves the delivery to the new version.
func (d *Dispatcher) process(ctx context.Context, name string, s sink.Sink, del *store.Delivery) {
	attempt := del.Attempts + 1
	log := d.o.Logger.With().Str("sink", name).Str("batch_id", del.BatchID).Int("attempt", attempt).Logger()
	snap, res, ok := d.open(del)
	if !ok {
		d.record(ctx, log, name, del, res, attempt, false)
		return
	}
	version := snap.Manifest.VersionOr(del.Version)
	if version != del.Version {
		snap.Close()
		d.moveVersion(log, del, version)
		return
	}
	actx, cancel := context.WithCancel(ctx)
	go func() { // ends with cancel below at the latest
		select {
		case <-snap.Changed():
			cancel()
		case <-actx.Done():
		}
	}()
	res = s.Deliver(actx, d.export(del, snap, version), &progress{out: d.o.Outbox, del: del, done: del.PartsDone})
	changed := false
	select {
	case <-snap.Changed():
		changed = true
	default:
	}
	remove := d.record(ctx, log, name, del, res, attempt, changed)
	cancel()
	snap.Close()
	if remove {
		d.removeExport(log, del.BatchID)
	}
}

// record records the outcome of one attempt and reports whether the
// export is now to be removed (every sink has it and file is not one).
// changed says the export changed during the attempt: an outcome other
// than delivered is then the change's doing, not the sink's, so it counts
// no attempt and the delivery is due at once (an erasure or a refetch
// moves it to the new version next; a purge or a removal never meets a
// delivery still pending).
func (d *Dispatcher) record(ctx context.Context, log zerolog.Logger, name string, del *store.Delivery, res sink.Result, attempt int, changed bool) bool {
	if res.Outcome != sink.Delivered && ctx.Err() != nil {
		log.Info().Str("event", "sink_interrupted").Msg("delivery cut by shutdown; it stays pending")
		return false
	}
	if changed && res.Outcome != sink.Delivered {
		err := d.o.Outbox.RetryDelivery(del.BatchID, name, del.Generation, d.o.Now(), KindChanged,
			"the export changed during the attempt; it is delivered again from its first part, as the new version", false)
		if err != nil {
			d.recordFailed(log, err)
			return false
		}
		log.Info().Str("event", "sink_export_changed").Int("version", del.Version).
			Msg("the export changed during the delivery; the new version is delivered from its first part")
		return false
	}
	switch res.Outcome {
	case sink.Delivered:
		remove, err := d.o.Outbox.Delivered(del.BatchID, name, del.Generation, d.o.Now(), !d.o.KeepExports)
		if err != nil {
			d.recordFailed(log, err)
			return false
		}
		d.o.Observer.SinkOutcome(name, sink.Delivered.String())
		log.Info().Str("event", "sink_delivered").Int("version", del.Version).Msg("export delivered")
		return remove
	case sink.Failed:
		if err := d.o.Outbox.FailDelivery(del.BatchID, name, del.Generation, res.Kind, res.Reason); err != nil {
			d.recordFailed(log, err)
			return false
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
			return false
		}
		d.o.Observer.SinkOutcome(name, sink.Retry.String())
		log.Warn().Str("event", "sink_retry").Str("kind", res.Kind).Str("reason", res.Reason).
			Int64("retry_in_ms", delay.Milliseconds()).Msg("delivery failed; will retry")
	}
	return false
}

// moveVersion handles a delivery whose export in place is of another
// version than the one it was queued for. A newer one (an erasure rewrote
// the export and a crash came before it was recorded) moves every
// undelivered delivery of the batch to it, from the first part. An older
// one cannot come from batchhook (an export restored from a backup older
// than the database): the delivery waits, retried, for an operator.
func (d *Dispatcher) moveVersion(log zerolog.Logger, del *store.Delivery, version int) {
	if version > del.Version {
		n, err := d.o.Outbox.ExportChanged(del.BatchID, version, d.o.Now())
		if err != nil {
			log.Error().Str("event", "sink_record_failed").Err(err).Msg("could not move the delivery to the export's new version; tried again after a backoff")
			// Not due at once again: the next look would re-read the
			// export and fail the same way in a tight loop.
			at := d.o.Now().Add(backoff.Delay(del.Attempts+1, d.o.BackoffBase, d.o.BackoffMax, 0, d.o.Jitter()))
			if rerr := d.o.Outbox.RetryDelivery(del.BatchID, del.Sink, del.Generation, at, KindLocal, "could not move to the export's new version", false); rerr != nil {
				d.recordFailed(log, rerr)
			}
			return
		}
		log.Info().Str("event", "sink_export_changed").Int("version", version).Int("moved", n).
			Msg("the export in place is a newer version; its deliveries start again from their first part")
		return
	}
	reason := fmt.Sprintf("the export in place is version %d, older than the version %d this delivery was queued for (restored from an older backup?); refetch the batch", version, del.Version)
	at := d.o.Now().Add(backoff.Delay(del.Attempts+1, d.o.BackoffBase, d.o.BackoffMax, 0, d.o.Jitter()))
	if err := d.o.Outbox.RetryDelivery(del.BatchID, del.Sink, del.Generation, at, KindLocal, reason, true); err != nil {
		d.recordFailed(log, err)
		return
	}
	log.Error().Str("event", "sink_retry").Str("kind", KindLocal).Str("reason", reason).Msg("delivery cannot start; will retry")
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

// open takes a snapshot of the published export, checked against its
// manifest. When it cannot, it returns a Retry of kind local with the
// reason, and ok=false.
func (d *Dispatcher) open(del *store.Delivery) (*export.Snapshot, sink.Result, bool) {
	snap, ok, err := d.o.Exports.Open(del.BatchID)
	if err != nil {
		return nil, sink.Result{Outcome: sink.Retry, Kind: KindLocal, Reason: fmt.Sprintf("read the published export: %v", err)}, false
	}
	if !ok {
		return nil, sink.Result{Outcome: sink.Retry, Kind: KindLocal,
			Reason: "the published export is missing or does not match its manifest (refetch the batch if it stays so)"}, false
	}
	return snap, sink.Result{}, true
}

// export is the sink's view of the snapshot.
func (d *Dispatcher) export(del *store.Delivery, snap *export.Snapshot, version int) sink.Export {
	m := snap.Manifest
	return sink.Export{
		BatchID: del.BatchID, Status: m.Status, Dir: d.o.Exports.Path(del.BatchID), Manifest: snap.Raw, Items: m.Items,
		ExportedAt: m.ExportedAt, Version: version,
		OpenItems: func() (io.ReadCloser, error) { return snap.Items(), nil },
	}
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
	if err := d.o.Outbox.FileRemovalDone(store.FileRemoval{BatchID: batchID}); err != nil {
		log.Error().Str("event", "export_remove_failed").Err(err).Msg("export removed, but not recorded; done again at next start")
		return
	}
	log.Info().Str("event", "export_removed").Msg("every sink has the export and file is not a configured sink: its directory was removed")
}

// sweepRemovals finishes the removals a crash or a failure left undone.
func (d *Dispatcher) sweepRemovals() {
	rs, err := d.o.Outbox.FileRemovals()
	if err != nil {
		d.o.Logger.Error().Str("event", "export_remove_failed").Err(err).Msg("could not list the exports to remove")
		return
	}
	for _, r := range rs {
		if r.Purge {
			continue // a purged export: the purger deletes it
		}
		d.removeExport(d.o.Logger.With().Str("batch_id", r.BatchID).Logger(), r.BatchID)
	}
}
