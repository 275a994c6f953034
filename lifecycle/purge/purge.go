// Package purge is the purger: the loop that keeps personal data only as
// long as the operator decides. Every PURGE_INTERVAL, and at
// start, one pass deletes the exports older than EXPORT_RETENTION (the
// batch becomes purged, with a tombstone), reduces the records of batches
// finished more than RECORD_RETENTION ago to tombstones, and deletes the
// quarantined and audited raw bodies and the CPFs of failed and
// submit_unknown chunks older than RECORD_RETENTION.
//
// Crash safety comes from the order: the tombstone and the intent to
// delete the files are committed first (store.PurgeExports), the files are
// deleted next, the intent is cleared last. Exports go through this in
// groups of up to TxLimit: one commit for the group's tombstones, the
// group's files, one commit to clear the group's intents. Every pass begins by finishing
// the deletions a crash interrupted, so no export is ever half-deleted
// without its tombstone and none is orphaned.
package purge

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/store"
)

// Store is what the purger needs from the store. Every method is one short
// transaction; PurgeExports refuses a batch with store.ErrDeliveryPending
// while a sink still has the export to deliver and store.ErrState when the
// batch left the exported state (a refetch came first).
type Store interface {
	ExportPurgeCandidates(before time.Time, after string, limit int) ([]store.Batch, string, error)
	PurgeExports(reqs []store.ExportPurgeRequest, now time.Time) ([]store.ExportPurgeOutcome, error)
	FileRemovals() ([]store.FileRemoval, error)
	FileRemovalsDone(rs []store.FileRemoval) error
	PurgeRecords(before time.Time, after string, limit int, now time.Time) (int, string, error)
	PurgeQuarantine(before time.Time, after string, limit int) (int, string, error)
	PurgeAudit(before time.Time, after string, limit int) (int, string, error)
	PurgeRejected(before time.Time, after string, limit int) (int, string, error)
	PurgeChunkCPFs(before time.Time, after string, limit int) (int, string, error)
	// The payment log (payments.go).
	PurgePaymentBodies(before time.Time, limit int, now time.Time) (dropped int, more, held bool, err error)
	PaymentDayPending(sink string, from, to time.Time) (bool, error)
}

var _ Store = (*store.Store)(nil)

// Files is the export root. Errors are the file system's, wrapped.
type Files interface {
	// Manifests reads the published manifest of each batch of ids.
	Manifests(ids []string) ([]Manifest, error)
	// Purge deletes everything kept for each batch of ids (published,
	// staged, set aside), with one sync of the export root for them all;
	// a missing export is not an error. errs[i] is ids[i]'s, nil once its
	// deletion is durable.
	Purge(ids []string) (errs []error)
}

// Manifest is what the purger keeps of a published export's manifest in
// the batch's tombstone. OK is false when the batch has none.
type Manifest struct {
	SHA256     string
	Items      int64
	ExportedAt time.Time
	OK         bool
}

// Observer counts what a pass deleted, by kind (export, record,
// quarantine, audit, chunk_cpfs).
type Observer interface {
	Purged(kind string, n int)
}

// The kinds counted by Observer and logged by records_purged.
const (
	KindExport     = "export"
	KindRecord     = "record"
	KindQuarantine = "quarantine"
	KindAudit      = "audit"
	KindChunkCPFs  = "chunk_cpfs"
	// KindRejected counts rejected (401) deliveries kept for verify.
	KindRejected = "rejected"
	// KindPaymentBody counts payment event bodies reduced to tombstones,
	// KindPaymentDayFile the payments day files deleted (payments.go).
	KindPaymentBody    = "payment_body"
	KindPaymentDayFile = "payment_day_file"
)

// Kinds lists every kind (metrics start each series at 0).
var Kinds = []string{KindExport, KindRecord, KindQuarantine, KindAudit, KindChunkCPFs, KindRejected, KindPaymentBody, KindPaymentDayFile}

// Options configure a Purger. A retention of 0 keeps that data for ever.
type Options struct {
	Store           Store
	Files           Files
	Logger          zerolog.Logger
	Observer        Observer
	ExportRetention time.Duration
	RecordRetention time.Duration
	Interval        time.Duration
	// TxLimit bounds the entries one transaction examines (default 500),
	// so that the receiver's commits never wait long behind a pass.
	TxLimit int
	Now     func() time.Time
	// PaymentDays are the payments day files; nil when there are none
	// to purge.
	PaymentDays PaymentDayFiles
}

// Purger runs the passes. Run owns the loop; Pass is one pass.
type Purger struct {
	o Options
}

