// Package metrics is batchhook's Prometheus adapter: the only package that
// imports the Prometheus client. The receiver and the fetcher report
// through small observer interfaces of their own; batch counts by state and
// the age of the oldest unexported batch are read from the store's indexes
// at scrape time, so they cannot drift from the truth.
package metrics

import (
	"net/http"
	"sync/atomic"
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
	ChunkCounts() (map[store.ChunkState]int, error)
	// WriteErrors counts the store's writes that did not commit.
	WriteErrors() uint64
	// DeliveryCounts and OldestPendingDeliveries read the sinks' outboxes
	// from their indexes (no scan).
	DeliveryCounts() (map[string]map[store.DeliveryState]int, error)
	OldestPendingDeliveries() (map[string]time.Time, error)
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
	submissions     *prometheus.CounterVec
	reconciled      prometheus.Counter
	logLinesDropped *prometheus.CounterVec
	sinkDeliveries  *prometheus.CounterVec
	purged          *prometheus.CounterVec
	authFailures    *prometheus.CounterVec
	collector       *stateCollector
	now             func() time.Time
	last            *lastAccepted
	// notFound and unauthorized mirror the not_found and unauthorized
	// outcomes (the payments webhook's unauthorized too) for the status
	// summary, which reads them without going through the registry and
	// needs the time of the last one, which no series holds.
	notFound, unauthorized *seen
	quarantinedTotal       *prometheus.CounterVec
	quarantined            *lastQuarantined
}

