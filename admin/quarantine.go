package admin

import (
	"errors"
	"strings"

	"github.com/batchhook/batchhook/store"
)

// findQuarantined takes a whole id or a unique prefix of one (ids are 64
// lowercase hex digits: a prefix of anything else is unknown).
func (s *Server) findQuarantined(id string) (*store.Quarantined, error) {
	if q, err := s.o.Store.GetQuarantined(id); !errors.Is(err, store.ErrNotFound) {
		return q, err
	}
	id = strings.ToLower(id)
	if id == "" || len(id) > 64 || strings.Trim(id, "0123456789abcdef") != "" {
		return nil, store.ErrNotFound
	}
	return s.o.Store.FindQuarantined(id)
}

// QuarantineNextStep says what an operator can do about a quarantined
// delivery: the provider retries a 400 for ever, so the entry is not the
// end of the story, but nothing batchhook does on its own gets the data in.
func QuarantineNextStep(product, batchID string) string {
	if product == "payments" {
		return "the provider retries this delivery for ever and each retry lands here again (kept once). " +
			"A payment event cannot be fetched by id: once the sender is fixed, the next retry is logged like any other " +
			"(batchhook payments list); if batchhook's check is what is wrong, fix it and the retries are accepted."
	}
	if batchID == "" {
		// Nothing to name in a track: the body's batch_id was missing,
		// unreadable or unsafe, and a guess would track the wrong batch.
		return "the provider retries this for ever and each retry lands here again (kept once). " +
			"Its body has no batch_id batchhook could read safely, so there is no batch to track from here: " +
			"once the sender (or batchhook, if its check is wrong) is fixed, the next retry is accepted like any other notification."
	}
	return "the provider retries this for ever; after fixing the sender (or batchhook, if its check is wrong), " +
		"`batchhook track " + batchID + "` fetches the batch by polling the provider, without waiting for a valid notification."
}
