package lookupsim

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors returned by Submit and the conveniences; the HTTP layer
// maps them to statuses in one place (writeError).
var (
	// ErrInvalid wraps every reason a request is refused with 400: a bad
	// submission body or CPF, a bad limit.
	ErrInvalid = errors.New("invalid request")
	// ErrRateLimited is matched by a *LimitError: a submission limit of
	// docs/provider-api.md §8 is exhausted.
	ErrRateLimited = errors.New("rate_limited")
	// ErrNotFound: no such batch (or, over HTTP, its retention has passed).
	ErrNotFound = errors.New("not_found")
	// ErrClosed: the Server was closed and takes no more work.
	ErrClosed = errors.New("lookupsim: server closed")
)

// LimitError says which limit refused a submission and when a retry can
// succeed, so the HTTP layer can send Retry-After.
type LimitError struct {
	// Limit is "submit_per_minute" or "max_in_flight".
	Limit string
	// RetryAfter is the wait before a retry can be accepted (at least 1 s).
	RetryAfter time.Duration
}

// Error describes the limit without any request data.
func (e *LimitError) Error() string {
	return fmt.Sprintf("rate_limited: %s exhausted, retry after %s", e.Limit, e.RetryAfter)
}

// Unwrap makes errors.Is(err, ErrRateLimited) hold.
func (e *LimitError) Unwrap() error { return ErrRateLimited }

// invalidf builds an ErrInvalid with a reason. Reasons name positions,
// never values: a CPF must not reach a client's logs through an error.
func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}
