package store

import (
	"errors"
	"fmt"
)

// CheckBatchID reports whether id is safe to use as a directory name:
// 1–128 characters of [A-Za-z0-9._:-], not starting with a dot (which also
// rules out "." and ".."). The export directory is named after it, so the
// receiver refuses an unsafe id and the export sink checks again before it
// touches the disk. Two names are refused too (issue 13): "payments",
// since EXPORT_DIR/payments holds the payment day files, and "payment",
// since payment events go downstream with message ids "payment:<seq>",
// which that batch's parts would share.
func CheckBatchID(id string) error {
	switch id {
	case "payments":
		return fmt.Errorf("%q is reserved: EXPORT_DIR/payments holds the payment day files", id)
	case "payment":
		return fmt.Errorf("%q is reserved: payment events are sent downstream with message ids payment:<seq>", id)
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
