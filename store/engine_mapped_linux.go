package store

import "syscall"

// dontNeed is madvise(addr, length, MADV_DONTNEED). On a shared file
// mapping it only unmaps the pages: their contents stay in the file and
// the page cache (madvise(2)).
func dontNeed(addr, length uintptr) error {
	if length == 0 {
		return nil
	}
	if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, addr, length, syscall.MADV_DONTNEED); errno != 0 {
		return errno
	}
	return nil
}
