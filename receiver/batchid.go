package receiver

import (
	"encoding/json"

	"github.com/batchhook/batchhook/store"
)

// readableBatchID returns the batch_id of a body that failed validation,
// when one can be read and is safe to show (store.CheckBatchID): the
// operator can then track the batch while the sender is being fixed. The
// body is not trusted for anything else; an id that is absent, not a
// string or unsafe gives "".
func readableBatchID(body []byte) string {
	var members map[string]json.RawMessage // exact key: a map does not fold case
	if json.Unmarshal(body, &members) != nil {
		return ""
	}
	var id string
	if json.Unmarshal(members["batch_id"], &id) != nil || store.CheckBatchID(id) != nil {
		return ""
	}
	return id
}
