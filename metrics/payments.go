package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// PaymentCounters count the payments webhook's requests by outcome. It
// implements receiver.PaymentObserver.
type PaymentCounters struct {
	events *prometheus.CounterVec
}

// Payments registers batchhook_payment_events_total in m's registry with
// every outcome at 0 (receiver.PaymentOutcomes), so an alert on a rate
// works before the first request; call it once.
func (m *Metrics) Payments(outcomes []string) *PaymentCounters {
	c := &PaymentCounters{events: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "batchhook_payment_events_total",
		Help: "Payments webhook requests by outcome (accepted, duplicate, unauthorized, invalid, too_large, unsupported, method_not_allowed, error).",
	}, []string{"outcome"})}
	for _, o := range outcomes {
		c.events.WithLabelValues(o)
	}
	m.reg.MustRegister(c.events)
	return c
}

// PaymentHandled counts one payments webhook request.
func (c *PaymentCounters) PaymentHandled(outcome string, _ time.Duration) {
	c.events.WithLabelValues(outcome).Inc()
}
