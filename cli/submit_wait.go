package cli

import (
	"fmt"
	"time"

	"github.com/batchhook/batchhook/admin"
)

// waitingNote says in one line why a submission's chunks wait (w, the
// admin API's "waiting" member) and when they should all be out; "" when
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
	if w.EstimatedDoneAt != nil {
		eta = fmt.Sprintf("; %s queued, the last about %s", plural(w.QueuedChunks, "batch", "batches"), clock(*w.EstimatedDoneAt))
	}
	switch w.Reason {
	case "rate_limit":
		return fmt.Sprintf("waiting: the provider's rate limit (%s a minute); next at %s%s",
			plural(w.PerMinute, "submission", "submissions"), clock(w.Until), eta)
	case "in_flight_cap":
		return fmt.Sprintf("waiting: %d of %d batches in flight, the provider's limit; the next goes out when one finishes (no estimate: the provider sets the pace)",
			w.InFlight, w.MaxInFlight)
	case "backoff":
		return fmt.Sprintf("waiting: the provider refused or failed the last attempt; next attempt at %s%s", clock(w.Until), eta)
	}
	return ""
}
