package metrics

import (
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// PaymentBacklogs is what the payment delivery gauges read from the store
// at scrape time: per sink, how many logged events it has not handled and
// when the oldest of them was received (store.PaymentBacklog, no scan).
type PaymentBacklogs interface {
	PaymentBacklog(sink string) (int, time.Time, error)
}

// PaymentDeliveries counts payment deliveries per sink and outcome, and
// reads each payment sink's backlog on every scrape. Labels are sink
// names and outcomes only: nothing of an event reaches a series.
type PaymentDeliveries struct {
	deliveries *prometheus.CounterVec
}

var (
	paymentBacklogDesc = prometheus.NewDesc("batchhook_payment_backlog",
		"Payment events each payment sink has not handled yet (delivered or failed for good).", []string{"sink"}, nil)
	paymentOldestDesc = prometheus.NewDesc("batchhook_payment_oldest_pending_seconds",
		"Age of each payment sink's oldest unhandled event, from when it was received (0 when none).", []string{"sink"}, nil)
)

// PaymentDeliveries registers the payment delivery metrics in m's
// registry for the payment sinks (BATCHHOOK_SINKS minus exec), each
// outcome's series at 0; call it once, before the handler serves.
func (m *Metrics) PaymentDeliveries(backlogs PaymentBacklogs, sinks []string) *PaymentDeliveries {
	p := &PaymentDeliveries{deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "batchhook_payment_deliveries_total",
		Help: "Payment events by sink and outcome (delivered, retry, failed); a retry counts the attempt at the event that stopped a run.",
	}, []string{"sink", "outcome"})}
	for _, s := range sinks {
		for _, o := range []string{"delivered", "retry", "failed"} {
			p.deliveries.WithLabelValues(s, o)
		}
	}
	m.reg.MustRegister(p.deliveries, &paymentBacklogCollector{backlogs: backlogs, sinks: slices.Clone(sinks), now: m.collector.now})
	return p
}

// PaymentOutcome counts n events of sink with outcome.
func (p *PaymentDeliveries) PaymentOutcome(sink, outcome string, n int) {
	p.deliveries.WithLabelValues(sink, outcome).Add(float64(n))
}

// paymentBacklogCollector reads the payment sinks' backlogs at scrape time.
type paymentBacklogCollector struct {
	backlogs PaymentBacklogs
	sinks    []string
	now      func() time.Time
}

func (c *paymentBacklogCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- paymentBacklogDesc
	ch <- paymentOldestDesc
}

func (c *paymentBacklogCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.sinks {
		n, oldest, err := c.backlogs.PaymentBacklog(s)
		if err != nil {
			ch <- prometheus.NewInvalidMetric(paymentBacklogDesc, err)
			continue
		}
		age := 0.0
		if n > 0 && !oldest.IsZero() {
			age = max(c.now().Sub(oldest).Seconds(), 0)
		}
		ch <- prometheus.MustNewConstMetric(paymentBacklogDesc, prometheus.GaugeValue, float64(n), s)
		ch <- prometheus.MustNewConstMetric(paymentOldestDesc, prometheus.GaugeValue, age, s)
	}
}
