package submit

import (
	"slices"
	"time"
)

// Limiter enforces the provider's submission rate: at most perWindow
// submissions in any rolling window (docs/provider-api.md §8: 10 per minute). It keeps
// the times of the last perWindow sends, so the rule is exact rather than
// a token-bucket approximation that could allow 11 in some 60 s. It is not
// safe for concurrent use: the submitter is one goroutine.
type Limiter struct {
	perWindow int
	window    time.Duration
	sent      []time.Time // ascending, at most perWindow
}

// NewLimiter returns a limiter that remembers recent, the send times a
// previous run recorded (so that a restart does not allow a second burst).
func NewLimiter(perWindow int, window time.Duration, recent []time.Time) *Limiter {
	l := &Limiter{perWindow: perWindow, window: window}
	recent = slices.Clone(recent)
	slices.SortFunc(recent, func(a, b time.Time) int { return a.Compare(b) })
	for _, t := range recent {
		l.Record(t)
	}
	return l
}

// Next returns the earliest time at or after now when one more send stays
// within the limit.
func (l *Limiter) Next(now time.Time) time.Time {
	if len(l.sent) < l.perWindow {
		return now
	}
	// The oldest of the last perWindow sends must leave the window first.
	if at := l.sent[0].Add(l.window); at.After(now) {
		return at
	}
	return now
}

// Record notes a send at t.
func (l *Limiter) Record(t time.Time) {
	l.sent = append(l.sent, t)
	if len(l.sent) > l.perWindow {
		l.sent = l.sent[len(l.sent)-l.perWindow:]
	}
}
