package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// PaymentCounters count the payments webhook's requests by outcome. It
// implements receiver.PaymentObserver.
type PaymentCounters struct {
	events *prometheus.CounterVec
	now    func() time.Time
	last   *lastAccepted
	// unauthorized is the Metrics' count of refused webhooks, which the
	// payments webhook's 401s join.
	unauthorized *seen
}

// Payments registers batchhook_payment_events_total in m's registry with
// every outcome at 0 (receiver.PaymentOutcomes), so an alert on a rate
// works before the first request; call it once.
func (m *Metrics) Payments(outcomes []string) *PaymentCounters {
	c := &PaymentCounters{events: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "batchhook_payment_events_total",
		Help: "Payments webhook requests by outcome (accepted, duplicate, unauthorized, invalid, too_large, unsupported, method_not_allowed, error).",
	}, []string{"outcome"}), now: m.now, last: m.last, unauthorized: m.unauthorized}
	for _, o := range outcomes {
		c.events.WithLabelValues(o)
	}
	m.reg.MustRegister(c.events)
	return c
}

// Served says the payments webhook is served: its
// batchhook_last_accepted_timestamp_seconds series appears.
func (c *PaymentCounters) Served() { c.last.paymentsOn.Store(true) }

// PaymentHandled counts one payments webhook request and notes the time
// of an accepted one and of a refused one (401).
func (c *PaymentCounters) PaymentHandled(outcome string, _ time.Duration) {
	c.events.WithLabelValues(outcome).Inc()
	switch outcome {
	case outcomeAccepted:
		c.last.accepted(ProductPayments, c.now())
	case OutcomeUnauthorized:
		c.unauthorized.add(c.now())
	}
}
