// Package receiver is batchhook's public HTTP edge: the webhook endpoint
// the provider POSTs batch.completed notifications to and, when enabled,
// the payments product's webhook (payments.go), which shares its prologue.
// It proves each delivery genuine before it looks at the body, records it
// durably through the store, and replies in milliseconds. It never calls the provider:
// fetching is the fetcher's job, woken by the store's commit.
//
// It is the only package besides the admin API that imports echo; nothing
// exported mentions it.
package receiver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/batchhook/batchhook/internal/netval"

	"github.com/labstack/echo/v4"
	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/internal/httpserver"
	"github.com/batchhook/batchhook/internal/logsample"
	"github.com/batchhook/batchhook/internal/signature"
	"github.com/batchhook/batchhook/store"
)

// Limits are the listener's deadlines and header cap. The provider gives
// up on a delivery after 10 s (docs/provider-api.md §6), so nothing here needs to
// wait longer; a client that dribbles headers or a body is cut off instead
// of holding a connection.
type Limits struct {
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	// MaxHeaderBytes caps the request line and headers together, blank
	// line included (431 past it), exactly (httpserver.MaxHeaderBytes).
	MaxHeaderBytes int
}

// DefaultLimits returns the limits used when Options.Limits is zero.
func DefaultLimits() Limits {
	return Limits{
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    16 << 10,
	}
}

// Recorder is what the receiver needs from the store. KnownContext runs in
// a read transaction (and waits only for the commit that recorded what it
// finds); RecordContext, QuarantineContext and AuditContext return only
// after a durable commit. Each returns store.ErrSlowCommit when ctx ends
// first. Any error from them means nothing can be promised to the sender
// (the receiver answers 503).
type Recorder interface {
	KnownContext(ctx context.Context, batchID string) (bool, error)
	RecordContext(ctx context.Context, n store.Notification) (created bool, err error)
	QuarantineContext(ctx context.Context, q store.Quarantined) error
	AuditContext(ctx context.Context, e store.AuditEvent) error
}

var _ Recorder = (*store.Store)(nil)

// Options configures a Server.
type Options struct {
	// Path is the webhook path, e.g. /webhooks/batch-completed.
	Path string
	// MaxBodyBytes caps the body; larger deliveries get 413.
	MaxBodyBytes int64
	// Secret returns the current signing secret. It is called once per
	// request so that a reloaded secret applies to the next request.
	Secret func() []byte
	Store  Recorder
	Logger zerolog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Limits are the listener's deadlines; zero means DefaultLimits().
	Limits Limits
	// OnQuarantine, when set, is called once a signed body that failed
	// validation is kept in the quarantine (batch or payments, with its
	// masked reason): such a delivery is retried for ever and never
	// recorded, so the daemon counts it and its status warns of it.
	OnQuarantine func(product, reason string)
	// Observer is told the outcome and reply time of every request; nil
	// means none.
	Observer Observer
	// RejectBurst is how many log lines a stranger can cause (401, 413,
	// unreadable bodies, net/http's own errors) are written per second, all
	// of them together, before the rest are dropped, so a flood cannot fill
	// the disk; the Observer still counts every request. 0 = 20.
	RejectBurst uint32
	// LogDropped is told the event of every such line dropped; nil = none.
	LogDropped func(event string)
	// MaxConnections caps the webhook connections held at once; more wait
	// in the kernel's backlog. 0 = no cap. It is a last line: a stalled
	// sender costs little (see body.go), so set it well above any load.
	MaxConnections int
	// Payments serves the payments webhook on the same listener;
	// nil leaves its path a 404.
	Payments *PaymentOptions
	// TrustedProxies are the peers whose X-Forwarded-For / X-Real-IP name
	// the sender logged as remote_addr (BATCHHOOK_TRUSTED_PROXIES); empty
	// = the headers are ignored.
	TrustedProxies []*net.IPNet
	// KeepRejected, when set, is handed the rejected (401) deliveries
	// whose log line the sampler let through (store.Rejected, body capped
	// at store.MaxRejectedBody). It must not block: the 401 waits for it.
	KeepRejected func(store.Rejected)
}

// Observer receives one call per webhook request. The outcomes are
// accepted, duplicate, ignored, unauthorized, invalid, too_large,
// unsupported, method_not_allowed and error, and not_found for a request
// to a path the listener does not serve (its took is 0: no handler ran).
type Observer interface {
	WebhookHandled(outcome string, took time.Duration)
}

type nopObserver struct{}

func (nopObserver) WebhookHandled(string, time.Duration) {}

// Server serves the webhook endpoint.
type Server struct {
	opts Options
	// strangers holds the sampled loggers of the lines anyone can cause,
	// by event.
	strangers map[string]*zerolog.Logger
	echo      *echo.Echo
	srv       *httpserver.Server
	bufs      *buffers
	// unknownSlots bounds bodies without Content-Length read at once.
	unknownSlots chan struct{}
	// clientIP reads the sender a trusted proxy names (proxy.go); nil
	// when no proxy is trusted.
	clientIP echo.IPExtractor
	// sigHeader is signature.Header in canonical form: Header.Get of the
	// lower-case name would build the canonical one for every request.
	sigHeader string
}

