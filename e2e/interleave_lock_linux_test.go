//go:build linux

package e2e

import (
	"os"

	"golang.org/x/sys/unix"
)

// fsImmutable is FS_IMMUTABLE_FL, the flag chattr +i sets.
const fsImmutable = 0x10

// setImmutable sets or clears a file's immutable attribute, which keeps
// even root from unlinking it: a disk that refuses a delete. It needs
// CAP_LINUX_IMMUTABLE and a file system that has the attribute (ext4,
// xfs, btrfs); elsewhere it returns the error.
func setImmutable(path string, on bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	flags, err := unix.IoctlGetInt(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if err != nil {
		return err
	}
	if on {
		flags |= fsImmutable
	} else {
		flags &^= fsImmutable
	}
	return unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, flags)
}

func isImmutable(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	flags, err := unix.IoctlGetInt(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	return err == nil && flags&fsImmutable != 0
}
