// Package metrics is batchhook's Prometheus adapter: the only package that
// imports the Prometheus client. The receiver and the fetcher report
// through small observer interfaces of their own; batch counts by state and
// the age of the oldest unexported batch are read from the store's indexes
// at scrape time, so they cannot drift from the truth.
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/batchhook/batchhook/store"
)

// States is what the metrics read from the store at scrape time.
type States interface {
	Counts() (map[store.State]int, error)
	OldestPending() (time.Time, bool, error)
}

// Metrics holds batchhook's collectors in a registry of its own (no global
// default registry).
type Metrics struct {
	reg             *prometheus.Registry
	webhookRequests *prometheus.CounterVec
	webhookAck      prometheus.Histogram
	fetchPages      prometheus.Counter
	fetchErrors     *prometheus.CounterVec
	exportItems     prometheus.Counter
	batchesFinished *prometheus.CounterVec
	reloads         *prometheus.CounterVec
}

// New registers every collector, the Go runtime and process collectors
// included.
func New(states States, now func() time.Time) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		webhookRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "batchhook_webhook_requests_total",
			Help: "Webhook requests by outcome (accepted, duplicate, ignored, unauthorized, invalid, too_large, unsupported, error).",
		}, []string{"outcome"}),
		webhookAck: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "batchhook_webhook_ack_seconds",
			Help:    "Time from reading a webhook request to replying, durable commit included.",
			Buckets: []float64{.0005, .001, .002, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}),
		fetchPages: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "batchhook_fetch_pages_total",
			Help: "Result pages fetched, staged and checkpointed.",
		}),
		fetchErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "batchhook_fetch_errors_total",
			Help: "Failed fetch attempts by kind (transient, auth, not_found, rejected, protocol, local).",
		}, []string{"kind"}),
		exportItems: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "batchhook_export_items_total",
			Help: "Result items in published exports.",
		}),
		batchesFinished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "batchhook_batches_finished_total",
			Help: "Batches that reached a final state since start, by state.",
		}, []string{"state"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "batchhook_secret_reloads_total",
			Help: "SIGHUP reloads of the secret files by result (ok, failed).",
		}, []string{"result"}),
	}
	m.reg.MustRegister(m.webhookRequests, m.webhookAck, m.fetchPages, m.fetchErrors, m.exportItems,
		m.batchesFinished, m.reloads, &stateCollector{states: states, now: now},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// WebhookHandled counts one webhook request and its reply time.
func (m *Metrics) WebhookHandled(outcome string, took time.Duration) {
	m.webhookRequests.WithLabelValues(outcome).Inc()
	m.webhookAck.Observe(took.Seconds())
}

// PageFetched counts one staged page.
func (m *Metrics) PageFetched() { m.fetchPages.Inc() }

// FetchFailed counts one failed attempt of kind.
func (m *Metrics) FetchFailed(kind string) { m.fetchErrors.WithLabelValues(kind).Inc() }

// BatchFinished counts a batch reaching a final state, and its items.
func (m *Metrics) BatchFinished(state string, items int64) {
	m.batchesFinished.WithLabelValues(state).Inc()
	if state == string(store.StateExported) {
		m.exportItems.Add(float64(items))
	}
}

// SecretsReloaded counts one reload.
func (m *Metrics) SecretsReloaded(ok bool) {
	result := "ok"
	if !ok {
		result = "failed"
	}
	m.reloads.WithLabelValues(result).Inc()
}

// stateCollector reads batch counts and the oldest pending batch from the
// store's indexes on every scrape.
type stateCollector struct {
	states States
	now    func() time.Time
}

var (
	batchesDesc = prometheus.NewDesc("batchhook_batches", "Batches by state.", []string{"state"}, nil)
	oldestDesc  = prometheus.NewDesc("batchhook_queue_oldest_seconds",
		"Age of the oldest batch not yet exported or abandoned (0 when none).", nil, nil)
)

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- batchesDesc
	ch <- oldestDesc
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	counts, err := c.states.Counts()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(batchesDesc, err)
	} else {
		for _, s := range store.States {
			ch <- prometheus.MustNewConstMetric(batchesDesc, prometheus.GaugeValue, float64(counts[s]), string(s))
		}
	}
	oldest, ok, err := c.states.OldestPending()
	switch {
	case err != nil:
		ch <- prometheus.NewInvalidMetric(oldestDesc, err)
	case ok:
		ch <- prometheus.MustNewConstMetric(oldestDesc, prometheus.GaugeValue, c.now().Sub(oldest).Seconds())
	default:
		ch <- prometheus.MustNewConstMetric(oldestDesc, prometheus.GaugeValue, 0)
	}
}
