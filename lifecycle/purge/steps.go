package purge

import (
	"context"
	"errors"
	"time"

	"github.com/batchhook/batchhook/store"
)

// purgeExports deletes the exports exported at or before now -
// EXPORT_RETENTION. The export date is the earlier of the record's finish
// and the manifest's exported_at (a crash between publishing and recording
// makes the record later). An export a sink still has pending is kept
// (DECISIONS 23); one whose deliveries ended failed is deleted and the
// sinks that never had it are logged. Each group of candidates (TxLimit)
// is purged in one transaction, its files deleted after that commit (with
// one sync of the export root for the group), and their removal recorded
// in one more.
func (p *Purger) purgeExports(ctx context.Context, now time.Time, r *Result) error {
	before := now.Add(-p.o.ExportRetention)
	after := ""
	for {
		batches, next, err := p.o.Store.ExportPurgeCandidates(before, after, p.o.TxLimit)
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := p.purgeExportGroup(batches, before, now, r); err != nil {
			return err
		}
		if next == "" {
			return nil
		}
		after = next
	}
}

// purgeExportGroup purges the due exports among batches: their tombstones
// and file removals in one commit, then their files, then their removals
// recorded done in one commit.
func (p *Purger) purgeExportGroup(batches []store.Batch, before, now time.Time, r *Result) error {
	ids := make([]string, len(batches))
	for i := range batches {
		ids[i] = batches[i].ID
	}
	ms, err := p.o.Files.Manifests(ids)
	if err != nil {
		return err
	}
	reqs := make([]store.ExportPurgeRequest, 0, len(batches))
	for i := range batches {
		ep, due := exportPurge(&batches[i], ms[i], before)
		if due {
			reqs = append(reqs, store.ExportPurgeRequest{ID: batches[i].ID, Purge: ep})
		}
	}
	if len(reqs) == 0 {
		return nil
	}
	outs, err := p.o.Store.PurgeExports(reqs, now)
	if err != nil {
		return err
	}
	purged := make([]string, 0, len(reqs)) // the purged batches' ids,
	at := make([]int, 0, len(reqs))        // and their indexes in reqs and outs
	for i, o := range outs {
		switch {
		case errors.Is(o.Err, store.ErrDeliveryPending):
			r.Blocked++
			p.o.Logger.Debug().Str("event", "export_purge_waiting").Str("batch_id", reqs[i].ID).
				Msg("export due for purge kept: a delivery of it is pending")
			continue
		case errors.Is(o.Err, store.ErrState), errors.Is(o.Err, store.ErrNotFound):
			continue // refetched (or erased) since the candidates were read
		case o.Err != nil:
			return o.Err
		}
		purged, at = append(purged, reqs[i].ID), append(at, i)
	}
	if len(purged) == 0 {
		return nil
	}
	gone := p.removeFiles(purged, r)
	if err := p.removalsDone(purged, gone); err != nil {
		return err
	}
	for _, j := range gone {
		p.logExportPurged(reqs[at[j]], outs[at[j]].Batch, r)
	}
	return nil
}

// exportPurge is what the tombstone keeps of b's export, by its manifest
// m, and whether the export is due.
func exportPurge(b *store.Batch, m Manifest, before time.Time) (store.ExportPurge, bool) {
	ep := store.ExportPurge{ExportedAt: b.FinishedAt, ManifestItems: b.Checkpoint.Items}
	if m.OK {
		ep.ManifestSHA256, ep.ManifestItems = m.SHA256, m.Items
		if !m.ExportedAt.IsZero() && (ep.ExportedAt.IsZero() || m.ExportedAt.Before(ep.ExportedAt)) {
			ep.ExportedAt = m.ExportedAt
		}
	}
	if ep.ExportedAt.IsZero() {
		ep.ExportedAt = b.UpdatedAt
	}
	// Finished later than it was created: not due yet.
	return ep, !ep.ExportedAt.After(before)
}

func (p *Purger) logExportPurged(req store.ExportPurgeRequest, purged *store.Batch, r *Result) {
	r.Purged[KindExport]++
	p.o.Observer.Purged(KindExport, 1)
	ep := req.Purge
	ev := p.o.Logger.Info().Str("event", "export_purged").Str("batch_id", req.ID).
		Time("exported_at", ep.ExportedAt).Int64("items", ep.ManifestItems)
	msg := "export deleted after BATCHHOOK_EXPORT_RETENTION; the batch is purged"
	if never := purged.Tombstone.NeverDelivered; len(never) > 0 {
		ev = p.o.Logger.Warn().Str("event", "export_purged").Str("batch_id", req.ID).
			Time("exported_at", ep.ExportedAt).Int64("items", ep.ManifestItems).Strs("sinks_never_delivered", never)
		msg = "export deleted after BATCHHOOK_EXPORT_RETENTION although these sinks never received it (their delivery failed)"
	}
	ev.Msg(msg)
}

// purgeRecords reduces records, and deletes raw bodies and chunk CPFs, at
// or before now - RECORD_RETENTION, one bounded transaction at a time.
func (p *Purger) purgeRecords(ctx context.Context, now time.Time, r *Result) error {
	before := now.Add(-p.o.RecordRetention)
	steps := []struct {
		kind string
		run  func(after string) (int, string, error)
	}{
		{KindRecord, func(after string) (int, string, error) {
			return p.o.Store.PurgeRecords(before, after, p.o.TxLimit, now)
		}},
		{KindQuarantine, func(after string) (int, string, error) { return p.o.Store.PurgeQuarantine(before, after, p.o.TxLimit) }},
		{KindAudit, func(after string) (int, string, error) { return p.o.Store.PurgeAudit(before, after, p.o.TxLimit) }},
		{KindChunkCPFs, func(after string) (int, string, error) { return p.o.Store.PurgeChunkCPFs(before, after, p.o.TxLimit) }},
		{KindRejected, func(after string) (int, string, error) { return p.o.Store.PurgeRejected(before, after, p.o.TxLimit) }},
	}
	total := 0
	for _, s := range steps {
		after := ""
		for {
			if err := ctx.Err(); err != nil {
				return err
			}
			n, next, err := s.run(after)
			if err != nil {
				return err
			}
			if n > 0 {
				r.Purged[s.kind] += n
				total += n
				p.o.Observer.Purged(s.kind, n)
			}
			if next == "" {
				break
			}
			after = next
		}
	}
	if total > 0 {
		p.o.Logger.Info().Str("event", "records_purged").Int(KindRecord, r.Purged[KindRecord]).
			Int(KindQuarantine, r.Purged[KindQuarantine]).Int(KindAudit, r.Purged[KindAudit]).
			Int(KindChunkCPFs, r.Purged[KindChunkCPFs]).Int(KindRejected, r.Purged[KindRejected]).Time("before", before).
			Msg("personal data older than BATCHHOOK_RECORD_RETENTION deleted; batch records reduced to tombstones")
	}
	return nil
}