// New checks o and returns a purger.
func New(o Options) (*Purger, error) {
	switch {
	case o.Store == nil || o.Files == nil:
		return nil, errors.New("purge: a store and an export root are required")
	case o.ExportRetention < 0 || o.RecordRetention < 0:
		return nil, errors.New("purge: a retention must not be negative")
	case o.Interval <= 0:
		return nil, errors.New("purge: the interval must be positive")
	}
	if o.TxLimit <= 0 {
		o.TxLimit = 500
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Observer == nil {
		o.Observer = nopObserver{}
	}
	return &Purger{o: o}, nil
}

type nopObserver struct{}

func (nopObserver) Purged(string, int) {}

// Run makes a pass at once and then every Interval until ctx ends. A
// failed pass is logged and tried again at the next tick (a failed store
// stops the daemon on its own). It returns nil when ctx ends.
func (p *Purger) Run(ctx context.Context) error {
	t := time.NewTicker(p.o.Interval)
	defer t.Stop()
	for {
		began := time.Now()
		r, err := p.Pass(ctx, p.o.Now())
		switch {
		case err != nil && ctx.Err() == nil:
			p.o.Logger.Error().Str("event", "purge_failed").Err(err).Msg("purge pass failed; retried at the next interval")
		case err == nil:
			p.logPass(r, time.Since(began))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Result counts what one pass deleted, by kind; Blocked counts the exports
// due but kept because a delivery of them is pending; Undeleted lists the
// purged batches whose files could not be deleted (retried next pass).
type Result struct {
	Purged    map[string]int
	Blocked   int
	Undeleted []string
	// FilesTook is the time spent deleting exports' files: on a file
	// system that discards freed blocks at each journal commit, most of
	// a large pass.
	FilesTook time.Duration
}

// Pass finishes interrupted deletions, then purges what is due at now. An
// export whose files cannot be deleted does not hold up the rest of the
// pass: its deletion stays recorded, is logged, and the pass returns an
// error naming it once everything else is done.
func (p *Purger) Pass(ctx context.Context, now time.Time) (r Result, err error) {
	r = Result{Purged: map[string]int{}}
	defer func() {
		if err == nil && len(r.Undeleted) > 0 {
			err = fmt.Errorf("delete the purged exports of %d batches (%s): retried at the next pass", len(r.Undeleted), strings.Join(r.Undeleted, ", "))
		}
	}()
	if err := p.finishRemovals(ctx, &r); err != nil {
		return r, err
	}
	if p.o.ExportRetention > 0 {
		if err := p.purgeExports(ctx, now, &r); err != nil {
			return r, err
		}
	}
	if p.o.RecordRetention > 0 {
		if err := p.purgeRecords(ctx, now, &r); err != nil {
			return r, err
		}
		if err := p.purgePaymentBodies(ctx, now, &r); err != nil {
			return r, err
		}
	}
	if p.o.ExportRetention > 0 && p.o.PaymentDays != nil {
		if err := p.purgePaymentDays(ctx, now, &r); err != nil {
			return r, err
		}
	}
	return r, nil
}

// logPass says how long a pass that deleted or kept something took: the
// pass shares the store with the receiver, and its time is what an
// operator compares with the acks' latency.
func (p *Purger) logPass(r Result, took time.Duration) {
	total := 0
	for _, n := range r.Purged {
		total += n
	}
	if total == 0 && r.Blocked == 0 {
		return
	}
	d := zerolog.Dict()
	for _, k := range Kinds {
		if n := r.Purged[k]; n > 0 {
			d = d.Int(k, n)
		}
	}
	p.o.Logger.Info().Str("event", "purge_pass_finished").Int64("took_ms", took.Milliseconds()).
		Int64("files_ms", r.FilesTook.Milliseconds()).Dict("purged", d).Int("blocked", r.Blocked).
		Msg("purge pass finished")
}

// finishRemovals deletes the files of purged batches whose deletion a crash
// (or a failed removal) left unfinished, TxLimit at a time.
func (p *Purger) finishRemovals(ctx context.Context, r *Result) error {
	rs, err := p.o.Store.FileRemovals()
	if err != nil {
		return err
	}
	var ids []string
	for _, rm := range rs {
		if rm.Purge { // the others are exports every sink has: the dispatcher removes them
			ids = append(ids, rm.BatchID)
		}
	}
	for len(ids) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		group := ids[:min(len(ids), p.o.TxLimit)]
		if err := p.removalsDone(group, p.removeFiles(group, r)); err != nil {
			return err
		}
		ids = ids[len(group):]
	}
	return nil
}

// removeFiles deletes the files of the purged batches ids and returns the
// indexes in ids of those whose deletion is durable. A deletion that fails
// is logged and listed in r: it stays recorded, for the next pass.
func (p *Purger) removeFiles(ids []string, r *Result) (gone []int) {
	began := time.Now()
	errs := p.o.Files.Purge(ids)
	r.FilesTook += time.Since(began)
	for i, err := range errs {
		if err != nil {
			p.undeleted(ids[i], err, r)
			continue
		}
		gone = append(gone, i)
	}
	return gone
}

// removalsDone records, in one commit, that the files of the purged
// batches ids[i] for each i in gone are deleted.
func (p *Purger) removalsDone(ids []string, gone []int) error {
	done := make([]store.FileRemoval, len(gone))
	for j, i := range gone {
		done[j] = store.FileRemoval{BatchID: ids[i], Purge: true}
	}
	return p.o.Store.FileRemovalsDone(done)
}

// undeleted logs and lists in r a purged batch whose files could not be
// deleted: its removal stays recorded, for the next pass.
func (p *Purger) undeleted(id string, err error, r *Result) {
	p.o.Logger.Error().Str("event", "purge_failed").Str("batch_id", id).Err(err).
		Msg("could not delete a purged export; the other purges go on and this one is retried at the next pass")
	r.Undeleted = append(r.Undeleted, id)
}
