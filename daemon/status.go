package daemon

import (
	"github.com/batchhook/batchhook/admin"
	"github.com/batchhook/batchhook/metrics"
)

// statusFacts is what GET /admin/status needs from the daemon itself: the
// values it already holds (build, start, its addresses and data directory,
// the metrics' last-accepted times and its counts and last times of
// unknown paths and refused webhooks, the provider watch, the run marker's
// account of the previous run) and the configured sinks. It reads no
// record; the admin server adds the store's counts.
func (d *Daemon) statusFacts() admin.Facts {
	notFound, unauthorized := d.metrics.NotFound(), d.metrics.Unauthorized()
	f := admin.Facts{
		Build:            admin.BuildView{Version: d.build.Version, Commit: d.build.Commit, Go: d.build.Go},
		StartedAt:        d.startedAt,
		NotFoundRequests: notFound.Count, LastNotFound: notFound.Last,
		Unauthorized: unauthorized.Count, LastUnauthorized: unauthorized.Last,
		ListenAddr: d.cfg.ListenAddr, AdminAddr: d.adminAddr.String(), DataDir: d.dataDir,
		Sinks: deliverySinks(d.cfg),
	}
	// The admin listener serves before the webhook listener is bound:
	// until listening says it is (which orders the write of d.addr before
	// this read), the configured address is all there is.
	q := d.metrics.LastQuarantined()
	f.Quarantined, f.LastQuarantined = q.Count, q.Last
	f.LastQuarantine = admin.QuarantineCause{Product: q.Product, Reason: q.Reason}
	if d.listening.Load() {
		f.ListenAddr = d.addr.String()
	}
	products := []string{metrics.ProductBatch}
	if d.payments {
		products = append(products, metrics.ProductPayments)
		f.PaymentSinks = paymentSinks(d.cfg)
	}
	for _, p := range products {
		at, _ := d.metrics.LastAccepted(p)
		f.LastAccepted = append(f.LastAccepted, admin.ProductTime{Product: p, At: at})
	}
	last, refused := d.provider.Last()
	f.Provider = admin.ProviderView{Misconfigured: d.provider.IsMisconfigured(), Problem: d.provider.Problem(),
		LastAnswer: last, KeyRefused: refused > 0, KeyRefusals: refused}
	if d.previousFailed {
		pr := &admin.PreviousRunView{Reason: d.previousRun.Reason}
		if !d.previousRun.When.IsZero() {
			when := d.previousRun.When.UTC()
			pr.When = &when
		}
		f.PreviousRun = pr
	}
	return f
}
