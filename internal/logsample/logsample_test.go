package logsample

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/internal/testutil"
)

type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) drop(event string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[event]++
}

// Events that share a Sampler share its budget; every line over it is
// counted under its own event, and none is lost from the count.
func TestSharedBudgetAndDroppedCount(t *testing.T) {
	out := &testutil.SyncBuffer{}
	base := zerolog.New(out)
	c := &counter{n: map[string]int{}}
	s := New(5, time.Hour, c.drop)
	a, b := s.Logger(base, "a"), s.Logger(base, "b")
	for i := 0; i < 30; i++ {
		a.Warn().Str("event", "a").Msg("x")
		b.Warn().Str("event", "b").Msg("x")
	}
	s.ErrorLog(base, "http_server_error").Printf("http: Accept error: too many open files; retrying in 5ms")
	written := strings.Count(out.String(), "\n")
	if written != 5 {
		t.Fatalf("%d lines written, want the burst of 5", written)
	}
	total := c.n["a"] + c.n["b"] + c.n["http_server_error"] + written
	if total != 61 || c.n["http_server_error"] != 1 {
		t.Fatalf("dropped %v and wrote %d, want every one of 61 lines accounted for", c.n, written)
	}
}

// A line below the logger's level is neither written nor counted.
func TestLevelFilteredLinesAreNotCounted(t *testing.T) {
	c := &counter{n: map[string]int{}}
	s := New(1, time.Hour, c.drop)
	l := s.Logger(zerolog.New(&testutil.SyncBuffer{}).Level(zerolog.ErrorLevel), "a")
	for i := 0; i < 10; i++ {
		l.Warn().Msg("x")
	}
	if c.n["a"] != 0 {
		t.Fatalf("%d filtered lines counted as dropped", c.n["a"])
	}
}

// The ErrorLog line carries the event and the message.
func TestErrorLogLine(t *testing.T) {
	out := &testutil.SyncBuffer{}
	New(5, time.Second, nil).ErrorLog(zerolog.New(out), "http_server_error").Printf("http: TLS handshake error from 1.2.3.4:5: EOF\n")
	if got := out.String(); !strings.Contains(got, `"event":"http_server_error"`) || !strings.Contains(got, `"error":"http: TLS handshake error from 1.2.3.4:5: EOF"`) {
		t.Fatalf("line %s", got)
	}
}
