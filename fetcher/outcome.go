package fetcher

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/internal/backoff"
	"github.com/batchhook/batchhook/store"
)

// A failed store transition (Finish, Retry, Restart) is retried in place,
// from storeRetryBase doubling up to storeRetryMax, until it succeeds or
// the fetcher stops: given up, it would leave the batch fetching with no
// due entry, never leased again until a restart.
const (
	storeRetryBase = 50 * time.Millisecond
	storeRetryMax  = 30 * time.Second
)

// exported records the batch as exported at path. already says the export
// was found in place without fetching: whatever is staged then is a
// leftover (the old export a crash left in staging after a swap, or a
// fetch that a crash cut short) and is removed.
func (f *Fetcher) exported(ctx context.Context, log zerolog.Logger, b *store.Batch, path string, version int, already bool) {
	if already && !f.leftoverGone(ctx, log, b) {
		return
	}
	if !f.persist(ctx, log, "finish_failed", func() error {
		return f.o.Queue.Finish(b.ID, store.StateExported, path, "", version, f.o.Now())
	}) {
		return
	}
	f.o.Observer.BatchFinished(string(store.StateExported), b.Checkpoint.Items)
	log.Info().Str("event", "batch_exported").Str("status", b.Notification.Status).Int64("items", b.Checkpoint.Items).
		Int64("pages", b.Checkpoint.Pages).Int("version", version).Str("path", path).Bool("already_published", already).Msg("batch exported")
}

// giveUp ends a batch that cannot be fetched (retention over, the provider
// refused or lost it). A complete export in place always wins: a refetch
// that cannot complete leaves the batch exported with its previous export
// and the reason as last_error. Otherwise the batch is abandoned. Its
// staging is removed either way: nothing will publish it.
func (f *Fetcher) giveUp(ctx context.Context, log zerolog.Logger, b *store.Batch, reason string) {
	path, _, _, ok, err := f.o.Stager.Published(b.ID)
	if err != nil {
		// Never abandon a batch without knowing whether its export is there.
		f.retry(ctx, log, b, &Error{Kind: KindLocal, Err: fmt.Errorf("check the export in place (before giving up: %s): %w", reason, err)})
		return
	}
	if !f.leftoverGone(ctx, log, b) {
		return
	}
	if ok {
		if !f.persist(ctx, log, "finish_failed", func() error {
			return f.o.Queue.Finish(b.ID, store.StateExported, path, reason, 0, f.o.Now())
		}) {
			return
		}
		f.o.Observer.BatchFinished(string(store.StateExported), 0)
		log.Error().Str("event", "refetch_failed").Str("reason", reason).Str("path", path).
			Msg("the refetch cannot complete; the previous export stays in place")
		return
	}
	if !f.persist(ctx, log, "finish_failed", func() error {
		return f.o.Queue.Finish(b.ID, store.StateAbandoned, "", reason, 0, f.o.Now())
	}) {
		return
	}
	f.o.Observer.BatchFinished(string(store.StateAbandoned), 0)
	log.Error().Str("event", "batch_abandoned").Str("reason", reason).Msg("batch abandoned")
}

// fail applies the retry policy to a classified failure.
func (f *Fetcher) fail(ctx context.Context, log zerolog.Logger, b *store.Batch, err error) {
	kind, _ := kindOf(err)
	f.o.Observer.FetchFailed(string(kind))
	switch kind {
	case KindRejected:
		f.giveUp(ctx, log, b, err.Error())
		return
	case KindNotFound:
		if f.o.Now().Sub(b.Notification.ReceivedAt) > f.o.NotFoundGrace {
			f.giveUp(ctx, log, b, fmt.Sprintf("%v; still not found %s after receipt (BATCHHOOK_NOT_FOUND_GRACE)", err, f.o.NotFoundGrace))
			return
		}
	}
	f.retry(ctx, log, b, err)
}

// retry puts the batch back in the queue after the backoff. After a
// failure that discredits the staged pages (a cursor cycle, too many pages
// or items) they are removed and the checkpoint reset with it.
func (f *Fetcher) retry(ctx context.Context, log zerolog.Logger, b *store.Batch, err error) {
	kind, retryAfter := kindOf(err)
	now := f.o.Now()
	delay := backoff.Delay(b.FetchAttempts+1, f.o.BackoffBase, f.o.BackoffMax, retryAfter, f.o.Jitter())
	at := now.Add(delay)
	var fe *Error
	restart := errors.As(err, &fe) && fe.restart
	op := func() error { return f.o.Queue.Retry(b.ID, at, string(kind), err.Error(), true, now) }
	if restart {
		f.discard(log, b)
		op = func() error { return f.o.Queue.Restart(b.ID, at, string(kind), err.Error(), now) }
	}
	if !f.persist(ctx, log, "requeue_failed", op) {
		return
	}
	ev := log.Warn()
	name := "fetch_retry"
	switch kind {
	case KindAuth:
		ev, name = log.Error(), "api_key_rejected"
	case KindProtocol, KindLocal:
		ev = log.Error()
	}
	ev.Str("event", name).Str("kind", string(kind)).Err(err).Int("attempt", b.FetchAttempts+1).
		Int64("retry_in_ms", delay.Milliseconds()).Bool("from_first_page", restart).Msg("fetch failed; will retry")
}

// discard removes the batch's staging; a failure is logged, not fatal (the
// next fetch of the batch cuts or replaces what is staged).
func (f *Fetcher) discard(log zerolog.Logger, b *store.Batch) {
	if err := f.o.Stager.Discard(b.ID); err != nil {
		log.Warn().Str("event", "staging_remove_failed").Err(err).Msg("could not remove the batch's staged results")
	}
}

// leftoverGone removes what is staged for a batch about to end (a fetch
// cut short, or the old export a replace moved there and could not
// delete) and reports whether it is gone. When it is not, the batch is put
// back in the queue with the reason instead of ending: nothing would look
// at its staging again, and it holds personal data (an erasure does not
// rewrite staging). The next attempt finds the export in place and tries
// again.
func (f *Fetcher) leftoverGone(ctx context.Context, log zerolog.Logger, b *store.Batch) bool {
	err := f.o.Stager.Discard(b.ID)
	if err == nil {
		return true
	}
	f.retry(ctx, log, b, &Error{Kind: KindLocal, Err: fmt.Errorf("remove what is staged for the batch before it ends: %w", err)})
	return false
}

// persist runs a store transition until it succeeds, retrying in place
// with backoff; it gives up only when ctx ends (the batch stays fetching
// and the next start releases it) or when the store says the transition
// can never succeed (ErrState, ErrNotFound) or has failed closed (ErrFailed:
// the daemon exits and the next start releases it). It reports success.
func (f *Fetcher) persist(ctx context.Context, log zerolog.Logger, event string, op func() error) bool {
	for attempt := 1; ; attempt++ {
		err := op()
		if err == nil {
			return true
		}
		if errors.Is(err, store.ErrState) || errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrFailed) || ctx.Err() != nil {
			log.Error().Str("event", event).Err(err).Int("attempt", attempt).
				Msg("could not record the batch's next state; it is released at next start")
			return false
		}
		wait := backoff.Delay(attempt, storeRetryBase, storeRetryMax, 0, f.o.Jitter())
		log.Error().Str("event", event).Err(err).Int("attempt", attempt).Int64("retry_in_ms", wait.Milliseconds()).
			Msg("could not record the batch's next state; retrying")
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			log.Error().Str("event", event).Err(err).Msg("stopping before the batch's next state was recorded; it is released at next start")
			return false
		case <-timer.C:
		}
	}
}
