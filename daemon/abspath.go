package daemon

import "path/filepath"

// absPath is how a log line names a file or directory: absolute, so that
// it means the same whatever the reader's working directory (a relative
// BATCHHOOK_DATA_DIR is relative to where the daemon started). A path
// that cannot be made absolute is shown as given.
func absPath(p string) string {
	if p == "" {
		return p
	}
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
