package export

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/batchhook/batchhook/internal/safefs"
)

// ErrUnsafePath is returned when an entry under the export root is a
// symbolic link, or not the kind of entry expected (a directory where a
// directory belongs, a regular file with one link where a file belongs).
// batchhook never follows a link there: a planted one must not make it write
// personal data outside the root, or publish files it did not write. It is
// internal/safefs's, shared with the payments day files.
var ErrUnsafePath = safefs.ErrUnsafePath

// Every entry under the root is reached from an open directory one name at
// a time with O_NOFOLLOW (internal/safefs): no symbolic link is followed at
// any step; RESOLVE_BENEATH would add nothing, since every name is one
// validated component (a batch id has no "/" and cannot be "." or "..").
const (
	dirMode  = safefs.DirMode
	fileMode = safefs.FileMode
)

// openDirAt opens the directory name inside parent without following a
// link; with create it makes it (0700, whatever the umask) when missing,
// durable (parent fsynced) before it returns. A missing directory without
// create is an error matching os.ErrNotExist.
func openDirAt(parent *os.File, name string, create bool) (*os.File, bool, error) {
	return safefs.OpenDirAt(parent, name, create)
}

// openFileAt opens the regular file name inside dir with flag (os.O_RDONLY,
// os.O_RDWR|os.O_CREATE, …) without following a link. A file it may have
// created is set to 0600 whatever the umask. It refuses anything but a
// regular file with a single link: a hard link planted in staging would
// otherwise carry the results to wherever its other name lives.
func openFileAt(dir *os.File, name string, flag int) (*os.File, error) {
	f, _, err := safefs.OpenFileAt(dir, name, flag, false)
	return f, err
}

// openReadAt opens a published export's file name inside dir for reading,
// without following a link, and allows other hard links to it: a
// downstream reader or a backup tool may hard-link a published export, and
// reading it is harmless (refusing it would make its batch retry for ever).
func openReadAt(dir *os.File, name string) (*os.File, error) {
	f, _, err := safefs.OpenFileAt(dir, name, os.O_RDONLY, true)
	return f, err
}

// lstatAt reports what name inside dir is, without following a link;
// ok is false when it does not exist.
func lstatAt(dir *os.File, name string) (st unix.Stat_t, ok bool, err error) {
	err = unix.Fstatat(int(dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return st, false, nil
	}
	if err != nil {
		return st, false, fmt.Errorf("stat %s: %w", filepath.Join(dir.Name(), name), err)
	}
	return st, true, nil
}

func isLink(st unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFLNK }

// removeAt removes name inside dir and, for a directory, everything in it,
// without following a link: a link is removed itself, never its target.
// A missing name is not an error.
func removeAt(dir *os.File, name string) error {
	st, ok, err := lstatAt(dir, name)
	if err != nil || !ok {
		return err
	}
	dfd := int(dir.Fd())
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		if err := unix.Unlinkat(dfd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("remove %s: %w", filepath.Join(dir.Name(), name), err)
		}
		return nil
	}
	sub, _, err := openDirAt(dir, name, false)
	if err != nil {
		return err
	}
	names, err := sub.Readdirnames(-1)
	if err == nil {
		for _, n := range names {
			if err = removeAt(sub, n); err != nil {
				break
			}
		}
	}
	sub.Close()
	if err != nil {
		return fmt.Errorf("empty %s: %w", filepath.Join(dir.Name(), name), err)
	}
	if err := unix.Unlinkat(dfd, name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("remove %s: %w", filepath.Join(dir.Name(), name), err)
	}
	return nil
}

// renameAt moves from (inside fromDir) to to (inside toDir); a link is
// moved itself, never followed.
func renameAt(fromDir *os.File, from string, toDir *os.File, to string) error {
	return unix.Renameat(int(fromDir.Fd()), from, int(toDir.Fd()), to)
}