// New registers every collector, the Go runtime and process collectors
// included.
func New(states States, now func() time.Time) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		webhookRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "batchhook_webhook_requests_total",
			Help: "Webhook listener requests by outcome (accepted, duplicate, ignored, unauthorized, invalid, too_large, unsupported, method_not_allowed, error; not_found: a path the listener does not serve; ambiguous_framing: both Content-Length and Transfer-Encoding, refused 400 and the connection closed).",
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
		submissions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "batchhook_submissions_total",
			Help: "Chunk submission attempts by outcome (submitted, not_sent, rate_limited, auth, server_error, rejected, unknown).",
		}, []string{"outcome"}),
		reconciled: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "batchhook_reconciled_total",
			Help: "Batches found final by a poll because no batch.completed came.",
		}),
		logLinesDropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "batchhook_log_lines_dropped_total",
			Help: "Log lines a stranger caused (rejected or unreadable webhooks, admin requests without the token) that the sampler dropped, by event.",
		}, []string{"event"}),
		sinkDeliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "batchhook_sink_deliveries_total",
			Help: "Delivery attempts by sink and outcome (delivered, retry, failed).",
		}, []string{"sink", "outcome"}),
		purged: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "batchhook_purged_total",
			Help: "Personal data deleted by the purger, by kind (export, record, quarantine, audit, chunk_cpfs, payment_body, payment_day_file).",
		}, []string{"kind"}),
		authFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "batchhook_admin_auth_failures_total",
			Help: "Wrong admin tokens by surface (api: the bearer check; console: the sign-in); a rise is someone guessing.",
		}, []string{"surface"}),
		collector:    &stateCollector{states: states, now: now},
		now:          now,
		last:         &lastAccepted{start: now()},
		notFound:     &seen{},
		unauthorized: &seen{},
		quarantinedTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "batchhook_quarantined_total",
			Help: "Signed webhooks that failed validation and were kept in the quarantine (answered 400; the provider retries them for ever), by product (batch, payments).",
		}, []string{"product"}),
		quarantined: &lastQuarantined{},
	}
	for _, p := range []string{ProductBatch, ProductPayments} {
		m.quarantinedTotal.WithLabelValues(p) // the series exist at 0 for the alert's increase()
	}
	m.reg.MustRegister(m.webhookRequests, m.webhookAck, m.fetchPages, m.fetchErrors, m.exportItems,
		m.batchesFinished, m.reloads, m.submissions, m.reconciled, m.logLinesDropped, m.sinkDeliveries, m.purged, m.quarantinedTotal, m.authFailures, m.collector,
		lastAcceptedCollector{m.last}, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// InitSinks names the configured non-file sinks: each gets its
// batchhook_sink_deliveries_total series at 0 and its pending gauges. Call
// it once, before the handler serves.
func (m *Metrics) InitSinks(names []string) {
	for _, n := range names {
		for _, o := range []string{"delivered", "retry", "failed"} {
			m.sinkDeliveries.WithLabelValues(n, o)
		}
	}
	m.collector.sinks = append([]string(nil), names...)
}

// SinkOutcome counts one delivery attempt's outcome.
func (m *Metrics) SinkOutcome(sink, outcome string) {
	m.sinkDeliveries.WithLabelValues(sink, outcome).Inc()
}

// InitPurged starts the batchhook_purged_total series of each kind at 0.
func (m *Metrics) InitPurged(kinds []string) {
	for _, k := range kinds {
		m.purged.WithLabelValues(k)
	}
}

// Purged counts n items of kind deleted by the purger.
func (m *Metrics) Purged(kind string, n int) { m.purged.WithLabelValues(kind).Add(float64(n)) }

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// WebhookHandled counts one webhook listener request and its reply time,
// and notes the time of an accepted one, of a refused one (401) and of one
// to an unknown path. A request to a path the listener does not serve
// (not_found) is counted, not timed: no handler ran, and a sender posting
// to the wrong URL must not make the reply times look fast.
func (m *Metrics) WebhookHandled(outcome string, took time.Duration) {
	m.webhookRequests.WithLabelValues(outcome).Inc()
	switch outcome {
	case OutcomeNotFound:
		m.notFound.add(m.now())
		return
	case outcomeAccepted:
		m.last.accepted(ProductBatch, m.now())
	case OutcomeUnauthorized:
		m.unauthorized.add(m.now())
	}
	m.webhookAck.Observe(took.Seconds())
}

// NotFound is the requests to a path the webhook listener does not serve
// since start, and when the last came: a status warns only of recent ones,
// so one mistaken request does not mark the daemon unhealthy until a
// restart.
func (m *Metrics) NotFound() Seen { return m.notFound.get() }

// Unauthorized is the webhooks refused with 401 (the signature did not
// verify) since start, batch and payments together, and when the last
// came: the sum of the unauthorized outcomes of
// batchhook_webhook_requests_total and batchhook_payment_events_total.
func (m *Metrics) Unauthorized() Seen { return m.unauthorized.get() }

// The outcomes WebhookHandled treats apart; the receiver names the same
// (receiver.Outcomes, receiver.PaymentOutcomes).
const (
	OutcomeNotFound     = "not_found"
	OutcomeUnauthorized = "unauthorized"
	outcomeAccepted     = "accepted"
)

// Seen is how many requests of one kind came since start and when the
// last did (zero when none did).
type Seen struct {
	Count uint64
	Last  time.Time
}

// seen counts requests of one kind and keeps the time of the last.
type seen struct {
	n    atomic.Uint64
	last atomic.Int64 // unix nanoseconds; 0 = none
}

// add stores the time before counting: a reader that sees a count sees a
// time with it.
func (s *seen) add(at time.Time) {
	s.last.Store(at.UnixNano())
	s.n.Add(1)
}

func (s *seen) get() Seen {
	v := Seen{Count: s.n.Load()}
	if ns := s.last.Load(); ns != 0 {
		v.Last = time.Unix(0, ns)
	}
	return v
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

// SubmissionAttempt counts one chunk submission attempt by outcome.
func (m *Metrics) SubmissionAttempt(outcome string) { m.submissions.WithLabelValues(outcome).Inc() }

// LogLineDropped counts one sampled-out log line of event.
func (m *Metrics) LogLineDropped(event string) { m.logLinesDropped.WithLabelValues(event).Inc() }

// AdminAuthFailed counts one wrong admin token on surface.
func (m *Metrics) AdminAuthFailed(surface string) { m.authFailures.WithLabelValues(surface).Inc() }

// Reconciled counts a batch queued by a poll.
func (m *Metrics) Reconciled() { m.reconciled.Inc() }

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
	sinks  []string // set by InitSinks before serving
}

var (
	batchesDesc  = prometheus.NewDesc("batchhook_batches", "Batches by state.", []string{"state"}, nil)
	inFlightDesc = prometheus.NewDesc("batchhook_batches_in_flight",
		"Batches submitted or tracked whose batch.completed has not come (the provider's in-flight limit counts these).", nil, nil)
	chunksDesc = prometheus.NewDesc("batchhook_chunks",
		"Submission chunks by state; submit_unknown ones need an operator's decision.", []string{"state"}, nil)
	oldestDesc = prometheus.NewDesc("batchhook_queue_oldest_seconds",
		"Age of the oldest batch not yet exported or abandoned (0 when none).", nil, nil)
	sinkPendingDesc = prometheus.NewDesc("batchhook_sink_pending",
		"Deliveries waiting for (or being delivered to) each sink.", []string{"sink"}, nil)
	sinkOldestDesc = prometheus.NewDesc("batchhook_sink_oldest_pending_seconds",
		"Age of each sink's oldest pending delivery, from when it was queued (0 when none).", []string{"sink"}, nil)
	writeErrorsDesc = prometheus.NewDesc("batchhook_store_write_errors_total",
		"Store writes that did not commit (disk full, I/O error); readiness is false until a write commits again.", nil, nil)
)

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- batchesDesc
	ch <- oldestDesc
	ch <- inFlightDesc
	ch <- chunksDesc
	ch <- writeErrorsDesc
	ch <- sinkPendingDesc
	ch <- sinkOldestDesc
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(writeErrorsDesc, prometheus.CounterValue, float64(c.states.WriteErrors()))
	counts, err := c.states.Counts()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(batchesDesc, err)
	} else {
		for _, s := range store.States {
			ch <- prometheus.MustNewConstMetric(batchesDesc, prometheus.GaugeValue, float64(counts[s]), string(s))
		}
		inFlight := counts[store.StateSubmitted] + counts[store.StateTracked]
		ch <- prometheus.MustNewConstMetric(inFlightDesc, prometheus.GaugeValue, float64(inFlight))
	}
	if chunks, err := c.states.ChunkCounts(); err != nil {
		ch <- prometheus.NewInvalidMetric(chunksDesc, err)
	} else {
		for _, s := range store.ChunkStates {
			ch <- prometheus.MustNewConstMetric(chunksDesc, prometheus.GaugeValue, float64(chunks[s]), string(s))
		}
	}
	c.collectSinks(ch)
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

// collectSinks reports each configured sink's pending count and oldest
// pending age.
func (c *stateCollector) collectSinks(ch chan<- prometheus.Metric) {
	if len(c.sinks) == 0 {
		return
	}
	counts, err := c.states.DeliveryCounts()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(sinkPendingDesc, err)
	} else {
		for _, s := range c.sinks {
			ch <- prometheus.MustNewConstMetric(sinkPendingDesc, prometheus.GaugeValue, float64(counts[s][store.DeliveryPending]), s)
		}
	}
	oldest, err := c.states.OldestPendingDeliveries()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(sinkOldestDesc, err)
		return
	}
	for _, s := range c.sinks {
		age := 0.0
		if at, ok := oldest[s]; ok {
			age = max(c.now().Sub(at).Seconds(), 0)
		}
		ch <- prometheus.MustNewConstMetric(sinkOldestDesc, prometheus.GaugeValue, age, s)
	}
}
