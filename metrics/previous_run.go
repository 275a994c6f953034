package metrics

import "github.com/prometheus/client_golang/prometheus"

// PreviousRun registers batchhook_previous_run_failed, 1 when this start
// followed a run that did not stop cleanly (a failed commit, a kill, a
// crash, a failed start or stop), else 0. The run that failed could not
// report it itself: a failed commit exits within milliseconds, and its
// counters start again at 0 after the restart. Call it once, before the
// handler serves.
func (m *Metrics) PreviousRun(failed bool) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "batchhook_previous_run_failed",
		Help: "1 when the previous run of this data directory did not stop cleanly (failed commit, kill, crash); the previous_run_failed log line says why. 0 after a clean stop.",
	})
	if failed {
		g.Set(1)
	}
	m.reg.MustRegister(g)
}
