package receiver

import (
	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/internal/netval"
)

// reqLog writes a request's log lines with the fields they all carry
// (request_id, remote_addr, delivery_attempt, proxy_addr and product when
// set, then batch_id or the payment's body_sha256 and webhook_event once
// known), in that order, right after the logger's own. They are added to
// each line as it is written instead of to a zerolog context: Logger.With
// copies a buffer for every request (twice per ack), even when the lines
// are at a disabled level, as the ack's info lines are at LOG_LEVEL=warn.
// At a disabled level nothing is built.
type reqLog struct {
	base                          zerolog.Logger
	reqID, remote, proxy, product string
	attempt                       int
	// batchID is set once the body parsed (the batch webhook).
	batchID string
	// payment is set with bodySHA and event once the payments body parsed.
	payment        bool
	bodySHA, event string
}

func (l *reqLog) Info() *zerolog.Event  { return l.fields(l.base.Info()) }
func (l *reqLog) Warn() *zerolog.Event  { return l.fields(l.base.Warn()) }
func (l *reqLog) Error() *zerolog.Event { return l.fields(l.base.Error()) }

func (l *reqLog) fields(e *zerolog.Event) *zerolog.Event {
	if e == nil {
		return nil
	}
	e = e.Str("request_id", l.reqID).Str("remote_addr", l.remote).Int("delivery_attempt", l.attempt)
	if l.proxy != "" {
		e = e.Str("proxy_addr", l.proxy)
	}
	if l.product != "" {
		e = e.Str("product", l.product)
	}
	if l.batchID != "" {
		e = e.Str("batch_id", l.batchID)
	}
	if l.payment {
		e = e.Str("body_sha256", l.bodySHA).Str("webhook_event", netval.Text(l.event, netval.Header))
	}
	return e
}
