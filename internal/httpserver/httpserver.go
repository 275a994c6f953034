// Package httpserver runs an http.Server in the background on a listener
// the caller bound, and stops it within a deadline. The webhook receiver and
// the admin API share it, so both bind synchronously ("address in use" is a
// returned error) and stop the same way.
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
	name string
	http *http.Server
	done chan error
}

// New returns a Server for srv; name appears in errors ("admin listener").
func New(name string, srv *http.Server) *Server { return &Server{name: name, http: srv} }

// Serve serves on ln in the background until Shutdown.
func (s *Server) Serve(ln net.Listener) {
	s.done = make(chan error, 1)
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
