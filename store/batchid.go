package store

import (
	"errors"
	"fmt"
)

// ReservedBatchID is the one name CheckBatchID refuses that would
// otherwise be safe.
const ReservedBatchID = "payments"

// CheckBatchID reports whether id is safe to use as a directory name:
// 1–128 characters of [A-Za-z0-9._:-], not starting with a dot (which also
// rules out "." and ".."). The export directory is named after it, so the
// receiver refuses an unsafe id and the export sink checks again before it
// touches the disk. "payments" is refused too: EXPORT_DIR/payments holds
// the payment day files (issue 13), so no export may take that name.
func CheckBatchID(id string) error {
	if id == ReservedBatchID {
		return fmt.Errorf("%q is reserved: EXPORT_DIR/%s holds the payment day files", id, id)
	}
	if id == "" || len(id) > 128 {
		return fmt.Errorf("must be 1 to 128 characters, has %d", len(id))
	}
	if id[0] == '.' {
		return errors.New("must not start with a dot")
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-'
		if !ok {
			return fmt.Errorf("has a character outside [A-Za-z0-9._:-] at byte %d", i)
		}
	}
	return nil
}
