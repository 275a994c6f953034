package receiver

import "github.com/batchhook/batchhook/internal/httpserver"

// Outcomes are the outcomes the batch webhook reports to its Observer; the
// metrics start each at 0, so an alert on a rate sees the first event
// after a restart.
var Outcomes = []string{ResultAccepted, ResultDuplicate, ResultIgnored, outcomeUnauthorized, outcomeInvalid,
	outcomeTooLarge, outcomeUnsupported, outcomeMethod, outcomeError, outcomeNotFound, outcomeAmbiguous}

// SampledEvents are the events of the webhook listener's sampled lines
// (the ones a stranger can cause), as told to Options.LogDropped.
var SampledEvents = []string{eventRejected, eventPaymentRejected, eventTooLarge, eventReadFailed, eventUnknownPath, "http_server_error", httpserver.EventAmbiguous}
