package daemon

import (
	"context"
	"errors"
	"time"
)

// backfillStateIndex is the loop that completes the store's by-state
// index for the records an earlier version wrote (once, after the first
// start of this version on such a database): in the background, so the
// daemon is ready at once; lists by state read the records until it is
// done. It logs when it starts and ends, and nothing when there was
// nothing to do.
func (d *Daemon) backfillStateIndex(ctx context.Context) error {
	done, err := d.store.StateIndexComplete()
	if err != nil || done {
		return nil // a failing store is reported by its writes and readiness
	}
	log := d.log.With().Str("component", "store").Logger()
	log.Info().Str("event", "state_index_backfill_started").
		Msg("indexing the stored batches by state (once, in the background): lists by state read every record until it is done")
	start := time.Now()
	n, err := d.store.BackfillStateIndex(ctx)
	switch {
	case errors.Is(err, context.Canceled):
		log.Info().Str("event", "state_index_backfill_stopped").Int("batches", n).
			Msg("the by-state index is not complete yet; the next start goes on where this one stopped")
		return nil
	case err != nil:
		log.Error().Str("event", "state_index_backfill_failed").Int("batches", n).Str("error", err.Error()).
			Msg("the by-state index could not be completed; lists by state read every record; the next start tries again")
		return nil
	}
	log.Info().Str("event", "state_index_backfill_done").Int("batches", n).Int64("took_ms", time.Since(start).Milliseconds()).
		Msg("the stored batches are indexed by state")
	return nil
}
