package admin

import (
	"strings"

	"github.com/batchhook/batchhook/store"
)

// conflictReason is the reply text of a 409 from a store.ErrState error.
// The store wraps ErrState after a sentence that already names the
// conflict ("chunk 0 of submission S is submitted; only failed …"), so the
// sentinel's own text, a generic tail, is dropped; a bare ErrState keeps it.
func conflictReason(err error) string {
	msg := err.Error()
	if trimmed := strings.TrimSuffix(msg, ": "+store.ErrState.Error()); trimmed != "" {
		return trimmed
	}
	return msg
}
