package fetcher

import (
	"errors"
	"fmt"
	"time"
)

// Kind classifies a failed fetch at the edge where it happened, so that the
// retry policy is decided in one place (Fetcher.fail).
type Kind string

// The failure kinds. They appear in logs and in the batch record.
const (
	// KindTransient: 429, 5xx, timeouts, dropped connections. Retried with backoff.
	KindTransient Kind = "transient"
	// KindAuth: 401/403, the API key is wrong. The batch stays queued and
	// is retried with backoff; the key needs fixing, not the batch.
	KindAuth Kind = "auth"
	// KindNotFound: 404. Retried during NOT_FOUND_GRACE after receipt
	// (results may lag the notification), then the batch is abandoned.
	KindNotFound Kind = "not_found"
	// KindRejected: any other 4xx. The request itself is wrong; the batch
	// is abandoned with the reason.
	KindRejected Kind = "rejected"
	// KindProtocol: a 200 whose page batchhook cannot read safely. Retried
	// with backoff (a configuration fix and a restart resume it).
	KindProtocol Kind = "protocol"
	// KindLocal: the disk or the database failed. Retried with backoff.
	KindLocal Kind = "local"
)

// Error is a classified fetch failure.
type Error struct {
	Kind Kind
	// Status is the HTTP status, 0 when no response arrived.
	Status int
	// RetryAfter is the provider's Retry-After, 0 when absent.
	RetryAfter time.Duration
	// URL is the requested address without its query (scheme://host/path):
	// it names what was asked for, so a wrong BATCHHOOK_API_BASE_URL shows
	// in the error, and it never carries the API key or the cursor.
	URL string
	Err error
	// restart: the pages staged so far cannot be trusted; they are
	// dropped and the batch starts again from the first page.
	restart bool
}

func (e *Error) Error() string {
	where := ""
	if e.URL != "" {
		where = " from GET " + e.URL
	}
	if e.Status != 0 {
		return fmt.Sprintf("%s (HTTP %d%s): %v", e.Kind, e.Status, where, e.Err)
	}
	if where != "" {
		return fmt.Sprintf("%s (GET %s): %v", e.Kind, e.URL, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Kind, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

func kindOf(err error) (Kind, time.Duration) {
	var fe *Error
	if errors.As(err, &fe) {
		return fe.Kind, fe.RetryAfter
	}
	return KindLocal, 0
}

// Kinds lists every Kind (the metrics start each at 0).
var Kinds = []Kind{KindTransient, KindAuth, KindNotFound, KindRejected, KindProtocol, KindLocal}
