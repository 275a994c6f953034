package main

import "time"

// quarantineNextStep says what an operator can do about a quarantined
// delivery: the provider retries a 400 for ever, so the entry is not the
// end of the story, but nothing batchhook does on its own gets the data in.
func quarantineNextStep(product, batchID string) string {
	if product == "payments" {
		return "the provider retries this delivery for ever and each retry lands here again (kept once). " +
			"A payment event cannot be fetched by id: once the sender is fixed, the next retry is logged like any other " +
			"(batchhook payments list); if batchhook's check is what is wrong, fix it and the retries are accepted."
	}
	id := batchID
	if id == "" {
		id = "BATCH_ID"
	}
	return "the provider retries this for ever; after fixing the sender (or batchhook, if its check is wrong), " +
		"`batchhook track " + id + "` fetches the batch by polling the provider, without waiting for a valid notification."
}

// orDash shows an empty value as "-" in a table.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// timeOrDash shows a zero time (nothing recorded yet) as "-" in a table,
// never as 0001-01-01T00:00:00Z.
func timeOrDash(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
