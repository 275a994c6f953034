package metrics

import dto "github.com/prometheus/client_model/go"

// Total sums the counter family name over the series whose label (when
// label is not empty) has one of values: e.g. Total(
// "batchhook_sink_deliveries_total", "outcome", "retry", "failed") for
// every sink's failed attempts. The console's rate charts read the
// daemon's own counters this way, as /metrics shows them.
func (m *Metrics) Total(name, label string, values ...string) float64 {
	fams, err := m.reg.Gather()
	if err != nil && len(fams) == 0 {
		return 0
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		sum := 0.0
		for _, s := range f.GetMetric() {
			if label == "" || matches(s, label, values) {
				sum += s.GetCounter().GetValue()
			}
		}
		return sum
	}
	return 0
}

func matches(s *dto.Metric, label string, values []string) bool {
	for _, l := range s.GetLabel() {
		if l.GetName() != label {
			continue
		}
		for _, v := range values {
			if l.GetValue() == v {
				return true
			}
		}
	}
	return false
}
