package filesink

import (
	"os"

	"github.com/batchhook/batchhook/internal/safefs"
)

// ErrUnsafePath: an entry of EXPORT_DIR/payments is a symbolic link, or not
// the kind expected (a directory for payments/, a regular file with one
// link for a day file). The sink never follows a link there: a planted one
// must not make it write payment bodies outside the export root. It is
// internal/safefs's (shared with export).
var ErrUnsafePath = safefs.ErrUnsafePath

// openDirAt opens (and with create makes, 0700) the directory name inside
// parent without following a link; a directory it made is made durable in
// parent (fsync) before it returns (internal/safefs).
func openDirAt(parent *os.File, name string, create bool) (*os.File, error) {
	f, _, err := safefs.OpenDirAt(parent, name, create)
	return f, err
}

// openFileAt opens the regular file name inside dir with flag, without
// following a link, and refuses anything but a regular file with one link
// (a planted hard link would carry the bodies to its other name). A file
// opened with os.O_CREATE is 0600 whatever the umask; created reports
// whether it did not exist before.
func openFileAt(dir *os.File, name string, flag int) (*os.File, bool, error) {
	return safefs.OpenFileAt(dir, name, flag, false)
}
