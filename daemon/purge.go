package daemon

import (
	"time"

	"github.com/batchhook/batchhook/export"
	"github.com/batchhook/batchhook/lifecycle/purge"
)

// purger wires the purge loop to the store and the export
// root, with the retentions of the configuration.
func (d *Daemon) purger() (*purge.Purger, error) {
	d.metrics.InitPurged(purge.Kinds)
	o := purge.Options{
		Store: d.store, Files: exportFiles{d.exports}, Observer: d.metrics,
		Logger:          d.log.With().Str("component", "purger").Logger(),
		ExportRetention: d.cfg.ExportRetention, RecordRetention: d.cfg.RecordRetention, Interval: d.cfg.PurgeInterval,
	}
	if d.paymentFiles != nil { // never a typed nil in the interface
		o.PaymentDays = d.paymentFiles
	}
	return purge.New(o)
}

// exportFiles adapts export.Dir to purge.Files, so the purge package needs
// no knowledge of the manifest's layout.
type exportFiles struct{ dir *export.Dir }

func (f exportFiles) Manifest(batchID string) (string, int64, time.Time, bool, error) {
	m, ok, err := f.dir.Manifest(batchID)
	return m.SHA256, m.Items, m.ExportedAt, ok, err
}

func (f exportFiles) Purge(ids []string) []error { return f.dir.PurgeAll(ids) }
