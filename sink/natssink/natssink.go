// Package natssink delivers exports to a NATS JetStream stream (docs/sinks.md,
// "nats sink"): one message per item, in export order, then one manifest
// message, all on one subject. Every message carries a Nats-Msg-Id that
// depends only on the export (`<batch_id>:<index>`, `<batch_id>:manifest`,
// with `r<N>:` after the batch id once a refetch replaced the export), so
// the stream's duplicate window drops a message sent again after a crash
// or a retry.
//
// Publishes are synchronous: each waits for its JetStream ack before the
// next is sent. That keeps the order of the stream the order of the
// export without reasoning about in-flight windows, and makes "acked so
// far" a plain prefix that sink.Progress records (every MarkEvery
// messages and at the end), so a retry resumes after the recorded prefix;
// the Msg-Id dedup covers the few messages acked after the last mark.
//
// This package is the only importer of github.com/nats-io/nats.go; it
// knows nothing of batchhook's configuration or store.
package natssink

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/batchhook/batchhook/sink"
)

// Defaults of Options and the stream CreateStream makes.
const (
	DefaultSubject = "batchhook.results"
	// DefaultPaymentsSubject receives payment events.
	DefaultPaymentsSubject = "batchhook.payments"
	DefaultPublishTimeout  = 10 * time.Second
	// DuplicateWindow is the duplicate window of a stream the sink
	// creates (Options.CreateStream): a message sent again within it is
	// stored once.
	DuplicateWindow = 2 * time.Minute
	// MarkEvery is how many acked messages pass between two Progress
	// marks (and the last message is always marked).
	MarkEvery = 100
)

// The headers of every message (besides Nats-Msg-Id).
const (
	HeaderBatchID = "Batchhook-Batch-Id"
	HeaderKind    = "Batchhook-Kind"
	HeaderIndex   = "Batchhook-Index"
)

// ErrOptions: New was given options it cannot work with; the wrapped text
// names the field (never a secret).
var ErrOptions = errors.New("invalid nats sink options")

// errPermission cancels the publishes in flight when the server reports a
// permissions violation on the subject: the server drops such a message
// without an answer, so only its -ERR tells us.
var errPermission = errors.New("permissions violation")

// Options is what the daemon hands the nats sink.
type Options struct {
	// URL is the server URL, or a comma list of them (nats://, tls://,
	// ws://, wss://), without userinfo: credentials come from CredsFile or
	// Token.
	URL string
	// Subject receives every message (empty = DefaultSubject). It must
	// not hold wildcards.
	Subject string
	// PaymentsSubject receives the payment events (empty =
	// DefaultPaymentsSubject); the same rules as Subject.
	PaymentsSubject string
	// CredsFile is a NATS credentials file (JWT and seed); optional.
	CredsFile string
	// Token is an authentication token; optional.
	Token string
	// TLSCAFile is a PEM file of CAs that verify the server; optional
	// (the system roots otherwise, when the server offers TLS).
	TLSCAFile string
	// CreateStream lets Check create a missing stream (file storage,
	// DuplicateWindow) instead of reporting ErrNoStream.
	CreateStream bool
	// PublishTimeout bounds each publish and its ack, and each connect
	// (0 = DefaultPublishTimeout).
	PublishTimeout time.Duration
}

// Sink is the nats sink. It keeps one connection, made on first use and
// made again once closed; it is safe for concurrent use.
type Sink struct {
	o  Options
	mu sync.Mutex
	nc *nats.Conn
	js jetstream.JetStream

	waitMu  sync.Mutex
	waiting map[*context.CancelCauseFunc]struct{}
}

var _ sink.Sink = (*Sink)(nil)

