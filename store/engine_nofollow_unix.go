//go:build unix

package store

import (
	"errors"
	"os"
	"syscall"
)

// openNoFollow opens the database file for bbolt without following a
// symbolic link in its last component (O_NOFOLLOW makes that ELOOP, with
// no window between a check and the open).
func openNoFollow(path string, flag int, mode os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW, mode)
	if errors.Is(err, syscall.ELOOP) {
		return nil, ErrSymlink // Open names the path
	}
	return f, err
}
