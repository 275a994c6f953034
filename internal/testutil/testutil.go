// Package testutil holds helpers shared by tests. It is imported only from
// _test.go files.
package testutil

import (
	"bytes"
	"sync"
)

// SyncBuffer is a bytes.Buffer safe for one writer goroutine (a logger or a
// child process) and concurrent readers (the test).
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
