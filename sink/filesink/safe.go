package filesink

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ErrUnsafePath: an entry of EXPORT_DIR/payments is a symbolic link, or not
// the kind expected (a directory for payments/, a regular file with one
// link for a day file). The sink never follows a link there: a planted one
// must not make it write payment bodies outside the export root.
var ErrUnsafePath = errors.New("refusing to follow a symbolic link or use an unexpected file type under the export root")

// Every name below the export root is opened from an open directory, one
// component at a time, with O_NOFOLLOW (the technique of export/safe.go,
// which this package cannot import: a sink must not depend on the store).
const (
	dirFlags  = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fileFlags = unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NONBLOCK // a planted FIFO must not hang the open
	dirMode   = 0o700
	fileMode  = 0o600
)

// openDirAt opens (and with create makes, 0700) the directory name inside
// parent without following a link.
func openDirAt(parent *os.File, name string, create bool) (*os.File, error) {
	path := filepath.Join(parent.Name(), name)
	pfd := int(parent.Fd())
	fd, err := unix.Openat(pfd, name, dirFlags, 0)
	created := false
	if errors.Is(err, unix.ENOENT) && create {
		if err := unix.Mkdirat(pfd, name, dirMode); err != nil && !errors.Is(err, unix.EEXIST) {
			return nil, fmt.Errorf("create %s: %w", path, err)
		}
		created = true
		fd, err = unix.Openat(pfd, name, dirFlags, 0)
	}
	if err != nil {
		return nil, pathError("open directory", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	if created {
		if err := unix.Fchmod(fd, dirMode); err != nil {
			f.Close()
			return nil, fmt.Errorf("chmod %s: %w", path, err)
		}
		if err := parent.Sync(); err != nil {
			f.Close()
			return nil, fmt.Errorf("sync %s: %w", parent.Name(), err)
		}
	}
	return f, nil
}

// openFileAt opens the regular file name inside dir with flag, without
// following a link, and refuses anything but a regular file with one link
// (a planted hard link would carry the bodies to its other name). A file
// it may have created is set to 0600 whatever the umask; created reports
// whether it did not exist before.
func openFileAt(dir *os.File, name string, flag int) (f *os.File, created bool, err error) {
	path := filepath.Join(dir.Name(), name)
	dfd := int(dir.Fd())
	fd, err := unix.Openat(dfd, name, (flag&^os.O_CREATE)|fileFlags, 0)
	if errors.Is(err, unix.ENOENT) && flag&os.O_CREATE != 0 {
		fd, err = unix.Openat(dfd, name, flag|unix.O_EXCL|fileFlags, fileMode)
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
	case st.Nlink > 1:
		unix.Close(fd)
		return nil, false, fmt.Errorf("%s has %d hard links: %w", path, st.Nlink, ErrUnsafePath)
	}
	if created {
		if err := unix.Fchmod(fd, fileMode); err != nil {
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

// pathError names a link (ELOOP under O_NOFOLLOW) or a file where a
// directory belongs as ErrUnsafePath; a missing entry keeps matching
// os.ErrNotExist.
func pathError(op, path string, err error) error {
	switch {
	case errors.Is(err, unix.ELOOP):
		return fmt.Errorf("%s is a symbolic link: %w", path, ErrUnsafePath)
	case errors.Is(err, unix.ENOTDIR):
		return fmt.Errorf("%s is not a directory: %w", path, ErrUnsafePath)
	}
	return &os.PathError{Op: op, Path: path, Err: err}
}
