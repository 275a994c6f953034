// Package erasure erases one person's data on request (LGPD art. 18):
// every item with their CPF in the published exports, their
// CPF in the chunks not yet accepted, quarantined or audit bodies that
// carry it, and the payment events whose body holds it, in the
// store and in the payments day files. It records the erasure (keyed hash only) before touching
// anything, so a crash is resumed at the next start, and every step is
// idempotent: redone on data already clean, it changes nothing.
//
// A rewritten export is a new version: the batch's deliveries not yet
// delivered start again from the first part of it, and a sink still
// sending the old content is stopped before the rewrite returns. Exports
// whose purge or removal is recorded but not done are deleted here.
//
// Staged data (a batch being fetched) is not touched here: the export's
// publish step filters it against every recorded erasure
// (export.Dir.SetErasures), so no export published after the record holds
// the CPF. Sinks are not reached into: the record lists those that already
// received the data.
package erasure

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/cpf"
	"github.com/batchhook/batchhook/store"
)

// ErrInvalidCPF wraps why the value asked for is not a CPF; its text never
// holds the value.
var ErrInvalidCPF = errors.New("invalid CPF")

// Store is what an erasure needs from the store; every method is one
// durable transaction (errors: store.ErrNotFound, store.ErrState, wrapped).
type Store interface {
	ErasureKey() ([]byte, error)
	BeginErasure(hash string, now time.Time) (*store.Erasure, bool, error)
	// RecordRewrite notes a rewritten export in the erasure, with the
	// sinks that had the old version, and moves its undelivered
	// deliveries to the new version, in one transaction.
	RecordRewrite(erasureID, batchID string, items int64, version int, now time.Time) (moved int, noted bool, err error)
	EraseChunks(id string, match func(string) bool, now time.Time) ([]store.ErasedChunk, error)
	EraseBodies(id string, match func(string) bool) ([]store.ErasedBody, error)
	ErasePayments(id string, match func(string) bool, now time.Time) ([]store.ErasedPayment, error)
	FinishErasure(id string, unrewritten []string, now time.Time) (*store.Erasure, error)
	Erasures(pendingOnly bool) ([]store.Erasure, error)
	List(state store.State, limit int, cursor string) ([]store.Batch, string, error)
	// The exports whose deletion is recorded but may not be done: purged
	// (Purge set) or delivered everywhere while file is not a sink.
	FileRemovals() ([]store.FileRemoval, error)
	FileRemovalDone(r store.FileRemoval) error
}

var _ Store = (*store.Store)(nil)

// Exports rewrites and deletes published exports (export.Dir). Erase
// rewrites one as the next version after base (the store's version), calls
// settle under the export's lock whenever an export is in place, and says
// how many items it removed and which version is in place; Purge and
// Remove delete a batch's files (a missing export is not an error).
type Exports interface {
	Erase(batchID string, base int, field string, match func(digits string) bool,
		settle func(items int64, version int) error) (items int64, version int, inPlace bool, err error)
	Purge(batchID string) error
	Remove(batchID string) error
}

// PaymentFiles rewrites the payments day files (the file payment sink's
// EXPORT_DIR/payments/YYYY-MM-DD.ndjson): DropLines removes
// the lines of the given payment events wherever they are, durably, and is
// idempotent (a seq with no line is not an error), because a resumed
// erasure calls it again with every event the erasure dropped.
type PaymentFiles interface {
	DropLines(ctx context.Context, seqs []uint64) (int, error)
}

// Observer counts erasures and erased items for the metrics.
type Observer interface {
	Erased(items int64)
}

// Options configures a Service.
type Options struct {
	Store   Store
	Exports Exports
	// CPFField is the item member holding the CPF (BATCHHOOK_ITEM_CPF_FIELD).
	CPFField string
	Logger   zerolog.Logger
	Now      func() time.Time // nil = time.Now
	Observer Observer         // nil = none
	// PaymentFiles are the payments day files; nil = none (no file
	// payment sink).
	PaymentFiles PaymentFiles
}

