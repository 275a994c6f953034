package export

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ErrUnsafePath is returned when an entry under the export root is a
// symbolic link, or not the kind of entry expected (a directory where a
// directory belongs, a regular file with one link where a file belongs).
// batchhook never follows a link there: a planted one must not make it write
// personal data outside the root, or publish files it did not write.
var ErrUnsafePath = errors.New("refusing to follow a symbolic link or use an unexpected file type under the export root")

// Every entry under the root is reached from an open directory one name at
// a time with O_NOFOLLOW: no symbolic link is followed at any step. That is
// what openat2's RESOLVE_NO_SYMLINKS gives, on every kernel; RESOLVE_BENEATH
// would add nothing, since every name is one validated component (a batch
// id has no "/" and cannot be "." or "..").
const (
	dirFlags  = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fileFlags = unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NONBLOCK // NONBLOCK: a planted FIFO must not hang the open
	dirMode   = 0o700
	fileMode  = 0o600
)

// openDirAt opens the directory name inside parent without following a
// link; with create it makes it (0700, whatever the umask) when missing.
// A missing directory without create is an error matching os.ErrNotExist.
func openDirAt(parent *os.File, name string, create bool) (f *os.File, created bool, err error) {
	path := filepath.Join(parent.Name(), name)
	pfd := int(parent.Fd())
	fd, err := unix.Openat(pfd, name, dirFlags, 0)
	if errors.Is(err, unix.ENOENT) && create {
		if err := unix.Mkdirat(pfd, name, dirMode); err != nil && !errors.Is(err, unix.EEXIST) {
			return nil, false, fmt.Errorf("create %s: %w", path, err)
		}
		created = true
		fd, err = unix.Openat(pfd, name, dirFlags, 0)
	}
	if err != nil {
		return nil, false, pathError("open directory", path, err)
	}
	f = os.NewFile(uintptr(fd), path)
	if created {
		if err := unix.Fchmod(fd, dirMode); err != nil {
			f.Close()
			return nil, false, fmt.Errorf("chmod %s: %w", path, err)
		}
	}
	return f, created, nil
}

// openFileAt opens the regular file name inside dir with flag (os.O_RDONLY,
// os.O_RDWR|os.O_CREATE, …) without following a link. A file it may have
// created is set to 0600 whatever the umask. It refuses anything but a
// regular file with a single link: a hard link planted in staging would
// otherwise carry the results to wherever its other name lives.
func openFileAt(dir *os.File, name string, flag int) (*os.File, error) {
	return openAt(dir, name, flag, false)
}

// openReadAt opens a published export's file name inside dir for reading,
// without following a link, and allows other hard links to it: a
// downstream reader or a backup tool may hard-link a published export, and
// reading it is harmless (refusing it would make its batch retry for ever).
func openReadAt(dir *os.File, name string) (*os.File, error) {
	return openAt(dir, name, os.O_RDONLY, true)
}

func openAt(dir *os.File, name string, flag int, linked bool) (*os.File, error) {
	path := filepath.Join(dir.Name(), name)
	fd, err := unix.Openat(int(dir.Fd()), name, flag|fileFlags, fileMode)
	if err != nil {
		return nil, pathError("open", path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("stat %s: %w", path, err)
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		unix.Close(fd)
		return nil, fmt.Errorf("%s is not a regular file: %w", path, ErrUnsafePath)
	case st.Nlink > 1 && !linked:
		unix.Close(fd)
		return nil, fmt.Errorf("%s has %d hard links: %w", path, st.Nlink, ErrUnsafePath)
	}
	if flag&os.O_CREATE != 0 && st.Mode&0o777 != fileMode {
		if err := unix.Fchmod(fd, fileMode); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("chmod %s: %w", path, err)
		}
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return os.NewFile(uintptr(fd), path), nil
}

// pathError names what an open found: a link (ELOOP with O_NOFOLLOW), or
// a file where a directory belongs, as ErrUnsafePath; a missing entry
// keeps matching os.ErrNotExist.
func pathError(op, path string, err error) error {
	switch {
	case errors.Is(err, unix.ELOOP):
		return fmt.Errorf("%s is a symbolic link: %w", path, ErrUnsafePath)
	case errors.Is(err, unix.ENOTDIR):
		return fmt.Errorf("%s is not a directory: %w", path, ErrUnsafePath)
	}
	return &os.PathError{Op: op, Path: path, Err: err}
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
