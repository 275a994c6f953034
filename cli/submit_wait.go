package cli

import (
	"fmt"
	"time"

	"github.com/batchhook/batchhook/admin"
)

// waitingNote says in one line why a submission's chunks wait (w, the
// admin API's "waiting" member), what to do when the provider did not
// accept the last attempt, and when they should all be out; "" when
// nothing holds them (they are on their way). Times are the operator's
// local ones.
func waitingNote(w *admin.WaitingView) string {
	if w == nil {
		return ""
	}
	clock := func(t time.Time) string {
		if t.IsZero() {
			return "?"
		}
		return t.Local().Format("15:04:05")
	}
	eta := ""
	switch {
	case w.EstimatedDoneAt != nil:
		eta = fmt.Sprintf("; %s queued, the last about %s", plural(w.QueuedChunks, "batch", "batches"), clock(*w.EstimatedDoneAt))
	case w.Estimate == admin.EstimateOverdue:
		eta = fmt.Sprintf("; %s queued, due by now", plural(w.QueuedChunks, "batch", "batches"))
	}
	// A failure the submitter is still retrying outlasts the limits that
	// may follow it (after a refused key, the rate limit): the operator
	// must still learn what to fix.
	last := ""
	if w.Hint != "" {
		last = "; the last attempt: " + w.Hint
	}
	switch w.Reason {
	case "rate_limit":
		return fmt.Sprintf("waiting: the provider's rate limit (%s a minute); next at %s%s%s",
			plural(w.PerMinute, "submission", "submissions"), clock(w.Until), eta, last)
	case "in_flight_cap":
		return fmt.Sprintf("waiting: %d of %d batches in flight, the provider's limit; the next goes out when one finishes (no estimate: the provider sets the pace)%s",
			w.InFlight, w.MaxInFlight, last)
	case "backoff":
		if w.Hint != "" {
			return fmt.Sprintf("waiting: %s; next attempt at %s%s", w.Hint, clock(w.Until), eta)
		}
		return fmt.Sprintf("waiting: the provider refused or failed the last attempt; next attempt at %s%s", clock(w.Until), eta)
	case "":
		if w.Hint != "" {
			return "sending again" + last
		}
	}
	return ""
}

// waitingKey is what must change for a new line without a terminal: the
// failure being retried, else the limit; not the times, which move at
// every attempt.
func waitingKey(w *admin.WaitingView) string {
	if w == nil {
		return ""
	}
	if w.ErrorKind != "" {
		return w.ErrorKind
	}
	return w.Reason
}
