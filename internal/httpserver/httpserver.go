// Package httpserver runs an http.Server in the background on a listener
// the caller bound, and stops it within a deadline. Every listener of the
// daemon (the webhook receiver, the admin API, the profiles) shares it, so
// all bind synchronously ("address in use" is a returned error), stop the
// same way, and refuse a request that carries both Content-Length and
// Transfer-Encoding (framing.go): 400, and the connection closed.
package httpserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
)

// Server wraps an http.Server with its serving goroutine.
type Server struct {
	name    string
	http    *http.Server
	refused Refused
	done    chan error
}

// New returns a Server for srv; name appears in errors ("admin listener").
// refused, when not nil, is told of each request refused for naming both
// Content-Length and Transfer-Encoding, to count and log it.
func New(name string, srv *http.Server, refused Refused) *Server {
	return &Server{name: name, http: srv, refused: refused}
}

// Serve serves on ln in the background until Shutdown. A request whose
// header block names both Content-Length and Transfer-Encoding, in any
// spelling, never reaches srv whole: net/http answers it 400 and closes
// the connection, and nothing sent after it on that connection is read as
// a request.
func (s *Server) Serve(ln net.Listener) {
	s.done = make(chan error, 1)
	ln = refuseAmbiguous(ln, s.refused)
	go func() {
		err := s.http.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.done <- err
	}()
}

// Shutdown stops accepting, waits for in-flight requests until ctx ends,
// then closes what remains. It is safe to call more than once.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.http.Shutdown(ctx)
	if err != nil {
		s.http.Close()
	}
	if s.done != nil {
		if serr := <-s.done; serr != nil && err == nil {
			err = serr
		}
		s.done = nil
	}
	if err != nil {
		return fmt.Errorf("shut down %s: %w", s.name, err)
	}
	return nil
}
