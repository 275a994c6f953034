package metrics

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/batchhook/batchhook/internal/buildinfo"
)

// BuildInfo registers batchhook_build_info{version,commit,go} at 1, the
// usual shape for "which build runs where": a dashboard joins on it and an
// upgrade shows as a new series. Call it once, before the handler serves.
func (m *Metrics) BuildInfo(b buildinfo.Info) {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "batchhook_build_info",
		Help: "1, labelled with the running build's version, commit and Go release.",
	}, []string{"version", "commit", "go"})
	g.WithLabelValues(b.Version, b.Commit, b.Go).Set(1)
	m.reg.MustRegister(g)
}

// Products are the label values of
// batchhook_last_accepted_timestamp_seconds: the batch webhook and the
// payments webhook.
const (
	ProductBatch    = "batch"
	ProductPayments = "payments"
)

// lastAccepted is the last webhook accepted per product, for the gauge (a
// dead man's switch: no webhook for hours while batches are outstanding
// means the provider stopped sending, or sends elsewhere) and for the
// status summary. Until one is accepted the gauge holds the daemon's
// start, so the switch counts from the start instead of firing at once
// after every restart; LastAccepted's ok says which it is.
type lastAccepted struct {
	start time.Time
	// paymentsOn is set when the payments webhook is served: only then has
	// it a series.
	paymentsOn      atomic.Bool
	batch, payments seen
}

func (l *lastAccepted) slot(product string) *seen {
	if product == ProductPayments {
		return &l.payments
	}
	return &l.batch
}

func (l *lastAccepted) accepted(product string, at time.Time) { l.slot(product).add(at) }

// LastAccepted is when the last webhook of product was accepted by this
// run; ok is false when none was since the daemon started.
func (m *Metrics) LastAccepted(product string) (at time.Time, ok bool) {
	v := m.last.slot(product).get()
	return v.Last, v.Count > 0
}

var lastAcceptedDesc = prometheus.NewDesc("batchhook_last_accepted_timestamp_seconds",
	"Unix time of the last webhook accepted, by product (batch; payments when its webhook is served); the daemon's start until one is.",
	[]string{"product"}, nil)

// lastAcceptedCollector serves the gauge from the atomics at scrape time.
type lastAcceptedCollector struct{ l *lastAccepted }

func (c lastAcceptedCollector) Describe(ch chan<- *prometheus.Desc) { ch <- lastAcceptedDesc }

func (c lastAcceptedCollector) Collect(ch chan<- prometheus.Metric) {
	products := []string{ProductBatch}
	if c.l.paymentsOn.Load() {
		products = append(products, ProductPayments)
	}
	for _, p := range products {
		at := c.l.start
		if v := c.l.slot(p).get(); v.Count > 0 {
			at = v.Last
		}
		ch <- prometheus.MustNewConstMetric(lastAcceptedDesc, prometheus.GaugeValue, float64(at.UnixNano())/1e9, p)
	}
}
