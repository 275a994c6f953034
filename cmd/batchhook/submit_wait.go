package main

import (
	"fmt"
	"time"
)

// waitingInfo is the admin API's "waiting" member of a submission: why
// its chunks wait, and when the last should go out.
type waitingInfo struct {
	Reason          string     `json:"reason"`
	Until           *time.Time `json:"until"`
	InFlight        int        `json:"in_flight"`
	MaxInFlight     int        `json:"max_in_flight"`
	PerMinute       int        `json:"per_minute"`
	QueuedChunks    int        `json:"queued_chunks"`
	EstimatedDoneAt *time.Time `json:"estimated_done_at"`
}

// explain says in one line why the chunks wait and when they should all be
// out; "" when nothing holds them (they are on their way). Times are the
// operator's local ones.
func (w *waitingInfo) explain() string {
	if w == nil {
		return ""
	}
	clock := func(t *time.Time) string {
		if t == nil {
			return "?"
		}
		return t.Local().Format("15:04:05")
	}
	eta := ""
	if w.EstimatedDoneAt != nil {
		eta = fmt.Sprintf("; %s queued, the last about %s", plural(w.QueuedChunks, "batch", "batches"), clock(w.EstimatedDoneAt))
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
