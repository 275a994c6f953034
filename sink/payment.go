package sink

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// The payments product: every logged payment event goes to each
// payment sink (file, http, kafka, nats; never exec) in log order. A sink
// is handed a run of consecutive events and says how many of them, from
// the first, it delivered: the file sink writes a run with one fsync, the
// others send one event at a time.

// Payment is one logged payment event as a payment sink sees it.
type Payment struct {
	// Seq numbers the log from 1; a sink receives events in Seq order.
	Seq uint64
	// ReceivedAt is when batchhook logged the event (UTC): the file sink's
	// day file is the UTC day of it.
	ReceivedAt time.Time
	// Event is the X-Service-Event header as received; Attempt its
	// X-Service-Attempt.
	Event   string
	Attempt int
	// DedupKey identifies the event (the Kafka key when the body has no
	// transaction.id).
	DedupKey string
	// TransactionID is the body's transaction.id when it is a string.
	TransactionID string
	// Line is the event's line object (PaymentLine), without a newline:
	// the file sink's line, the http sink's data, the kafka and nats
	// value. It holds the body, which holds personal data: it never goes
	// to a log or a Reason.
	Line []byte
}

// ErrPaymentBody: the body given to PaymentLine is not one JSON value. The
// endpoint logs only JSON objects, so this means a damaged log; retrying
// cannot help.
var ErrPaymentBody = errors.New("the payment event's body is not valid JSON")

// PaymentLine builds the line object every payment sink sends:
//
//	{"seq":N,"received_at":"<RFC 3339, UTC>","event":<X-Service-Event>,"attempt":n,"body_sha256":"<hex of the raw bytes>","body":<the body, compacted>}
//
// The body is json.Compact-ed (its spacing dropped, its key order and
// values kept) and body_sha256 is of the raw bytes as received, so a
// reader can tell the body from the event log by its hash. The line
// depends only on the event, never on the attempt or the sink, so a resent
// event is byte-identical and a line in the day file equals the http
// data, the kafka value and the nats payload. The seq comes first: the
// file sink reads it back from the start of a line.
func PaymentLine(seq uint64, receivedAt time.Time, event string, attempt int, raw []byte) ([]byte, error) {
	var body bytes.Buffer
	if err := json.Compact(&body, raw); err != nil || body.Len() == 0 {
		return nil, ErrPaymentBody
	}
	ev, err := json.Marshal(event)
	if err != nil {
		return nil, fmt.Errorf("encode the event name: %w", err)
	}
	sum := sha256.Sum256(raw)
	var b bytes.Buffer
	b.Grow(body.Len() + len(ev) + 160)
	b.WriteString(`{"seq":`)
	b.WriteString(strconv.FormatUint(seq, 10))
	b.WriteString(`,"received_at":"`)
	b.WriteString(receivedAt.UTC().Format(time.RFC3339Nano))
	b.WriteString(`","event":`)
	b.Write(ev)
	b.WriteString(`,"attempt":`)
	b.WriteString(strconv.Itoa(attempt))
	b.WriteString(`,"body_sha256":"`)
	b.WriteString(hex.EncodeToString(sum[:]))
	b.WriteString(`","body":`)
	b.Write(body.Bytes())
	b.WriteByte('}')
	return b.Bytes(), nil
}

// PaymentSink delivers payment events to one destination.
type PaymentSink interface {
	// Name is the sink's name in BATCHHOOK_SINKS (file, http, kafka,
	// nats).
	Name() string
	// DeliverPayments delivers ps (consecutive events of the log, in
	// order) and returns how many of them, from the first, the
	// destination now has for good (for the file sink: written and
	// fsynced). When done < len(ps), res says why ps[done] did not go
	// (Retry or Failed); when done == len(ps), res is Delivered. It must
	// honour ctx (answer Retry when cancelled) and be safe to call again
	// with events it already delivered: after a crash between its answer
	// and the store's record, the dispatcher hands them again.
	DeliverPayments(ctx context.Context, ps []Payment) (done int, res Result)
}
