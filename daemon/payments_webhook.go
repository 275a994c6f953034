package daemon

import (
	"github.com/batchhook/batchhook/config"
	"github.com/batchhook/batchhook/receiver"
)

// paymentsWebhook is the receiver's payments part, nil when no
// payments secret is configured (the path is then a 404). Call it after
// the metrics exist.
func (d *Daemon) paymentsWebhook() *receiver.PaymentOptions {
	obs := d.metrics.Payments(receiver.PaymentOutcomes) // the series exist (at 0) either way
	if !d.cfg.PaymentsEnabled() {
		return nil
	}
	obs.Served()
	return &receiver.PaymentOptions{
		Path: d.cfg.PaymentsWebhookPath, Secret: d.secrets.current("PAYMENTS_SIGNING_SECRET"),
		DedupFields: d.cfg.PaymentsDedupPaths(), Store: d.store, Observer: obs,
	}
}

// paymentsPath and paymentsFingerprint are the start line's payments
// fields: empty when payments are off.
func paymentsPath(cfg config.Config) string {
	if !cfg.PaymentsEnabled() {
		return ""
	}
	return cfg.PaymentsWebhookPath
}

func paymentsFingerprint(cfg config.Config) string {
	if !cfg.PaymentsEnabled() {
		return ""
	}
	return cfg.PaymentsSigningSecret.Fingerprint()
}
