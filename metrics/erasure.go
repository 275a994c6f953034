package metrics

import "github.com/prometheus/client_golang/prometheus"

// ErasureCounters count erasures (LGPD art. 18) and the export items they
// removed. No label: nothing about the person erased may reach a series.
type ErasureCounters struct {
	erasures prometheus.Counter
	items    prometheus.Counter
}

// Erasures registers the erasure counters in m's registry; call it once.
func (m *Metrics) Erasures() *ErasureCounters {
	c := &ErasureCounters{
		erasures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "batchhook_erasures_total",
			Help: "Erasures of one person's data finished (a repeated one included).",
		}),
		items: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "batchhook_erased_items_total",
			Help: "Items removed from published exports by erasures.",
		}),
	}
	m.reg.MustRegister(c.erasures, c.items)
	return c
}

// Erased counts one finished erasure that removed items from exports.
func (c *ErasureCounters) Erased(items int64) {
	c.erasures.Inc()
	c.items.Add(float64(items))
}
