// Package sink is the vocabulary of downstream delivery: what a
// sink is given (one complete, published export), what it answers
// (delivered, retry later, or a permanent failure) and how a sink that
// delivers in parts records its progress. Each sink lives in a package of
// its own below this one (sink/httpsink, sink/execsink, …) and is the only
// importer of its library; the dispatcher (sink/dispatch) drives them from
// the outboxes in the store. This package imports nothing of batchhook's,
// so every side can depend on it.
//
// A sink reads only published exports: the fetcher's staging area is never
// visible here, so no sink ever sees half-fetched pages.
package sink

import (
	"context"
	"io"
	"strconv"
	"strings"
	"time"
)

// Outcome is how one delivery attempt ended.
type Outcome int

// The outcomes of Deliver.
const (
	// Delivered: the destination has the whole export (every part).
	Delivered Outcome = iota
	// Retry: a transient failure (timeout, connection refused, 429, 5xx,
	// EX_TEMPFAIL); the dispatcher tries again after a backoff, at least
	// RetryAfter when the destination asked for it (capped by BACKOFF_MAX).
	Retry
	// Failed: the destination refused the export for good (a 4xx other
	// than 408/429, a non-zero exit other than 75); never retried
	// automatically, only on an operator's redeliver.
	Failed
)

func (o Outcome) String() string {
	switch o {
	case Delivered:
		return "delivered"
	case Retry:
		return "retry"
	case Failed:
		return "failed"
	}
	return "unknown"
}

// Result is the answer of one Deliver call.
type Result struct {
	Outcome Outcome
	// Kind classifies the failure for logs and metrics (for example
	// "status", "timeout", "connection", "exit", "signal", "local").
	Kind string
	// Reason says what went wrong. It never holds an item, a CPF, a
	// secret or a signature: it reaches logs and the admin API.
	Reason string
	// RetryAfter is the destination's own wish (a Retry-After header);
	// zero when it said nothing.
	RetryAfter time.Duration
}

// Export is one published export as a sink sees it. The dispatcher builds
// it from the export directory after checking the manifest against
// results.ndjson.
type Export struct {
	BatchID string
	// Status is the batch's final status (completed, partial, expired,
	// failed).
	Status string
	// Dir is the absolute path of the published export directory
	// (manifest.json and results.ndjson).
	Dir string
	// Manifest is manifest.json exactly as published.
	Manifest []byte
	// Items is the number of items (lines of results.ndjson).
	Items int64
	// ExportedAt is the manifest's exported_at.
	ExportedAt time.Time
	// Version is the manifest's: 0 for a batch's first export, and each
	// change of its content (a refetch that replaced it, an erasure that
	// rewrote it) made the next. Message ids carry it (IDBase) so that a
	// receiver deduplicating on ids takes a new version as new; a retry or
	// a redeliver of the same version keeps its ids.
	Version int
	// OpenItems opens results.ndjson: one compact JSON item a line,
	// "\n"-terminated, in provider order; the file the dispatcher checked
	// against Manifest, whatever replaced it since. The caller closes it.
	OpenItems func() (io.ReadCloser, error)
}

// IDBase is how every message id of one version of an export begins: the
// batch id with each "%" and ":" percent-encoded ("%25", "%3A"), then
// ":r<version>" from version 1 on. A sink appends ":" and the part. The
// encoding keeps ids apart: batch "b_1" at version 1 and a batch named
// "b_1:r1" would both begin "b_1:r1" without it. An id without "%" or ":"
// is written as it is.
func IDBase(batchID string, version int) string {
	id := batchID
	if strings.ContainsAny(id, "%:") {
		id = strings.NewReplacer("%", "%25", ":", "%3A").Replace(id)
	}
	if version > 0 {
		return id + ":r" + strconv.Itoa(version)
	}
	return id
}

// Progress records how far a delivery in parts got, durably, so that a
// part already delivered is not sent again after a crash or a retry.
type Progress interface {
	// Done returns how many parts (counted from 1, in order) are already
	// delivered; 0 on a first attempt or after a redeliver.
	Done() int
	// Mark records that parts 1..n are delivered. It returns only after
	// the record is durable; an error means it is not, and the sink
	// should answer Retry (the part may then be sent twice, which the
	// receiver's deduplication on message ids absorbs).
	Mark(n int) error
}

// Sink delivers complete exports to one destination.
type Sink interface {
	// Name is the sink's name in BATCHHOOK_SINKS (http, exec, kafka, nats).
	Name() string
	// Deliver sends one export. It must honour ctx (the dispatcher
	// cancels it at shutdown: answer Retry) and must be safe to call
	// again for the same export after any outcome or a crash.
	Deliver(ctx context.Context, e Export, p Progress) Result
}
