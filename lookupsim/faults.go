package lookupsim

import (
	"fmt"
	"net/http"
	"time"
)

// Faults injects the provider misbehaviour a client must absorb. The GET
// faults apply to authenticated GET /api/v1/batches/{id} requests, whatever
// the batch or its state, in this order: FailGETs first, then DropGETs;
// SlowPage delays every GET that is answered normally.
type Faults struct {
	// FailGETs is how many of the next GETs answer FailStatus instead of
	// the page. The count is consumed as requests arrive.
	FailGETs int
	// FailStatus is 500 (or another 5xx) or 429; 0 means 500.
	FailStatus int
	// RetryAfter goes with 429s as Retry-After in whole seconds, rounded
	// up, at least 1.
	RetryAfter time.Duration
	// DropGETs is how many GETs after the FailGETs ones have their
	// connection closed without any response. A client transport may
	// transparently retry a GET on a reused connection, so one client call
	// can consume two of them.
	DropGETs int
	// SlowPage is how long each GET waits before answering; the wait ends
	// early when the client goes away.
	SlowPage time.Duration
	// DuplicateDeliveries is how many times a webhook is delivered again
	// after its first acknowledged delivery, with rising attempt numbers,
	// so receivers prove they deduplicate on batch_id.
	DuplicateDeliveries int
	// DropNotifications stops webhooks from being sent for batches that
	// become final while it is set (they are still processed), so clients
	// prove they can poll.
	DropNotifications bool

	// DuplicatePaymentDeliveries is DuplicateDeliveries for payment
	// webhooks: each acknowledged payment event is delivered again N times,
	// with rising attempt numbers, so receivers prove they deduplicate.
	DuplicatePaymentDeliveries int
	// SignPaymentsWithBatchSecret signs payment webhooks with the batch
	// product's SigningSecret (or, when none is set, a fixed key that is
	// not the payments secret), so a receiver proves it keeps the two
	// products' secrets apart. It applies to events triggered while set.
	SignPaymentsWithBatchSecret bool
	// DropPaymentNotifications: simulations still move transactions on,
	// but no payment webhook is sent for them.
	DropPaymentNotifications bool
}

// normalized checks f and fills FailStatus's default.
func (f Faults) normalized() (Faults, error) {
	if f.FailGETs < 0 || f.DropGETs < 0 || f.DuplicateDeliveries < 0 || f.DuplicatePaymentDeliveries < 0 || f.SlowPage < 0 || f.RetryAfter < 0 {
		return f, fmt.Errorf("lookupsim: fault counts and durations must not be negative")
	}
	if f.FailStatus == 0 {
		f.FailStatus = http.StatusInternalServerError
	}
	if f.FailStatus != http.StatusTooManyRequests && (f.FailStatus < 500 || f.FailStatus > 599) {
		return f, fmt.Errorf("lookupsim: FailStatus %d must be 429 or 5xx", f.FailStatus)
	}
	return f, nil
}

// SetFaults replaces the fault knobs while the Server runs; the FailGETs
// and DropGETs counts start again from the values given. It is safe to
// call concurrently with requests.
func (s *Server) SetFaults(f Faults) error {
	f, err := f.normalized()
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.faults = f
	s.mu.Unlock()
	return nil
}

// Faults returns the knobs in force, with FailGETs and DropGETs counting
// what is left to inject.
func (s *Server) Faults() Faults {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.faults
}

// getFault is what the fault knobs decide for one GET.
type getFault struct {
	status     int           // non-zero: answer this status
	retryAfter time.Duration // with status 429
	drop       bool          // close the connection
	slow       time.Duration // wait before answering normally
}

// nextGETFault consumes one GET's share of the fault counts.
func (s *Server) nextGETFault() getFault {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := &s.faults
	switch {
	case f.FailGETs > 0:
		f.FailGETs--
		s.stats.GETFaults++
		return getFault{status: f.FailStatus, retryAfter: f.RetryAfter}
	case f.DropGETs > 0:
		f.DropGETs--
		s.stats.Dropped++
		return getFault{drop: true}
	}
	return getFault{slow: f.SlowPage}
}

// dropConnection closes the client's connection without a response. When
// the connection cannot be hijacked (HTTP/2), aborting the handler resets
// the stream, which the client sees the same way.
func dropConnection(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}

// retryAfterSeconds renders d as a Retry-After value: whole seconds,
// rounded up, at least 1.
func retryAfterSeconds(d time.Duration) string {
	secs := int64((d + time.Second - 1) / time.Second)
	if secs < 1 {
		secs = 1
	}
	return fmt.Sprint(secs)
}
