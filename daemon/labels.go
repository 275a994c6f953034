package daemon

import (
	"slices"

	"github.com/batchhook/batchhook/admin"
	"github.com/batchhook/batchhook/fetcher"
	"github.com/batchhook/batchhook/metrics"
	"github.com/batchhook/batchhook/receiver"
	"github.com/batchhook/batchhook/store"
	"github.com/batchhook/batchhook/submit"
)

// metricLabels gathers, from the packages that report them, every label
// value of the labelled counters, so each series exists at 0 from start.
func metricLabels() metrics.Labels {
	var kinds, outcomes []string
	for _, k := range fetcher.Kinds {
		kinds = append(kinds, string(k))
	}
	for _, o := range submit.Outcomes {
		outcomes = append(outcomes, string(o))
	}
	dropped := slices.Concat(receiver.SampledEvents, admin.SampledEvents)
	slices.Sort(dropped)
	return metrics.Labels{
		WebhookOutcomes:    receiver.Outcomes,
		FetchErrorKinds:    kinds,
		FinishedStates:     []string{string(store.StateExported), string(store.StateAbandoned)},
		SubmissionOutcomes: outcomes,
		DroppedLogEvents:   slices.Compact(dropped),
		AuthSurfaces:       admin.Surfaces,
	}
}
