package daemon

import (
	"context"

	"github.com/batchhook/batchhook/store"
)

// releaseMapped keeps the database's pages from piling up in the daemon's
// resident memory (store.ReleaseMapped): without it RSS grows with every
// batch ever recorded. It runs until ctx ends.
func (d *Daemon) releaseMapped(ctx context.Context) error {
	d.store.RunReleaseMapped(ctx, store.ReleaseInterval, func(err error) {
		d.log.Warn().Str("component", "store").Str("event", "mapped_release_failed").Err(err).
			Msg("could not release the database's mapped pages; memory use grows with the database until this works")
	})
	return nil
}
