package submit

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/cpf"
	"github.com/batchhook/batchhook/internal/backoff"
	"github.com/batchhook/batchhook/store"
)

// FinalStatuses are the batch statuses of docs/provider-api.md §3.1. A
// GET that shows any other status (the simulator says "processing") means
// the batch is still in flight.
var FinalStatuses = []string{"completed", "partial", "expired", "failed"}

func isFinal(status string) bool { return slices.Contains(FinalStatuses, status) }

// ErrUnknownBatch is what a StatusReader returns (wrapped) when the
// provider does not know the batch (a 404): after NotFoundGrace of such
// answers the batch is abandoned rather than polled until RETENTION.
var ErrUnknownBatch = errors.New("the provider does not know the batch")

// PollQueue is what the reconciler needs from the store.
type PollQueue interface {
	NextPoll(now time.Time) (*store.Batch, time.Time, error)
	PollLater(id string, at time.Time, reason string, now time.Time) error
	AbandonAwaiting(id, reason string, now time.Time) error
	Record(n store.Notification) (bool, error)
	PollWakeups() <-chan struct{}
}

var _ PollQueue = (*store.Store)(nil)

// StatusReader reads a batch's status from the provider; the fetcher's
// client implements it.
type StatusReader interface {
	Status(ctx context.Context, batchID string) (string, error)
}

// ReconcileObserver is told of batches the reconciler found final.
type ReconcileObserver interface {
	Reconciled()
}

// ReconcilerOptions configures a Reconciler.
type ReconcilerOptions struct {
	Queue  PollQueue
	Reader StatusReader
	Logger zerolog.Logger
	// Retention: a batch not final this long after its submission is
	// abandoned (the provider keeps results 7 days).
	Retention time.Duration
	// NotFoundGrace: a batch the provider still does not know this long
	// after its submission (or tracking) is abandoned; 0 = only RETENTION.
	NotFoundGrace time.Duration
	BackoffBase   time.Duration
	BackoffMax    time.Duration
	IdlePoll      time.Duration                                   // 0 = 1m
	Now           func() time.Time                                // nil = time.Now
	Sleep         func(ctx context.Context, d time.Duration) bool // nil = a timer
	Jitter        func() float64                                  // nil = math/rand/v2
	Observer      ReconcileObserver                               // nil = none
}

// Reconciler polls submitted and tracked batches whose batch.completed did
// not come, and records the final ones as if notified (source poll).
type Reconciler struct {
	o   ReconcilerOptions
	log zerolog.Logger
}

// NewReconciler checks o and returns a Reconciler.
func NewReconciler(o ReconcilerOptions) (*Reconciler, error) {
	if o.Queue == nil || o.Reader == nil {
		return nil, errors.New("submit: Queue and Reader are required")
	}
	if o.Retention <= 0 || o.BackoffBase <= 0 || o.BackoffMax < o.BackoffBase {
		return nil, errors.New("submit: bad Retention or backoff")
	}
	if o.IdlePoll <= 0 {
		o.IdlePoll = time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = sleep
	}
	if o.Jitter == nil {
		o.Jitter = rand.Float64
	}
	if o.Observer == nil {
		o.Observer = nopObserver{}
	}
	return &Reconciler{o: o, log: o.Logger}, nil
}

// Run polls due batches until ctx ends.
func (r *Reconciler) Run(ctx context.Context) error {
	for ctx.Err() == nil {
		wait, err := r.Step(ctx)
		if err != nil {
			r.log.Error().Str("event", "reconcile_store_error").Err(err).Msg("reconciler could not use the store; retrying")
			wait = r.o.BackoffBase
		}
		if wait > 0 {
			waitOrWake(ctx, r.o.Sleep, wait, r.o.Queue.PollWakeups(), nil)
		}
	}
	return nil
}

// Step polls the batch that is due soonest, if due, and returns how long
// to wait before the next step (0 = at once).
func (r *Reconciler) Step(ctx context.Context) (time.Duration, error) {
	now := r.o.Now()
	b, next, err := r.o.Queue.NextPoll(now)
	if err != nil {
		return 0, err
	}
	if b == nil {
		if next.IsZero() {
			return r.o.IdlePoll, nil
		}
		return min(max(next.Sub(now), time.Millisecond), r.o.IdlePoll), nil
	}
	err = r.poll(ctx, b, now)
	if errors.Is(err, store.ErrState) {
		// Its batch.completed came while it was being polled: the batch
		// is queued, and there is nothing left to do here.
		return 0, nil
	}
	return 0, err
}

func (r *Reconciler) poll(ctx context.Context, b *store.Batch, now time.Time) error {
	log := r.log.With().Str("batch_id", b.ID).Str("state", string(b.State)).Logger()
	start := b.SubmittedAt
	if start.IsZero() {
		start = b.CreatedAt
	}
	if now.Sub(start) > r.o.Retention {
		reason := fmt.Sprintf("retention elapsed: not final within %s of %s (no batch.completed, and polls did not find it final)",
			r.o.Retention, start.UTC().Format(time.RFC3339))
		log.Error().Str("event", "batch_abandoned").Str("reason", reason).Msg("batch abandoned")
		return r.o.Queue.AbandonAwaiting(b.ID, reason, now)
	}
	status, err := r.o.Reader.Status(ctx, b.ID)
	if ctx.Err() != nil {
		return nil // shutting down: the poll entry stays, the next run repeats it
	}
	delay := backoff.Delay(b.PollAttempts+1, r.o.BackoffBase, r.o.BackoffMax, 0, r.o.Jitter())
	if errors.Is(err, ErrUnknownBatch) && r.o.NotFoundGrace > 0 && now.Sub(start) > r.o.NotFoundGrace {
		reason := fmt.Sprintf("%v; still not found %s after it was submitted or tracked (BATCHHOOK_NOT_FOUND_GRACE)",
			err, r.o.NotFoundGrace)
		log.Error().Str("event", "batch_abandoned").Str("reason", reason).Msg("batch abandoned")
		return r.o.Queue.AbandonAwaiting(b.ID, reason, now)
	}
	if err != nil {
		log.Warn().Str("event", "poll_failed").Err(err).Int("attempt", b.PollAttempts+1).Int64("retry_in_ms", delay.Milliseconds()).
			Msg("could not read the batch's status; polling again later")
		return r.o.Queue.PollLater(b.ID, now.Add(delay), "poll: "+err.Error(), now)
	}
	if !isFinal(status) {
		log.Debug().Str("event", "poll_not_final").Str("status", shownStatus(status)).Int64("retry_in_ms", delay.Milliseconds()).Msg("batch not final yet")
		return r.o.Queue.PollLater(b.ID, now.Add(delay), "", now)
	}
	created, err := r.o.Queue.Record(store.Notification{Event: "batch.completed", BatchID: b.ID, Status: status,
		ReceivedAt: now, Source: store.SourcePoll})
	if err != nil {
		return err
	}
	if created {
		r.o.Observer.Reconciled()
		log.Info().Str("event", "batch_reconciled").Str("status", status).Int("polls", b.PollAttempts+1).
			Msg("no batch.completed came; the poll found the batch final and queued it")
	}
	return nil
}

// shownStatus is a status that is not one of the final four as it may
// appear in a log line: the provider wrote it, so CPF-shaped digits are
// masked and it is cut to 64 bytes.
func shownStatus(status string) string {
	s := cpf.Scrub(status)
	if len(s) > 64 {
		s = strings.ToValidUTF8(s[:64], "") + "…"
	}
	return s
}
