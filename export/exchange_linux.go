package export

import (
	"os"

	"golang.org/x/sys/unix"
)

// exchange swaps a (inside aDir) and b (inside bDir) atomically; neither is
// followed if it is a link.
func exchange(aDir *os.File, a string, bDir *os.File, b string) error {
	return unix.Renameat2(int(aDir.Fd()), a, int(bDir.Fd()), b, unix.RENAME_EXCHANGE)
}
