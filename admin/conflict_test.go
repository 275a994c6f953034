package admin

import (
	"strings"

	"github.com/batchhook/batchhook/store"
)

// hasStateTail reports whether a 409 reply still carries store.ErrState's
// generic text (or its old wording) after the sentence that names the
// conflict.
func hasStateTail(reason string) bool {
	return strings.HasSuffix(reason, ": "+store.ErrState.Error()) || strings.Contains(reason, "expected state")
}
