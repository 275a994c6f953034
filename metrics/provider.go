package metrics

import "github.com/prometheus/client_golang/prometheus"

// Provider registers batchhook_provider_responses_total{code} with every
// class in classes started at 0, and batchhook_provider_misconfigured read
// from misconfigured at scrape time. It returns the function that counts
// one response of a class. Call it once, before the handler serves.
func (m *Metrics) Provider(classes []string, misconfigured func() bool) func(class string) {
	responses := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "batchhook_provider_responses_total",
		Help: "Calls to the provider's API (fetch, poll, submit) by status class (2xx, 3xx, 401, 403, 404, 429, 4xx, 5xx, none: no response).",
	}, []string{"code"})
	for _, c := range classes {
		responses.WithLabelValues(c)
	}
	gauge := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "batchhook_provider_misconfigured",
		Help: "1 while every provider call since start has failed and the last ones all answered 404 (a wrong BATCHHOOK_API_BASE_URL), else 0.",
	}, func() float64 {
		if misconfigured() {
			return 1
		}
		return 0
	})
	m.reg.MustRegister(responses, gauge)
	return func(class string) { responses.WithLabelValues(class).Inc() }
}
