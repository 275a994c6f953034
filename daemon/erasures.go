package daemon

import (
	"github.com/batchhook/batchhook/lifecycle/erasure"
)

// erasures makes the erasure key on the first start, makes every publish
// leave out the CPFs erased so far, and finishes the erasures a crash
// interrupted: after recoverExports (a rewrite cut short is gone) and
// before the fetcher (so no worker publishes meanwhile). A resumed erasure
// is logged like any other (erasure_started, erasure_done).
func (d *Daemon) erasures() (*erasure.Service, error) {
	if _, err := d.store.ErasureKey(); err != nil {
		return nil, err
	}
	d.exports.SetErasures(d.cfg.ItemCPFField, d.store.ErasureMatcher)
	o := erasure.Options{Store: d.store, Exports: d.exports, CPFField: d.cfg.ItemCPFField,
		Logger: d.log.With().Str("component", "erasure").Logger(), Observer: d.metrics.Erasures()}
	if d.paymentFiles != nil { // never a typed nil in the interface
		o.PaymentFiles = d.paymentFiles
	}
	svc, err := erasure.New(o)
	if err != nil {
		return nil, err
	}
	if _, err := svc.Resume(); err != nil {
		// Not fatal: the daemon must keep taking webhooks. The erasure
		// stays pending; the next start or erase of the CPF resumes it.
		d.log.Error().Str("component", "erasure").Str("event", "erasure_failed").Err(err).
			Msg("an interrupted erasure could not be finished at start; it stays pending")
	}
	return svc, nil
}
