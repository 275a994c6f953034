package receiver

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/cpf"
	"github.com/batchhook/batchhook/internal/signature"
	"github.com/batchhook/batchhook/store"
)

// Reply results, as in {"result":"accepted","batch_id":"…"}.
const (
	ResultAccepted  = "accepted"
	ResultDuplicate = "duplicate"
	ResultIgnored   = "ignored"
)

type reply struct {
	Result  string `json:"result"`
	BatchID string `json:"batch_id"`
}

// Events of the lines a stranger can cause; they are sampled.
const (
	eventRejected   = "webhook_rejected"
	eventTooLarge   = "webhook_too_large"
	eventReadFailed = "webhook_read_failed"
	// eventUnknownPath is a request to a path the listener does not
	// serve: most often the provider registered with the wrong URL.
	eventUnknownPath = "webhook_unknown_path"
)

// Outcomes reported to the Observer.
const (
	outcomeUnauthorized = "unauthorized"
	outcomeInvalid      = "invalid"
	outcomeTooLarge     = "too_large"
	outcomeUnsupported  = "unsupported"
	outcomeMethod       = "method_not_allowed"
	outcomeNotFound     = "not_found"
	outcomeError        = "error"
	// outcomeAmbiguous is a request that named both Content-Length and
	// Transfer-Encoding: net/http answered it 400 and the connection was
	// closed before any handler ran (internal/httpserver).
	outcomeAmbiguous = "ambiguous_framing"
)

// handle times and counts every request; serve does the work.
func (s *Server) handle(c echo.Context) error {
	start := time.Now()
	outcome, err := s.serve(c, start)
	s.opts.Observer.WebhookHandled(outcome, time.Since(start))
	if errors.Is(err, errSenderGone) {
		// No one to answer: close the connection without a reply (and
		// without touching its write buffer). net/http logs nothing for
		// this sentinel.
		panic(http.ErrAbortHandler)
	}
	return err
}

// endpoint is what differs between the two products' webhooks in the
// prologue they share: the secret and the event of a rejected signature.
type endpoint struct {
	// product tags the log lines of the payments webhook; empty for
	// batches, whose lines predate it.
	product  string
	secret   func() []byte
	rejected string
}

// inbound is a request that passed the prologue: a genuine body. buf is
// pooled: the handler puts it back when the request ends.
type inbound struct {
	body    []byte
	buf     *[]byte
	log     reqLog
	attempt int
}

