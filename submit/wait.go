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
	// ErrorKind, LastError and Hint describe the last attempt the provider
	// did not accept, until one is settled (accepted, or the chunk given
	// up): its Outcome (auth, rate_limited, server_error, not_sent), the
	// chunk's reason, and what an operator can do about it.
	ErrorKind string `json:"error_kind,omitempty"`
	LastError string `json:"last_error,omitempty"`
	Hint      string `json:"hint,omitempty"`
}

// Wait returns what holds the submitter back at its last step. Safe from
// any goroutine.
func (s *Submitter) Wait() Wait {
	w := Wait{MaxInFlight: s.o.MaxInFlight, PerMinute: s.o.PerMinute}
	if p := s.wait.Load(); p != nil {
		w.Reason, w.Until, w.InFlight = p.Reason, p.Until, p.InFlight
		w.ErrorKind, w.LastError, w.Hint = p.ErrorKind, p.LastError, p.Hint
	}
	return w
}

// setWait records what holds the submitter back ("" = nothing), with the
// last attempt the provider did not accept, if one is still unsettled: the
// rate limit or a send in progress may follow a refused key, and the
// operator must still be told about the key.
func (s *Submitter) setWait(reason string, until time.Time, inFlight int) {
	w := &Wait{Reason: reason, Until: until, InFlight: inFlight}
	if f := s.lastFail; f.Outcome != "" {
		w.ErrorKind, w.LastError, w.Hint = string(f.Outcome), f.Reason, Hint(f.Outcome)
	}
	s.wait.Store(w)
}

// EstimateDone estimates when the last of pending chunks (the waiting ones
// ahead of and including a submission's last) goes out, from now and what
// holds the submitter back: the limiter lets PerMinute out in any minute,
// so after the first at start, the rest go in bursts a minute apart. It
// returns false when no estimate can be made: the in-flight cap holds the
// chunks until batches finish, which the provider decides, and a refused
// API key holds them until an operator replaces it.
func EstimateDone(w Wait, pending int, now time.Time) (time.Time, bool) {
	if pending <= 0 {
		return now, true
	}
	if w.Reason == WaitInFlight || w.ErrorKind == string(OutcomeAuth) || w.PerMinute < 1 {
		return time.Time{}, false
	}
	start := now
	if w.Until.After(now) {
		start = w.Until
	}
	return start.Add(time.Duration((pending-1)/w.PerMinute) * time.Minute), true
}
