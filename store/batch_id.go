package store

import (
	"errors"
	"fmt"

	"github.com/batchhook/batchhook/cpf"
)

// ErrBatchIDIsCPF is CheckBatchID's answer for an id that is a valid CPF;
// the message never repeats the id.
var ErrBatchIDIsCPF = errors.New("is a valid CPF (personal data): batch ids are logged and name directories, so such an id is refused")

// CheckBatchID reports whether id is safe to use as a directory name:
// 1–128 characters of [A-Za-z0-9._:-], not starting with a dot (which also
// rules out "." and ".."). The export directory is named after it, so the
// receiver refuses an unsafe id and the export sink checks again before it
// touches the disk. Two names are refused too: "payments",
// since EXPORT_DIR/payments holds the payment day files, and "payment",
// since payment events go downstream with message ids "payment:<seq>",
// which that batch's parts would share.
//
// An id that is a valid CPF (11 digits with matching check digits, bare or
// as 000.000.000-00: cpf.Normalize) is refused as well. A batch
// id is logged in every line about its batch, names a directory, goes into
// message ids downstream and into the provider's URL, so it must never be
// personal data. The document shows batch ids only as strings; batchhook
// assumes a provider never issues one that is a CPF, and says why it
// refused one without echoing it. Only the whole id counts: an id that
// merely contains eleven digits (a UUID's last group can) is an id, not a
// person, and refusing it would refuse genuine batches at random.
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
	if _, err := cpf.Normalize(id); err == nil {
		return ErrBatchIDIsCPF
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