// New checks o and returns a sink. It does not connect: Check and the
// first delivery do.
func New(o Options) (*Sink, error) {
	if o.URL == "" {
		return nil, fmt.Errorf("%w: URL is required", ErrOptions)
	}
	for _, one := range strings.Split(o.URL, ",") {
		u, err := url.Parse(strings.TrimSpace(one))
		if err != nil {
			return nil, fmt.Errorf("%w: URL does not parse", ErrOptions)
		}
		switch {
		case u.User != nil:
			return nil, fmt.Errorf("%w: URL must not hold userinfo (use the credentials file or the token)", ErrOptions)
		case u.Scheme != "nats" && u.Scheme != "tls" && u.Scheme != "ws" && u.Scheme != "wss", u.Host == "":
			return nil, fmt.Errorf("%w: URL must be nats://, tls://, ws:// or wss:// host:port", ErrOptions)
		}
	}
	if o.Subject == "" {
		o.Subject = DefaultSubject
	}
	if o.PaymentsSubject == "" {
		o.PaymentsSubject = DefaultPaymentsSubject
	}
	for name, subj := range map[string]string{"Subject": o.Subject, "PaymentsSubject": o.PaymentsSubject} {
		if strings.ContainsAny(subj, "*> \t\r\n") || strings.HasPrefix(subj, ".") ||
			strings.HasSuffix(subj, ".") || strings.Contains(subj, "..") {
			return nil, fmt.Errorf("%w: %s %q is not a literal subject (no wildcards, blanks or empty tokens)", ErrOptions, name, subj)
		}
	}
	if o.PublishTimeout == 0 {
		o.PublishTimeout = DefaultPublishTimeout
	}
	if o.PublishTimeout < 0 {
		return nil, fmt.Errorf("%w: PublishTimeout must be positive", ErrOptions)
	}
	return &Sink{o: o, waiting: map[*context.CancelCauseFunc]struct{}{}}, nil
}

// Name is the sink's name in BATCHHOOK_SINKS.
func (s *Sink) Name() string { return "nats" }

// Subject is the subject the sink publishes exports on.
func (s *Sink) Subject() string { return s.o.Subject }

// PaymentsSubject is the subject the sink publishes payment events on.
func (s *Sink) PaymentsSubject() string { return s.o.PaymentsSubject }

// Close closes the connection, if any.
func (s *Sink) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.nc != nil {
		s.nc.Close()
		s.nc, s.js = nil, nil
	}
}

// conn returns the live connection, connecting when there is none. The
// connection reconnects by itself; while it does, publishes fail at once
// (no reconnect buffer) and the delivery is retried.
func (s *Sink) conn() (*nats.Conn, jetstream.JetStream, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.nc != nil && !s.nc.IsClosed() {
		return s.nc, s.js, nil
	}
	opts := []nats.Option{
		nats.Name("batchhook"),
		nats.Timeout(s.o.PublishTimeout),
		nats.MaxReconnects(-1),
		nats.ReconnectBufSize(-1),
		nats.NoCallbacksAfterClientClose(),
		nats.ErrorHandler(s.onError),
	}
	if s.o.CredsFile != "" {
		opts = append(opts, nats.UserCredentials(s.o.CredsFile))
	}
	if s.o.Token != "" {
		opts = append(opts, nats.Token(s.o.Token))
	}
	if s.o.TLSCAFile != "" {
		opts = append(opts, nats.RootCAs(s.o.TLSCAFile))
	}
	nc, err := nats.Connect(s.o.URL, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("connect: %w", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("jetstream: %w", err)
	}
	s.nc, s.js = nc, js
	return nc, js, nil
}

// onError sees the server's asynchronous errors. A permissions violation
// on one of our subjects ends the publishes waiting for an ack that will
// never come.
func (s *Sink) onError(_ *nats.Conn, _ *nats.Subscription, err error) {
	if !errors.Is(err, nats.ErrPermissionViolation) ||
		(!strings.Contains(err.Error(), strconv.Quote(s.o.Subject)) && !strings.Contains(err.Error(), strconv.Quote(s.o.PaymentsSubject))) {
		return
	}
	s.waitMu.Lock()
	defer s.waitMu.Unlock()
	for c := range s.waiting {
		(*c)(errPermission)
	}
}

// publish sends m and waits for its ack, at most PublishTimeout.
func (s *Sink) publish(ctx context.Context, js jetstream.JetStream, m *nats.Msg, id string) error {
	ctx, cancel := context.WithTimeout(ctx, s.o.PublishTimeout)
	defer cancel()
	ctx, cancelCause := context.WithCancelCause(ctx)
	defer cancelCause(nil)
	s.waitMu.Lock()
	s.waiting[&cancelCause] = struct{}{}
	s.waitMu.Unlock()
	defer func() {
		s.waitMu.Lock()
		delete(s.waiting, &cancelCause)
		s.waitMu.Unlock()
	}()
	_, err := js.PublishMsg(ctx, m, jetstream.WithMsgID(id), jetstream.WithRetryAttempts(0))
	if err != nil && errors.Is(context.Cause(ctx), errPermission) {
		return errPermission
	}
	return err
}

// MessageID is the Nats-Msg-Id of message part of an export's version:
// sink.IDBase, ":" and the item's 0-based index or "manifest".
func MessageID(batchID string, version int, part string) string {
	return sink.IDBase(batchID, version) + ":" + part
}
