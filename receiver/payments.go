package receiver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/batchhook/batchhook/cpf"
	"github.com/batchhook/batchhook/store"
)

// The payments webhook. The provider's payments product signs
// its webhooks with the same header, algorithm and encoding as
// batch.completed, with a secret of its own (docs/provider-api.md §2.2), and
// does not show its events' names or bodies. So batchhook proves a
// delivery genuine exactly as for batches (the shared prologue), requires
// only that the body be a strict JSON object, and logs it as it is:
// durably, numbered, before the 200. It never interprets the event.

// PaymentRecorder is what the payments webhook needs from the store.
// PaymentKnownContext runs in a read transaction (and waits only for the
// commit that logged what it finds); RecordPaymentContext and
// QuarantineContext return only after a durable commit. Each returns
// store.ErrSlowCommit when ctx ends first. Any error means nothing can be
// promised to the sender (503).
type PaymentRecorder interface {
	PaymentKnownContext(ctx context.Context, dedupKey string) (seq uint64, known bool, err error)
	RecordPaymentContext(ctx context.Context, e store.PaymentEvent, raw []byte) (seq uint64, created bool, err error)
	QuarantineContext(ctx context.Context, q store.Quarantined) error
}

var _ PaymentRecorder = (*store.Store)(nil)

// PaymentObserver receives one call per payments webhook request, with
// the outcomes of PaymentOutcomes.
type PaymentObserver interface {
	PaymentHandled(outcome string, took time.Duration)
}

// PaymentOutcomes are the outcomes a PaymentObserver is told (the metrics
// start each at 0).
var PaymentOutcomes = []string{ResultAccepted, ResultDuplicate, outcomeUnauthorized, outcomeInvalid,
	outcomeTooLarge, outcomeUnsupported, outcomeMethod, outcomeError}

// PaymentOptions turns the payments webhook on (Options.Payments; nil
// leaves its path unrouted: 404 like any unknown path).
type PaymentOptions struct {
	// Path is the payments webhook's path; it must differ from Options.Path.
	Path string
	// Secret returns the current payments signing secret (called per
	// request, so a reload applies to the next one).
	Secret func() []byte
	// DedupFields are the dotted paths of the dedup key, split into
	// segments (config.PaymentsDedupPaths).
	DedupFields [][]string
	Store       PaymentRecorder
	// Observer is nil for none.
	Observer PaymentObserver
}

type paymentReply struct {
	Result string `json:"result"`
	Seq    uint64 `json:"seq"`
}

// Events of the payments webhook's lines; eventPaymentRejected is sampled
// with webhook_rejected's sampler.
const eventPaymentRejected = "payment_rejected"

// maxEventHeader caps the X-Service-Event value kept with an event: the
// header is the sender's, and the log and the admin API show it.
const maxEventHeader = 200

// maxTransactionID caps the transaction.id kept as TransactionID (a sink's
// record key); a longer one is left out and the dedup key is used.
const maxTransactionID = 200

func (o *PaymentOptions) check(batchPath string) error {
	switch {
	case o.Path == "" || o.Path[0] != '/':
		return errors.New("receiver: the payments path must start with /")
	case o.Path == batchPath:
		return errors.New("receiver: the payments path must differ from the batch webhook's")
	case o.Secret == nil || o.Store == nil:
		return errors.New("receiver: the payments Secret and Store are required")
	case len(o.DedupFields) == 0:
		return errors.New("receiver: the payments dedup fields are required")
	}
	for _, p := range o.DedupFields {
		if len(p) == 0 || strings.Join(p, "") == "" {
			return errors.New("receiver: a payments dedup field is empty")
		}
	}
	return nil
}

// handlePayment times and counts every payments request.
func (s *Server) handlePayment(c echo.Context) error {
	start := time.Now()
	outcome, err := s.servePayment(c, start)
	if o := s.opts.Payments.Observer; o != nil {
		o.PaymentHandled(outcome, time.Since(start))
	}
	if errors.Is(err, errSenderGone) {
		panic(http.ErrAbortHandler) // as in handle: no one to answer
	}
	return err
}

