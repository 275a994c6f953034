package receiver

import (
	"fmt"
	"io"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// waitArrived blocks until want more bytes are queued in c's socket, without
// reading any of them. A peer that closes first gets io.ErrUnexpectedEOF. Go's
// poller calls the check again on every arrival, and the read deadline that
// http.Server set for the request still ends the wait.
//
// The kernel holds a body only up to about half its receive buffer (the
// rest is bookkeeping); past that the sender waits for us to read. So the
// wait ends once that much has arrived: bodies up to that size (64 KiB and
// more with the default buffer sizes) are read in one go, larger ones from
// there on the ordinary way.
func waitArrived(c net.Conn, want int) error {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil // not a socket we can wait on; read the ordinary way
	}
	var sockErr error
	err = raw.Read(func(fd uintptr) bool {
		queued, err := unix.IoctlGetInt(int(fd), unix.SIOCINQ)
		if err != nil {
			sockErr = fmt.Errorf("query socket receive queue: %w", err)
			return true
		}
		if queued >= want {
			return true
		}
		if rcvbuf, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF); err == nil && queued >= rcvbuf/2 {
			return true
		}
		// A peer that closed or reset will send nothing more: the body is
		// short, and no buffer is taken for it.
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
		if n, err := unix.Poll(fds, 0); err == nil && n > 0 && fds[0].Revents&(unix.POLLRDHUP|unix.POLLHUP|unix.POLLERR) != 0 {
			sockErr = io.ErrUnexpectedEOF
			return true
		}
		return false
	})
	if err != nil {
		return fmt.Errorf("wait for the rest of the body: %w", err)
	}
	return sockErr
}
