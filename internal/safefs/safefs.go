// Package safefs opens entries below a root directory without following a
// symbolic link at any step: every name is opened from an open directory,
// one component at a time, with O_NOFOLLOW. That is what openat2's
// RESOLVE_NO_SYMLINKS gives, on every kernel. The exports (export) and the
// payments day files (sink/filesink) both hold personal data below
// EXPORT_DIR and share it; it imports nothing of batchhook, so a sink may
// use it without depending on the store.
package safefs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ErrUnsafePath: an entry is a symbolic link, or not the kind expected (a
// directory where a directory belongs, a regular file with one link where a
// file belongs). A planted link must not make batchhook write personal data
// outside the root, or publish files it did not write.
var ErrUnsafePath = errors.New("refusing to follow a symbolic link or use an unexpected file type under the export root")

// Flags and modes of every open and every entry made.
const (
	dirFlags  = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fileFlags = unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NONBLOCK // NONBLOCK: a planted FIFO must not hang the open
	// DirMode and FileMode are the modes of what batchhook makes: personal
	// data, readable by its user only, whatever the umask.
	DirMode  = 0o700
	FileMode = 0o600
)

// OpenDirAt opens the directory name inside parent without following a
// link; with create it makes it (DirMode, whatever the umask) when
// missing, and created says so. A directory it made is durable when it
// returns: parent is fsynced first, since a power cut keeps a new entry
// only once its directory is, and with it everything the caller then
// writes below. A missing directory without create is an error matching
// os.ErrNotExist.
func OpenDirAt(parent *os.File, name string, create bool) (f *os.File, created bool, err error) {
	return openDirAt(parent, name, create, syncFile)
}

// openDirAt is OpenDirAt with the fsync of parent (tests record it).
func openDirAt(parent *os.File, name string, create bool, sync func(*os.File) error) (f *os.File, created bool, err error) {
	path := filepath.Join(parent.Name(), name)
	pfd := int(parent.Fd())
	fd, err := unix.Openat(pfd, name, dirFlags, 0)
	if errors.Is(err, unix.ENOENT) && create {
		if err := unix.Mkdirat(pfd, name, DirMode); err != nil && !errors.Is(err, unix.EEXIST) {
			return nil, false, fmt.Errorf("create %s: %w", path, err)
		}
		created = true
		fd, err = unix.Openat(pfd, name, dirFlags, 0)
	}
	if errors.Is(err, unix.ENOTDIR) && isLinkAt(pfd, name) {
		// O_DIRECTORY|O_NOFOLLOW on a link fails with ENOTDIR, not
		// ELOOP: say what is there.
		err = unix.ELOOP
	}
	if err != nil {
		return nil, false, pathError("open directory", path, err)
	}
	f = os.NewFile(uintptr(fd), path)
	if created {
		if err := unix.Fchmod(fd, DirMode); err != nil {
			f.Close()
			return nil, false, fmt.Errorf("chmod %s: %w", path, err)
		}
		if err := sync(parent); err != nil {
			f.Close()
			return nil, false, fmt.Errorf("make %s durable: %w", path, err)
		}
	}
	return f, created, nil
}

// OpenFileAt opens the regular file name inside dir with flag (os.O_RDONLY,
// os.O_RDWR|os.O_CREATE, …) without following a link; created reports
// whether this call made it. A file opened with os.O_CREATE is set to
// FileMode whatever the umask (and fixed if it was not). It refuses
// anything but a regular file, and, unless linked, a file with more than
// one link: a planted hard link would carry the data to wherever its other
// name lives. linked is for reading published files, which a downstream
// reader or a backup tool may hard-link.
func OpenFileAt(dir *os.File, name string, flag int, linked bool) (f *os.File, created bool, err error) {
	path := filepath.Join(dir.Name(), name)
	dfd := int(dir.Fd())
	fd, err := unix.Openat(dfd, name, (flag&^os.O_CREATE)|fileFlags, 0)
	if errors.Is(err, unix.ENOENT) && flag&os.O_CREATE != 0 {
		fd, err = unix.Openat(dfd, name, flag|unix.O_EXCL|fileFlags, FileMode)
		created = err == nil
		if errors.Is(err, unix.EEXIST) { // made meanwhile: open it as it is
			fd, err = unix.Openat(dfd, name, (flag&^os.O_CREATE)|fileFlags, 0)
		}
	}
	if err != nil {
		return nil, false, pathError("open", path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, false, fmt.Errorf("stat %s: %w", path, err)
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		unix.Close(fd)
		return nil, false, fmt.Errorf("%s is not a regular file: %w", path, ErrUnsafePath)
	case st.Nlink > 1 && !linked:
		unix.Close(fd)
		return nil, false, fmt.Errorf("%s has %d hard links: %w", path, st.Nlink, ErrUnsafePath)
	}
	if flag&os.O_CREATE != 0 && (created || st.Mode&0o777 != FileMode) {
		if err := unix.Fchmod(fd, FileMode); err != nil {
			unix.Close(fd)
			return nil, false, fmt.Errorf("chmod %s: %w", path, err)
		}
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, false, fmt.Errorf("open %s: %w", path, err)
	}
	return os.NewFile(uintptr(fd), path), created, nil
}

// isLinkAt reports whether name inside the directory dfd is a symbolic
// link.
func isLinkAt(dfd int, name string) bool {
	var st unix.Stat_t
	return unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK
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