// New checks opts and builds the server; it does not listen yet.
func New(opts Options) (*Server, error) {
	switch {
	case opts.Path == "" || opts.Path[0] != '/':
		return nil, fmt.Errorf("receiver: path %q must start with /", opts.Path)
	case opts.MaxBodyBytes <= 0:
		return nil, errors.New("receiver: MaxBodyBytes must be positive")
	case opts.Secret == nil || opts.Store == nil:
		return nil, errors.New("receiver: Secret and Store are required")
	case opts.MaxConnections < 0:
		return nil, errors.New("receiver: MaxConnections must not be negative")
	}
	if opts.Payments != nil {
		if err := opts.Payments.check(opts.Path); err != nil {
			return nil, err
		}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Limits == (Limits{}) {
		opts.Limits = DefaultLimits()
	}
	if opts.Observer == nil {
		opts.Observer = nopObserver{}
	}
	if opts.RejectBurst == 0 {
		opts.RejectBurst = 20
	}
	sampler := logsample.New(opts.RejectBurst, time.Second, opts.LogDropped)
	s := &Server{
		opts: opts, strangers: map[string]*zerolog.Logger{},
		bufs: newBuffers(opts.MaxBodyBytes + 1), unknownSlots: make(chan struct{}, unknownLengthSlots),
		clientIP: clientIP(opts.TrustedProxies), sigHeader: http.CanonicalHeaderKey(signature.Header),
	}
	for _, event := range []string{eventRejected, eventTooLarge, eventReadFailed, eventPaymentRejected, eventUnknownPath} {
		l := sampler.Logger(opts.Logger, event)
		s.strangers[event] = &l
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleError
	e.Any(opts.Path, s.handle)
	if opts.Payments != nil {
		e.Any(opts.Payments.Path, s.handlePayment)
	}
	s.echo = e
	s.srv = httpserver.New("webhook listener", &http.Server{
		Handler:           e,
		ReadHeaderTimeout: opts.Limits.ReadHeaderTimeout,
		ReadTimeout:       opts.Limits.ReadTimeout,
		WriteTimeout:      opts.Limits.WriteTimeout,
		IdleTimeout:       opts.Limits.IdleTimeout,
		MaxHeaderBytes:    httpserver.MaxHeaderBytes(opts.Limits.MaxHeaderBytes),
		// net/http answers "OPTIONS *" itself with 200 unless told not to;
		// the webhook listener serves its paths only (404 here).
		DisableGeneralOptionsHandler: true,
		ConnContext:                  withConn,
		ErrorLog:                     sampler.ErrorLog(opts.Logger, "http_server_error"),
	}, httpserver.LogRefused(sampler.Logger(opts.Logger, httpserver.EventAmbiguous), "webhook",
		func() { s.opts.Observer.WebhookHandled(outcomeAmbiguous, 0) }))
	return s, nil
}

// replyMargin is how long before the listener's write deadline a reply
// that waits for the store gives up: enough to write a 503 in time.
const replyMargin = time.Second

// replyContext bounds the store's part of a reply. net/http sets the write
// deadline (WriteTimeout) once a request's headers are read, just before
// its handler starts at start; a reply written after it never reaches the
// sender. So the context ends replyMargin (or a tenth of WriteTimeout, if
// less) before it, or when the sender leaves: a commit that cannot return
// in time (a slow disk, a queue of commits before it) is answered 503
// while the sender still listens, and goes on in the background.
func (s *Server) replyContext(r *http.Request, start time.Time) (context.Context, context.CancelFunc) {
	wt := s.opts.Limits.WriteTimeout
	if wt <= 0 {
		return context.WithCancel(r.Context())
	}
	return context.WithDeadline(r.Context(), start.Add(wt-min(replyMargin, wt/10)))
}

// Handler returns the HTTP handler, for tests that bring their own server.
func (s *Server) Handler() http.Handler { return s.echo }

// Serve serves on ln in the background until Shutdown. The caller binds ln
// (so "address in use" surfaces where it binds).
func (s *Server) Serve(ln net.Listener) {
	if s.opts.MaxConnections > 0 {
		ln = httpserver.LimitListener(ln, s.opts.MaxConnections)
	}
	s.srv.Serve(ln)
}

// Shutdown stops accepting, waits for in-flight requests until ctx ends,
// then closes what remains. It is safe to call more than once.
func (s *Server) Shutdown(ctx context.Context) error { return s.srv.Shutdown(ctx) }

// handleError turns routing errors (404, 405) into the JSON error shape.
// A 404 is a request to a path the listener does not serve: it is
// counted (not_found) and logged, sampled, as webhook_unknown_path with
// the method, the path (capped, CPF-shaped digits masked) and the sender,
// so a provider registered with the wrong URL leaves a trace.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	code, reason := http.StatusInternalServerError, "internal_error"
	var he *echo.HTTPError
	if errors.As(err, &he) {
		code = he.Code
		switch code {
		case http.StatusNotFound:
			reason = "not_found"
			s.unknownPath(c.Request())
		case http.StatusMethodNotAllowed:
			reason = "method_not_allowed"
		default:
			reason = http.StatusText(code)
		}
	}
	_ = c.JSON(code, map[string]string{"error": reason})
}

// unknownPath counts and logs a request to a path the listener does not
// serve. The path is the sender's choice: capped and scrubbed like every
// value from the network (netval); the query is left out, since a
// misconfigured sender may put secrets or personal data there.
func (s *Server) unknownPath(req *http.Request) {
	s.opts.Observer.WebhookHandled(outcomeNotFound, 0)
	remote, proxy := s.remoteAddr(req)
	e := s.strangers[eventUnknownPath].Warn().Str("event", eventUnknownPath).
		Str("method", netval.Text(req.Method, netval.Header)).Str("path", netval.Text(req.URL.Path, netval.Path)).
		Str("remote_addr", remote)
	if proxy != "" {
		e = e.Str("proxy_addr", proxy)
	}
	e.Str("webhook_path", s.opts.Path).Msg("request to a path this listener does not serve; is the provider's webhook URL right?")
}
