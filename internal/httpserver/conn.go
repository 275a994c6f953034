package httpserver

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"
)

// Refused is told the peer's address (ip:port) of each connection whose
// request named both Content-Length and Transfer-Encoding (or, before
// HTTP/1.1, Transfer-Encoding at all). It is called on
// the connection's reading goroutine, so it must not block.
type Refused func(remoteAddr string)

// refuseAmbiguous wraps ln so that each connection's bytes pass through a
// framing check on their way to net/http (framing.go). Nothing is
// buffered: a body not yet read stays in the socket, where the receiver
// waits for it (waitArrived), so the connections keep their socket
// (SyscallConn) and net/http's half-close (CloseWrite).
func refuseAmbiguous(ln net.Listener, refused Refused) net.Listener {
	return &framingListener{Listener: ln, refused: refused}
}

type framingListener struct {
	net.Listener
	refused Refused
}

func (l *framingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &framingConn{Conn: c, refused: l.refused}, nil
}

// lingerFor and lingerBytes bound how long, and how much, a refused
// connection reads and drops after its 400 before it closes: what the
// client sent past the refused header block would otherwise sit unread,
// and closing a socket with unread bytes sends a reset that can destroy
// the 400 before the client reads it.
const (
	lingerFor   = 500 * time.Millisecond
	lingerBytes = 256 << 10
)

// framingConn passes what it reads through its framing; once a request is
// refused, it gives net/http nothing more (io.EOF).
type framingConn struct {
	net.Conn
	refused Refused
	mu      sync.Mutex // one Read at a time through f
	f       framing
	done    atomic.Bool // a request was refused
	closing atomic.Bool
}

func (c *framingConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	if c.f.refused() {
		c.mu.Unlock()
		return 0, io.EOF
	}
	n, err := c.Conn.Read(p)
	used, refused := c.f.feed(p[:n])
	c.mu.Unlock()
	if !refused {
		return n, err
	}
	c.done.Store(true)
	if c.refused != nil {
		c.refused(c.Conn.RemoteAddr().String())
	}
	return used, nil
}

// Close lingers on a refused connection (see lingerFor) before closing
// it. A second Close, from a server shutting down, ends the linger.
func (c *framingConn) Close() error {
	if c.done.Load() && c.closing.CompareAndSwap(false, true) {
		_ = c.CloseWrite()
		if c.Conn.SetReadDeadline(time.Now().Add(lingerFor)) == nil {
			var buf [512]byte
			for left := lingerBytes; left > 0; {
				n, err := c.Conn.Read(buf[:])
				if err != nil {
					break
				}
				left -= n
			}
		}
	}
	return c.Conn.Close()
}

// CloseWrite keeps net/http's graceful close (it half-closes TCP
// connections before closing them).
func (c *framingConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// SyscallConn exposes the socket, so a handler can wait on it.
func (c *framingConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errors.New("connection has no socket")
}

// EventAmbiguous is the event of the line logged for a refused request.
const EventAmbiguous = "http_ambiguous_framing"

// LogRefused returns a Refused that calls count (nil = none) and writes
// one warning to log, which must be sampled: anyone who reaches the
// listener can cause it. The line names the listener and the peer, never
// a header's value.
func LogRefused(log zerolog.Logger, listener string, count func()) Refused {
	return func(remoteAddr string) {
		if count != nil {
			count()
		}
		log.Warn().Str("event", EventAmbiguous).Str("listener", listener).Str("remote_addr", remoteAddr).
			Msg("a request named both Content-Length and Transfer-Encoding, or Transfer-Encoding before HTTP/1.1: answered 400 and the connection closed, nothing after it read")
	}
}