// servePayment is the payments webhook: the shared prologue with the
// payments secret, a strict JSON object, then the event is logged durably
// (or found logged already) before the reply, or 503 by the reply's
// deadline (replyContext).
func (s *Server) servePayment(c echo.Context, start time.Time) (string, error) {
	p := s.opts.Payments
	in, ok, outcome, err := s.prologue(c, endpoint{product: store.ProductPayments, secret: p.Secret, rejected: eventPaymentRejected})
	if !ok {
		return outcome, err
	}
	defer s.bufs.put(in.buf)
	body, log := in.body, &in.log
	ctx, cancel := s.replyContext(c.Request(), start)
	defer cancel()
	pb, err := readPayment(body, p.DedupFields)
	if err != nil {
		return s.quarantine(ctx, c, log, body, err, store.ProductPayments)
	}
	bodySHA, key := pb.bodySHA256, pb.dedupKey
	event := cpf.Scrub(eventHeader(c.Request().Header.Get("X-Service-Event"))) // kept and served: masked like a log value
	log.payment, log.bodySHA, log.event = true, bodySHA, event

	seq, known, err := p.Store.PaymentKnownContext(ctx, key)
	if err != nil {
		return s.storeFailed(c, log, err)
	}
	if !known {
		e := store.PaymentEvent{
			ReceivedAt: s.opts.Now().UTC(), Event: event, Attempt: in.attempt, DedupKey: key,
			BodySHA256: bodySHA, TransactionID: pb.transactionID,
		}
		var created bool
		seq, created, err = p.Store.RecordPaymentContext(ctx, e, body) // the store copies it
		if err != nil {
			return s.storeFailed(c, log, err)
		}
		known = !created
	}
	if known {
		log.Info().Str("event", "payment_duplicate").Uint64("seq", seq).Msg("payment event already logged; nothing to do")
		return ResultDuplicate, writePaymentReply(c, http.StatusOK, ResultDuplicate, seq)
	}
	log.Info().Str("event", "payment_accepted").Uint64("seq", seq).Msg("payment event logged")
	return ResultAccepted, writePaymentReply(c, http.StatusOK, ResultAccepted, seq)
}

// paymentBody is what the payments webhook reads from a signed body.
type paymentBody struct {
	bodySHA256    string // hex SHA-256 of the raw body
	dedupKey      string // DedupKey
	transactionID string // transactionID: "" when absent, not a string or too long
}

// readPayment reads a signed payments body: one strictly decoded JSON
// object (a refusal is errInvalid saying why, for the 400 and the
// quarantine), its SHA-256, its dedup key over paths and its transaction
// id. The body is not otherwise interpreted: the provider's document does
// not show the payment events' shape.
func readPayment(body []byte, paths [][]string) (paymentBody, error) {
	fields, err := decodeObject(body)
	if err != nil {
		return paymentBody{}, err
	}
	sum := sha256.Sum256(body)
	pb := paymentBody{bodySHA256: hex.EncodeToString(sum[:]), transactionID: transactionID(fields)}
	pb.dedupKey = DedupKey(fields, paths, pb.bodySHA256)
	return pb, nil
}

// eventHeader keeps X-Service-Event as sent, cut to maxEventHeader bytes
// at a character boundary, with invalid UTF-8 replaced: the name is never
// interpreted (docs/provider-api.md does not show the payment events' names).
func eventHeader(v string) string {
	v = strings.ToValidUTF8(v, "\uFFFD")
	if len(v) <= maxEventHeader {
		return v
	}
	cut := maxEventHeader
	for cut > 0 && !utf8.RuneStart(v[cut]) {
		cut--
	}
	return v[:cut]
}
