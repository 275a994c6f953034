package metrics

// Labels are the label values of the counters New registers. Init starts
// each series at 0: a labelled counter that appears only at its first
// event makes increase(…[1h]) miss that event after every restart.
type Labels struct {
	WebhookOutcomes    []string // batchhook_webhook_requests_total{outcome}
	FetchErrorKinds    []string // batchhook_fetch_errors_total{kind}
	FinishedStates     []string // batchhook_batches_finished_total{state}
	SubmissionOutcomes []string // batchhook_submissions_total{outcome}
	DroppedLogEvents   []string // batchhook_log_lines_dropped_total{event}
	AuthSurfaces       []string // batchhook_admin_auth_failures_total{surface}
}

// Init starts every series of l, and both results of
// batchhook_secret_reloads_total, at 0. Call it once, before the handler
// serves.
func (m *Metrics) Init(l Labels) {
	for _, v := range l.WebhookOutcomes {
		m.webhookRequests.WithLabelValues(v)
	}
	for _, v := range l.FetchErrorKinds {
		m.fetchErrors.WithLabelValues(v)
	}
	for _, v := range l.FinishedStates {
		m.batchesFinished.WithLabelValues(v)
	}
	for _, v := range l.SubmissionOutcomes {
		m.submissions.WithLabelValues(v)
	}
	for _, v := range l.DroppedLogEvents {
		m.logLinesDropped.WithLabelValues(v)
	}
	for _, v := range l.AuthSurfaces {
		m.authFailures.WithLabelValues(v)
	}
	m.reloads.WithLabelValues("ok")
	m.reloads.WithLabelValues("failed")
}