// prologue is the part of a webhook docs/provider-api.md fixes for both products,
// in its order: the method, the capped body, the signature (with the
// endpoint's own secret), then Content-Encoding. Nothing in the body is
// looked at before the signature holds. When ok is false the reply is
// written (or the sender is gone) and outcome and err are the handler's
// result. The inbound is a value: a request allocates nothing for it.
func (s *Server) prologue(c echo.Context, ep endpoint) (in inbound, ok bool, outcome string, err error) {
	req := c.Request()
	if req.Method != http.MethodPost {
		c.Response().Header().Set("Allow", http.MethodPost)
		return in, false, outcomeMethod, fail(c, http.StatusMethodNotAllowed, "method_not_allowed")
	}
	reqID := newRequestID()
	c.Response().Header().Set("X-Request-Id", reqID)
	remote, proxy := s.remoteAddr(req)
	log := reqLog{base: s.opts.Logger, reqID: reqID, remote: remote, proxy: proxy, product: ep.product, attempt: attempt(req)}
	// A line anyone can cause, sampled (nil, a no-op, when dropped).
	stranger := func(event string) *zerolog.Event {
		e := s.strangers[event].Warn().Str("request_id", reqID).Str("remote_addr", remote).
			Int("delivery_attempt", attempt(req)).Str("event", event)
		if proxy != "" {
			e = e.Str("proxy_addr", proxy)
		}
		if ep.product != "" {
			e = e.Str("product", ep.product)
		}
		return e
	}

	buf, err := s.readBody(req)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			// The declared length is the sender's number: masked like any
			// value from a request (a Content-Length can be a CPF too).
			stranger(eventTooLarge).Int64("max_body_bytes", s.opts.MaxBodyBytes).
				Str("content_length", cpf.Scrub(strconv.FormatInt(req.ContentLength, 10))).Msg("webhook body over the size limit")
			return in, false, outcomeTooLarge, fail(c, http.StatusRequestEntityTooLarge, "body_too_large")
		}
		if errors.Is(err, errBusy) {
			c.Response().Header().Set("Retry-After", "1")
			return in, false, outcomeError, fail(c, http.StatusServiceUnavailable, "busy")
		}
		stranger(eventReadFailed).Err(err).Msg("could not read webhook body")
		if senderGone(err) {
			return in, false, outcomeInvalid, errSenderGone
		}
		return in, false, outcomeInvalid, fail(c, http.StatusBadRequest, "unreadable_body")
	}
	// The pooled buffer serves the signature check and the parse, and goes
	// back to the pool when the request ends (the handler's defer). What
	// the store keeps is a copy: its group commit may hold what it is
	// given past the call, and a signed body is rare enough to copy.
	body := *buf
	if reason := signature.Verify(ep.secret(), body, req.Header.Get(s.sigHeader)); reason != signature.OK {
		sum := sha256.Sum256(body)
		line := stranger(ep.rejected)
		if line != nil { // sampled in: the log budget also bounds what is kept
			s.keepRejected(c, ep, body, sum, string(reason), remote)
		}
		s.bufs.put(buf)
		line.Str("reason", string(reason)).Str("explanation", reason.Explain()).
			Int("body_len", len(body)).Str("body_sha256", hex.EncodeToString(sum[:])).
			Msg("webhook signature rejected")
		return in, false, outcomeUnauthorized, fail(c, http.StatusUnauthorized, "invalid_signature")
	}
	// From here on the body is genuine.
	if enc := req.Header.Get("Content-Encoding"); enc != "" && !strings.EqualFold(enc, "identity") {
		s.bufs.put(buf)
		log.Warn().Str("event", "webhook_unsupported_encoding").Str("content_encoding", truncate(enc)).
			Msg("signed webhook with a Content-Encoding other than identity: 415 (batchhook reads bodies as sent)")
		return in, false, outcomeUnsupported, fail(c, http.StatusUnsupportedMediaType, "unsupported_content_encoding")
	}
	return inbound{body: body, buf: buf, log: log, attempt: attempt(req)}, true, "", nil
}

// serve is the batch webhook: the shared prologue, then the
// batch.completed notification. start is when the handler began, which
// sets the reply's deadline (replyContext). It returns the outcome for the
// metrics.
func (s *Server) serve(c echo.Context, start time.Time) (string, error) {
	in, ok, outcome, err := s.prologue(c, endpoint{secret: s.opts.Secret, rejected: eventRejected})
	if !ok {
		return outcome, err
	}
	defer s.bufs.put(in.buf)
	req, body, log := c.Request(), in.body, &in.log
	ctx, cancel := s.replyContext(req, start)
	defer cancel()

	now := s.opts.Now().UTC()
	n, err := Parse(body)
	if err != nil {
		return s.quarantine(ctx, c, log, body, err, "")
	}
	log.batchID = n.BatchID
	if n.Event != EventCompleted {
		return s.audit(ctx, c, log, body, n)
	}

	known, err := s.opts.Store.KnownContext(ctx, n.BatchID)
	if err != nil {
		return s.storeFailed(c, log, err)
	}
	if !known {
		n.Attempt, n.ReceivedAt, n.Source, n.Raw = attempt(req), now, store.SourceWebhook, bytes.Clone(body)
		created, err := s.opts.Store.RecordContext(ctx, n)
		if err != nil {
			return s.storeFailed(c, log, err)
		}
		known = !created
	}
	if known {
		log.Info().Str("event", "webhook_duplicate").Msg("batch already recorded; nothing to do")
		return ResultDuplicate, writeReply(c, http.StatusOK, ResultDuplicate, n.BatchID)
	}
	ev := log.Info().Str("event", "webhook_accepted").Str("status", n.Status)
	if len(n.Flags) > 0 {
		ev = log.Warn().Str("event", "webhook_accepted").Str("status", n.Status).Strs("flags", n.Flags)
	}
	ev.Msg("batch recorded and queued")
	return ResultAccepted, writeReply(c, http.StatusOK, ResultAccepted, n.BatchID)
}

