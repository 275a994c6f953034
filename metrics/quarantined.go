package metrics

import (
	"sync"
	"time"
)

// Quarantined counts one signed webhook kept in the quarantine
// (batchhook_quarantined_total) and notes when it came and why, for the
// status summary: such a delivery is retried for ever and never recorded,
// so the daemon is not healthy while they come. reason is the entry's,
// already masked.
func (m *Metrics) Quarantined(product, reason string) {
	m.quarantinedTotal.WithLabelValues(product).Inc()
	m.quarantined.add(m.now(), product, reason)
}

// LastQuarantine is the signed webhooks quarantined since start, when the
// last came, its product and its reason (zero when none came).
type LastQuarantine struct {
	Seen
	Product, Reason string
}

// LastQuarantined returns the quarantined webhooks since start and the
// last one's time, product and reason.
func (m *Metrics) LastQuarantined() LastQuarantine { return m.quarantined.get() }

// lastQuarantined keeps LastQuarantine under a lock: the reason is text,
// which no atomic holds.
type lastQuarantined struct {
	mu sync.Mutex
	v  LastQuarantine
}

func (l *lastQuarantined) add(at time.Time, product, reason string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.v.Count++
	l.v.Last, l.v.Product, l.v.Reason = at, product, reason
}

func (l *lastQuarantined) get() LastQuarantine {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.v
}