// Service runs erasures one at a time.
type Service struct {
	o  Options
	mu sync.Mutex // one erasure at a time: each scans everything
}

// New returns a Service.
func New(o Options) (*Service, error) {
	if o.Store == nil || o.Exports == nil || o.CPFField == "" {
		return nil, errors.New("erasure: Store, Exports and CPFField are required")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Service{o: o}, nil
}

// Erase erases the person whose CPF is raw (either form; check digits
// verified, else ErrInvalidCPF) and returns the finished record.
func (s *Service) Erase(raw string) (*store.Erasure, error) {
	digits, err := cpf.Normalize(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidCPF, err)
	}
	key, err := s.o.Store.ErasureKey()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, _, err := s.o.Store.BeginErasure(cpf.KeyedHash(key, digits), s.o.Now().UTC())
	if err != nil {
		return nil, err
	}
	return s.run(e, key)
}

// Resume finishes the erasures a crash interrupted; the daemon calls it at
// start, before the fetcher runs.
func (s *Service) Resume() ([]store.Erasure, error) {
	pending, err := s.o.Store.Erasures(true)
	if err != nil || len(pending) == 0 {
		return nil, err
	}
	key, err := s.o.Store.ErasureKey()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.Erasure
	for i := range pending {
		e, err := s.run(&pending[i], key)
		if err != nil {
			return out, fmt.Errorf("resume erasure %s: %w", pending[i].ID, err)
		}
		out = append(out, *e)
	}
	return out, nil
}

// List returns every erasure, oldest first.
func (s *Service) List() ([]store.Erasure, error) { return s.o.Store.Erasures(false) }

// run does the erasure e, by its keyed hash only (a resumed erasure has
// nothing else).
func (s *Service) run(e *store.Erasure, key []byte) (*store.Erasure, error) {
	match := func(digits string) bool { return cpf.KeyedHash(key, digits) == e.Hash }
	log := s.o.Logger.With().Str("erasure_id", e.ID).Logger()
	log.Info().Str("event", "erasure_started").Str("previous", e.Previous).Msg("erasing one person's data")
	items, unrewritten, err := s.exports(log, e.ID, match)
	if err != nil {
		return nil, err
	}
	chunks, err := s.o.Store.EraseChunks(e.ID, match, s.o.Now().UTC())
	if err != nil {
		return nil, err
	}
	bodies, err := s.o.Store.EraseBodies(e.ID, match)
	if err != nil {
		return nil, err
	}
	// The payment events: their bodies in the store, then their
	// lines in the day files, before the erasure is done (a crash in
	// between is resumed with the record's full list of events).
	payments, err := s.o.Store.ErasePayments(e.ID, match, s.o.Now().UTC())
	if err != nil {
		return nil, err
	}
	if s.o.PaymentFiles != nil && len(payments) > 0 {
		seqs := make([]uint64, 0, len(payments))
		for _, p := range payments {
			seqs = append(seqs, p.Seq)
		}
		if _, err := s.o.PaymentFiles.DropLines(context.Background(), seqs); err != nil {
			return nil, fmt.Errorf("drop erased payment events from the day files: %w", err)
		}
	}
	done, err := s.o.Store.FinishErasure(e.ID, unrewritten, s.o.Now().UTC())
	if err != nil {
		return nil, err
	}
	if s.o.Observer != nil {
		s.o.Observer.Erased(items)
	}
	var sinks int
	for _, b := range done.Batches {
		sinks += len(b.Sinks)
	}
	log.Info().Str("event", "erasure_done").Bool("touched", done.Touched()).Str("previous", done.Previous).
		Int("batches", len(done.Batches)).Int64("items", items).Int("chunks", len(chunks)).Int("bodies", len(bodies)).Int("payments", len(done.Payments)).
		Int("sink_receipts", sinks).Int("unrewritten", len(unrewritten)).Msg("erasure finished")
	return done, nil
}

