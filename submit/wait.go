package submit

import "time"

// Why the submitter holds waiting chunks back (Wait.Reason).
const (
	// WaitRateLimit: PerMinute submissions went out in the last minute.
	WaitRateLimit = "rate_limit"
	// WaitInFlight: MaxInFlight batches are submitted or tracked and not
	// final yet; chunks go out as they finish.
	WaitInFlight = "in_flight_cap"
	// WaitBackoff: the provider refused or failed the last attempt (429,
	// 5xx, a rejected key); the next is after a backoff.
	WaitBackoff = "backoff"
)

// Wait is what holds the submitter back now, for the admin API and the
// CLI to say why a submission waits. The zero value: nothing holds it.
type Wait struct {
	Reason      string    `json:"reason,omitempty"`
	Until       time.Time `json:"until,omitzero"` // zero for WaitInFlight: it ends when batches finish
	InFlight    int       `json:"in_flight"`
	MaxInFlight int       `json:"max_in_flight"`
	PerMinute   int       `json:"per_minute"`
}

// Wait returns what holds the submitter back at its last step. Safe from
// any goroutine.
func (s *Submitter) Wait() Wait {
	w := Wait{MaxInFlight: s.o.MaxInFlight, PerMinute: s.o.PerMinute}
	if p := s.wait.Load(); p != nil {
		w.Reason, w.Until, w.InFlight = p.Reason, p.Until, p.InFlight
	}
	return w
}

// setWait records what holds the submitter back ("" = nothing).
func (s *Submitter) setWait(reason string, until time.Time, inFlight int) {
	s.wait.Store(&Wait{Reason: reason, Until: until, InFlight: inFlight})
}

// EstimateDone estimates when the last of pending chunks (the waiting ones
// ahead of and including a submission's last) goes out, from now and what
// holds the submitter back: the limiter lets PerMinute out in any minute,
// so after the first at start, the rest go in bursts a minute apart. It
// returns false when no estimate can be made: the in-flight cap holds the
// chunks until batches finish, which the provider decides.
func EstimateDone(w Wait, pending int, now time.Time) (time.Time, bool) {
	if pending <= 0 {
		return now, true
	}
	if w.Reason == WaitInFlight || w.PerMinute < 1 {
		return time.Time{}, false
	}
	start := now
	if w.Until.After(now) {
		start = w.Until
	}
	return start.Add(time.Duration((pending-1)/w.PerMinute) * time.Minute), true
}
