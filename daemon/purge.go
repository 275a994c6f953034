package daemon

import (
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

func (f exportFiles) Manifests(ids []string) ([]purge.Manifest, error) {
	ms, oks, err := f.dir.Manifests(ids)
	if err != nil {
		return nil, err
	}
	out := make([]purge.Manifest, len(ms))
	for i, m := range ms {
		out[i] = purge.Manifest{SHA256: m.SHA256, Items: m.Items, ExportedAt: m.ExportedAt, OK: oks[i]}
	}
	return out, nil
}

func (f exportFiles) Purge(ids []string) []error { return f.dir.PurgeAll(ids) }
