//go:build !unix

package store

import (
	"os"
)

// openNoFollow refuses a symbolic link by checking before the open (no
// O_NOFOLLOW on this platform).
func openNoFollow(path string, flag int, mode os.FileMode) (*os.File, error) {
	if st, err := os.Lstat(path); err == nil && st.Mode()&os.ModeSymlink != 0 {
		return nil, ErrSymlink // Open names the path
	}
	return os.OpenFile(path, flag, mode)
}