// exports rewrites every published export holding the CPF and notes each in
// the record, with the sinks that had received it. Every batch that may
// have an export is tried (a batch whose publish raced the record is still
// fetching, and the export's lock makes the publish finish first; a batch
// refetched after its export was removed too). An export that cannot be
// rewritten does not stop the others: it is logged and returned in
// unrewritten (a store error does stop the erasure).
//
// A rewrite is a new version of the export: while the export's lock is
// still held, one transaction notes the batch with the sinks that had the
// old version and moves its undelivered deliveries to the new one, so no
// sink sends the new version before the old one's receivers are noted. A
// crash right after the swap is caught up when the erasure resumes: the
// version in place is then newer than the store's. Exports whose deletion
// is recorded but maybe not done (a purge or a removal that failed or was
// cut short) are deleted last, so none is left on disk holding the CPF
// while the erasure says done.
func (s *Service) exports(log zerolog.Logger, id string, match func(string) bool) (total int64, unrewritten []string, err error) {
	cursor := ""
	for {
		batches, next, err := s.o.Store.List("", 500, cursor)
		if err != nil {
			return total, nil, fmt.Errorf("list batches: %w", err)
		}
		for i := range batches {
			b := &batches[i]
			if b.State != store.StateExported && b.State != store.StateQueued && b.State != store.StateFetching {
				continue
			}
			n, ok, err := s.export(log, id, b, match)
			if err != nil {
				return total, nil, err
			}
			if !ok {
				unrewritten = append(unrewritten, b.ID)
			}
			total += n
		}
		if next == "" {
			break
		}
		cursor = next
	}
	failed, err := s.finishDeletions(log)
	return total, append(unrewritten, failed...), err
}

// export erases the CPF from the export of b; ok is false when the export
// could not be rewritten (logged). An error is the store's.
func (s *Service) export(log zerolog.Logger, id string, b *store.Batch, match func(string) bool) (int64, bool, error) {
	var (
		storeErr     error
		moved        int
		noted        bool
		version      int
		nothingToAdd = func(items int64, v int) bool { return items == 0 && v <= b.Version() }
	)
	settle := func(items int64, v int) error {
		if nothingToAdd(items, v) { // the usual case: no write
			return nil
		}
		version = v
		moved, noted, storeErr = s.o.Store.RecordRewrite(id, b.ID, items, v, s.o.Now().UTC())
		return storeErr
	}
	n, _, _, err := s.o.Exports.Erase(b.ID, b.Version(), s.o.CPFField, match, settle)
	if storeErr != nil {
		return 0, false, storeErr
	}
	if err != nil {
		log.Error().Str("event", "erasure_export_failed").Str("batch_id", b.ID).Err(err).
			Msg("this export could not be rewritten and may still hold the CPF; erase again once it is fixed")
		return 0, false, nil
	}
	if noted {
		log.Info().Str("event", "export_version_changed").Str("batch_id", b.ID).Int("version", version).Int64("items", n).
			Int("deliveries_moved", moved).Msg("the export was rewritten as a new version; its undelivered deliveries start again from their first part")
	}
	return n, true, nil
}

// finishDeletions deletes the exports whose purge or removal is recorded
// but may not be done, and returns those it could not delete (logged).
func (s *Service) finishDeletions(log zerolog.Logger) (failed []string, err error) {
	rs, err := s.o.Store.FileRemovals()
	if err != nil {
		return failed, err
	}
	for _, r := range rs {
		remove := s.o.Exports.Remove
		if r.Purge {
			remove = s.o.Exports.Purge
		}
		if err := remove(r.BatchID); err != nil {
			log.Error().Str("event", "erasure_export_failed").Str("batch_id", r.BatchID).Err(err).
				Msg("this export is due for deletion but could not be deleted and may still hold the CPF; erase again once it is fixed")
			failed = append(failed, r.BatchID)
			continue
		}
		if err := s.o.Store.FileRemovalDone(r); err != nil {
			return failed, err
		}
	}
	return failed, nil
}
