package receiver

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"
)

// Reading a webhook body without letting a stranger park memory in it.
//
// A sender that declares a 64 KiB body, sends most of it and stalls would,
// read the usual way, hold a growing buffer until the read timeout; a few
// thousand of them exhaust memory without ever passing the signature
// check. So a body of known length is left in the kernel's
// socket buffer until all of it has arrived: the handler takes what
// net/http has already buffered in one small read, then waits on the socket
// (waitArrived, which costs no buffer) and only then copies the body, in one
// go, into a pooled buffer of exactly its size. A stalled sender costs a
// goroutine and net/http's per-connection state, not a body.
//
// The provider always sends Content-Length (docs/provider-api.md §2.2). A body
// of unknown length (chunked) is read the ordinary way, but only
// unknownLengthSlots at a time, so those cannot pile up either.

const (
	// headRead is the first read: net/http's connection buffer is 4 KiB,
	// so one read of this size takes every body byte it holds.
	headRead = 4 << 10
	// unknownLengthSlots bounds chunked bodies read at once.
	unknownLengthSlots = 8
)

// errBusy means every slot for bodies of unknown length stayed taken for a
// whole read timeout; the sender is told to retry (503).
var errBusy = errors.New("too many webhook bodies of unknown length at once")

// errSenderGone means the sender closed, reset or timed out before its body
// was complete: the connection is closed without a reply.
var errSenderGone = errors.New("sender gone before the body was complete")

// senderGone reports whether a body read failed because the sender left.
func senderGone(err error) bool {
	var ne net.Error
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		(errors.As(err, &ne) && ne.Timeout())
}

// connKey is the request-context key of the request's net.Conn.
type connKey struct{}

// withConn is http.Server.ConnContext: it makes the connection reachable
// from the handler, which waits on its socket.
func withConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// buffers is a pool of byte slices in power-of-two size classes from
// headRead up, so that bodies reuse memory instead of each growing its own.
type buffers struct {
	classes []sync.Pool
}

func newBuffers(max int64) *buffers {
	n := 1
	for size := int64(headRead); size < max; size <<= 1 {
		n++
	}
	return &buffers{classes: make([]sync.Pool, n)}
}

// class returns the index of the smallest class that holds n bytes.
func class(n int) int {
	i, size := 0, headRead
	for size < n {
		i, size = i+1, size<<1
	}
	return i
}

// get returns a buffer of length n. put it back once nothing refers to it.
func (p *buffers) get(n int) *[]byte {
	i := class(n)
	if i >= len(p.classes) {
		b := make([]byte, n)
		return &b
	}
	if v, ok := p.classes[i].Get().(*[]byte); ok {
		*v = (*v)[:n]
		return v
	}
	b := make([]byte, n, headRead<<i)
	return &b
}

func (p *buffers) put(b *[]byte) {
	if b == nil {
		return
	}
	i := class(cap(*b))
	if i < len(p.classes) && cap(*b) == headRead<<i {
		p.classes[i].Put(b)
	}
}

// readBody reads the body into a pooled buffer; the caller puts it back.
// A declared or actual body over MaxBodyBytes is refused with
// *http.MaxBytesError without reading the rest.
func (s *Server) readBody(req *http.Request) (*[]byte, error) {
	cl := req.ContentLength
	switch {
	case cl > s.opts.MaxBodyBytes:
		return nil, &http.MaxBytesError{Limit: s.opts.MaxBodyBytes}
	case cl < 0:
		return s.readUnknownLength(req)
	case cl == 0:
		return s.bufs.get(0), nil
	}
	size := int(cl)
	head := s.bufs.get(min(size, headRead))
	n, err := req.Body.Read(*head)
	if err == io.EOF && n < size {
		err = io.ErrUnexpectedEOF
	}
	if err != nil && err != io.EOF {
		s.bufs.put(head)
		return nil, err
	}
	if n == size {
		return head, nil
	}
	// Every byte still to come is in the socket or on its way: wait until
	// it has all arrived before taking a buffer for it.
	if conn, ok := req.Context().Value(connKey{}).(net.Conn); ok {
		if err := waitArrived(conn, size-n); err != nil {
			s.bufs.put(head)
			return nil, err
		}
	}
	body := head
	if size > len(*head) {
		body = s.bufs.get(size)
		copy(*body, (*head)[:n])
		s.bufs.put(head)
	}
	if _, err := io.ReadFull(req.Body, (*body)[n:size]); err != nil {
		s.bufs.put(body)
		return nil, err
	}
	return body, nil
}

// readUnknownLength reads a body without Content-Length through one of a
// few slots, capped at MaxBodyBytes.
func (s *Server) readUnknownLength(req *http.Request) (*[]byte, error) {
	timer := time.NewTimer(s.opts.Limits.ReadTimeout)
	defer timer.Stop()
	select {
	case s.unknownSlots <- struct{}{}:
	case <-timer.C:
		return nil, errBusy
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
	defer func() { <-s.unknownSlots }()
	max := int(s.opts.MaxBodyBytes)
	body := s.bufs.get(max + 1)
	n, err := io.ReadFull(req.Body, *body)
	switch {
	case err == nil:
		s.bufs.put(body)
		return nil, &http.MaxBytesError{Limit: s.opts.MaxBodyBytes}
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		*body = (*body)[:n]
		return body, nil
	default:
		s.bufs.put(body)
		return nil, err
	}
}