// quarantine keeps a signed body that failed validation, tagged with its
// product ("" for batches), and answers 400. Both products share the one
// quarantine list (DECISIONS 29); q is stored through quarantiner. The
// body is kept with every CPF-shaped run masked (cpf.ScrubBytes), its id
// and length the original's, so a retry of the same body is still kept
// once and no CPF is kept for the retention period.
func (s *Server) quarantine(ctx context.Context, c echo.Context, log *reqLog, body []byte, cause error, product string) (string, error) {
	sum := sha256.Sum256(body)
	masked := cpf.ScrubBytes(body)
	q := store.Quarantined{
		ID: hex.EncodeToString(sum[:]), Reason: cpf.Scrub(cause.Error()), Attempt: attempt(c.Request()),
		ReceivedAt: s.opts.Now().UTC(), Raw: bytes.Clone(masked), Product: product,
		BodyLen: len(body), Masked: len(masked) > 0 && &masked[0] != &body[0],
	}
	if product == "" {
		q.BatchID = readableBatchID(body)
	}
	save := s.opts.Store.QuarantineContext
	if product == store.ProductPayments {
		save = s.opts.Payments.Store.QuarantineContext
	}
	if err := save(ctx, q); err != nil {
		return s.storeFailed(c, log, err)
	}
	ev := log.Error().Str("event", "webhook_invalid")
	if product == store.ProductPayments {
		ev = log.Error().Str("event", "payment_invalid")
	}
	if q.BatchID != "" {
		ev = ev.Str("batch_id", q.BatchID)
	}
	ev.Str("reason", q.Reason).Str("quarantine_id", q.ID).Msg("signed webhook failed validation; kept in quarantine")
	if s.opts.OnQuarantine != nil {
		s.opts.OnQuarantine(productName(product), q.Reason)
	}
	return outcomeInvalid, fail(c, http.StatusBadRequest, cause.Error())
}

func (s *Server) audit(ctx context.Context, c echo.Context, log *reqLog, body []byte, n store.Notification) (string, error) {
	sum := sha256.Sum256(body)
	e := store.AuditEvent{
		ID: hex.EncodeToString(sum[:]), Event: n.Event, BatchID: n.BatchID,
		Attempt: attempt(c.Request()), ReceivedAt: s.opts.Now().UTC(), Raw: bytes.Clone(body),
	}
	if err := s.opts.Store.AuditContext(ctx, e); err != nil {
		return s.storeFailed(c, log, err)
	}
	log.Info().Str("event", "webhook_ignored").Str("webhook_event", truncate(n.Event)).
		Msg("signed webhook of another event kept for audit")
	return ResultIgnored, writeReply(c, http.StatusOK, ResultIgnored, n.BatchID)
}

func (s *Server) storeFailed(c echo.Context, log *reqLog, err error) (string, error) {
	if errors.Is(err, store.ErrSlowCommit) {
		log.Warn().Str("event", "webhook_store_slow").Err(err).
			Msg("the commit this reply depends on did not return in time (a slow disk?); replying 503 before the write deadline so the provider retries; the commit goes on")
		return outcomeError, fail(c, http.StatusServiceUnavailable, "storage_slow")
	}
	log.Error().Str("event", "webhook_store_failed").Err(err).Msg("could not record webhook; replying 503 so the provider retries")
	return outcomeError, fail(c, http.StatusServiceUnavailable, "storage_unavailable")
}

// attempt reads X-Service-Attempt; 0 when absent or not a small integer.
func attempt(r *http.Request) int {
	n, err := strconv.Atoi(r.Header.Get("X-Service-Attempt"))
	if err != nil || n < 0 || n > 1_000_000 {
		return 0
	}
	return n
}

func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
