// Package admin is batchhook's operator edge: health and readiness probes,
// Prometheus metrics, a one-screen status summary (status.go), and a JSON
// API over what the daemon keeps: batches
// (inspect, refetch, retry now, resubmit, track, redeliver to a sink), submissions and
// their chunks, deliveries, quarantined and rejected requests, erasures of
// a person's data, the payment event log, and a backup of the database. It
// listens apart from the public webhook (BATCHHOOK_ADMIN_ADDR, loopback by
// default); the store and the other stages reach it through the small
// interfaces of Options.
//
// No route returns result items or secrets, except GET /admin/backup: it
// is the database itself (raw notifications, the CPFs of submission
// chunks), for the operator to keep as carefully. With a token configured every
// route except /healthz and /readyz needs "Authorization: Bearer <token>"
// (probes cannot send secrets; Prometheus scrapes with a bearer token).
package admin

import (
	"context"
	"crypto/subtle"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/internal/authlimit"
	"github.com/batchhook/batchhook/internal/httpserver"
	"github.com/batchhook/batchhook/internal/logsample"
	"github.com/batchhook/batchhook/internal/netval"
	"github.com/batchhook/batchhook/store"
	"github.com/batchhook/batchhook/submit"
)

// Store is what the admin API reads and changes. Errors are the store's:
// store.ErrNotFound (404), store.ErrState (409, also for a refetch past
// retention), store.ErrBadCursor (400).
type Store interface {
	Get(id string) (*store.Batch, error)
	// FindBatch looks a batch up by its id or a unique prefix of it (an
	// error wrapping store.ErrAmbiguous when several match).
	FindBatch(prefix string) (*store.Batch, error)
	List(state store.State, limit int, cursor string) ([]store.Batch, string, error)
	Refetch(id string, retention time.Duration, now time.Time) (*store.Batch, error)
	// RetryNow makes a queued batch waiting out a backoff due now
	// (store.ErrState with the reason in any other state).
	RetryNow(id string, now time.Time) (*store.Batch, error)
	ListQuarantined(limit int, cursor string) ([]store.Quarantined, string, error)
	GetQuarantined(id string) (*store.Quarantined, error)
	// FindQuarantined looks an entry up by its id or a unique prefix of
	// it (an error wrapping store.ErrAmbiguous when several match).
	FindQuarantined(prefix string) (*store.Quarantined, error)
	ChunksIn(state store.ChunkState, limit int) ([]store.Chunk, error)
	ChunkCounts() (map[store.ChunkState]int, error)
	ListSubmissions(limit int, cursor string) ([]store.SubmissionSummary, string, error)
	// Deliveries, Redeliver and ListDeliveries are the sinks' outboxes
	// (Redeliver: ErrNotFound, or ErrState with the reason).
	Deliveries(batchID string) ([]store.Delivery, error)
	Redeliver(batchID, sink string, now time.Time) (*store.Delivery, error)
	ListDeliveries(state store.DeliveryState, sink string, limit int, cursor string) ([]store.Delivery, string, error)
	Backuper
	Counters
}

var _ Store = (*store.Store)(nil)

// Options configures the admin server.
type Options struct {
	Store Store
	// Token returns the current admin token; empty means no token needed.
	Token func() []byte
	// Metrics serves /metrics.
	Metrics http.Handler
	// Submissions takes CPF intakes, tracking and resubmission requests.
	Submissions Submissions
	// SubmitWait says what holds the submitter back, for a submission's
	// reply to say why it waits; nil = not shown.
	SubmitWait func() submit.Wait
	// Erasures erases one person's data; nil answers 503 on its routes.
	Erasures Erasures
	// MaxSubmissionBytes caps a POST /admin/submissions body.
	MaxSubmissionBytes int64
	// Ready returns nil when the daemon is ready, else the reason.
	Ready func() error
	// Warnings, when set, returns problems that do not make the daemon
	// unready (it still records webhooks) but that an operator looking at
	// /readyz should see, e.g. a provider that answers 404 to everything.
	Warnings func() []string
	// Retention is how long the provider keeps results (RETENTION): a
	// refetch after it is refused with 409 and the reason.
	Retention time.Duration
	Logger    zerolog.Logger
	Now       func() time.Time
	// LogDropped is told the event of every line a stranger caused that
	// the sampler dropped (admin_unauthorized, http_server_error); nil =
	// none. At most 20 such lines a second are written.
	LogDropped func(event string)
	// BackupStall bounds how long one write of GET /admin/backup waits
	// for the client; 0 = 30s.
	BackupStall time.Duration
	// Payments is the payment event log; nil answers 404 on
	// its routes. PaymentsEnabled says whether the payments webhook is
	// served (the list reply shows it).
	Payments        PaymentLog
	PaymentsEnabled bool
	// Rejected is the ring of rejected (401) deliveries; nil answers 404
	// on its routes.
	Rejected RejectedLog
	// Status returns what only the daemon knows for GET /admin/status
	// (the rest is read from Store's counters); nil answers 503.
	Status func() Facts
	// UI, when set, builds the operator's console, served under /ui/ on
	// this listener (see UIParts).
	UI func(UIParts) http.Handler
	// ConsoleHosts are the names, besides loopback ones, under which the
	// console answers (Host, without port, any case); see consoleHost.
	ConsoleHosts []string
	// AuthFailed counts one failed check of the admin token on surface
	// (SurfaceAPI, SurfaceConsole); nil counts nothing.
	AuthFailed func(surface string)
}

// UIParts is what the admin server hands the console it serves.
type UIParts struct {
	// API is this API's own handler, which the console reads and acts
	// through, in process.
	API http.Handler
	// Refused is the listener's sampled logger of refused requests, for
	// the console's refused sign-ins.
	Refused zerolog.Logger
	// Guard is the limiter of failed token checks the API's bearer check
	// shares: the console's sign-in goes through it.
	Guard Guard
}

// The reasons of a 401, in {"error":…}: no bearer token came, or one came
// that is not the daemon's. The CLI says what to fix from them.
const (
	ReasonTokenMissing  = "token_missing"
	ReasonTokenMismatch = "token_mismatch"
	// ReasonThrottled is the reason of a 429: too many wrong tokens came
	// from this address or in total (guard.go); the token was not checked.
	ReasonThrottled = "too_many_wrong_tokens"
)

// APIHeader is set, to APIName, on every reply of the admin API, errors
// and unknown paths included: a 404 without it comes from something else
// (the webhook listener's 404s have the same JSON shape), which the CLI
// then says instead of "no such batch".
const (
	APIHeader = "Batchhook-Api"
	APIName   = "admin"
)

// strangerBurst is how many lines a second strangers can cause here.
const strangerBurst = 20

// Server is the admin HTTP server.
type Server struct {
	o    Options
	echo *echo.Echo
	srv  *httpserver.Server
	// unauthorizedLog is sampled: anyone who reaches the listener can
	// cause its lines.
	unauthorizedLog zerolog.Logger
	// guard limits failed token checks (guard.go).
	guard *guard
	// nonLoopback is set by Serve when the listener is bound to anything
	// but a loopback address; until then the console takes the stricter
	// rule of a loopback listener.
	nonLoopback atomic.Bool
}

// New builds the server; Serve starts it.
func New(o Options) (*Server, error) {
	if o.Store == nil || o.Metrics == nil || o.Ready == nil || o.Token == nil || o.Submissions == nil || o.MaxSubmissionBytes < 1 || o.Retention <= 0 {
		return nil, errors.New("admin: Store, Submissions, MaxSubmissionBytes, Metrics, Ready, Token and Retention are required")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.BackupStall <= 0 {
		o.BackupStall = defaultBackupStall
	}
	sampler := logsample.New(strangerBurst, time.Second, o.LogDropped)
	if o.AuthFailed == nil {
		o.AuthFailed = func(string) {}
	}
	s := &Server{o: o, unauthorizedLog: sampler.Logger(o.Logger, "admin_unauthorized")}
	s.guard = &guard{lim: authlimit.New(authlimit.Defaults()), now: o.Now, failed: o.AuthFailed, log: s.unauthorizedLog}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleError
	e.Pre(func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			c.Response().Header().Set(APIHeader, APIName)
			return next(c)
		}
	})
	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	g := authRoutes{e, s.auth}
	g.GET("/metrics", echo.WrapHandler(o.Metrics))
	g.GET("/admin/status", s.status)
	g.GET("/admin/batches", s.listBatches)
	g.GET("/admin/batches/:id", s.showBatch)
	g.POST("/admin/batches/:id/refetch", s.refetch)
	g.POST("/admin/batches/:id/retry", s.retryNow)
	g.POST("/admin/batches/:id/redeliver", s.redeliver)
	g.GET("/admin/deliveries", s.listDeliveries)
	g.GET("/admin/quarantine", s.listQuarantine)
	g.GET("/admin/quarantine/:id", s.showQuarantine)
	g.POST("/admin/batches/:id/track", s.track)
	g.POST("/admin/batches/:id/resubmit", s.resubmit)
	g.POST("/admin/submissions", s.createSubmission)
	g.GET("/admin/submissions", s.listSubmissions)
	g.GET("/admin/submissions/:id", s.showSubmission)
	g.POST("/admin/submissions/:id/chunks/:index/resend", s.resend)
	g.GET("/admin/chunks", s.listChunks)
	g.POST("/admin/erasures", s.createErasure)
	g.GET("/admin/erasures", s.listErasures)
	g.GET("/admin/backup", s.backup)
	g.GET("/admin/payments/events", s.listPayments)
	g.GET("/admin/payments/events/:seq", s.showPayment)
	g.GET("/admin/rejected", s.listRejected)
	g.GET("/admin/rejected/:id", s.showRejected)
	if o.UI != nil {
		// The console checks its own session on every path; the API's
		// token middleware does not apply.
		ui := echo.WrapHandler(s.consoleHost(o.UI(UIParts{API: markInProcess(e), Refused: s.unauthorizedLog,
			Guard: Guard{g: s.guard, surface: SurfaceConsole}})))
		e.Any("/ui", ui)
		e.Any("/ui/*", ui)
	}
	s.echo = e
	s.srv = httpserver.New("admin listener", &http.Server{Handler: e, ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: 60 * time.Second, MaxHeaderBytes: httpserver.MaxHeaderBytes(16 << 10),
		DisableGeneralOptionsHandler: true,
		ErrorLog:                     sampler.ErrorLog(o.Logger, "http_server_error")},
		httpserver.LogRefused(sampler.Logger(o.Logger, httpserver.EventAmbiguous), "admin", nil))
	return s, nil
}

// Handler returns the HTTP handler, for tests.
func (s *Server) Handler() http.Handler { return s.echo }

// Serve serves on ln in the background until Shutdown. The caller binds ln
// (so "address in use" surfaces where it binds).
func (s *Server) Serve(ln net.Listener) {
	tcp, ok := ln.Addr().(*net.TCPAddr)
	s.nonLoopback.Store(!ok || !tcp.IP.IsLoopback())
	s.srv.Serve(ln)
}

// Shutdown stops accepting, waits for in-flight requests until ctx ends,
// then closes what remains. It is safe to call more than once.
func (s *Server) Shutdown(ctx context.Context) error { return s.srv.Shutdown(ctx) }

// auth requires the bearer token when one is configured, compared in
// constant time through fixed-size digests (see bearerDigest). Without a
// token the listener is loopback (config refuses anything else), and the
// request's Host must be a loopback name or address too: otherwise a web
// page a browser on this machine opens could reach the API through DNS
// rebinding, under its own name, and read the answers. With a token, a
// sender past the limit of wrong tokens gets 429 before its token is
// looked at, and a wrong token counts towards the limit (guard.go).
func (s *Server) auth(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		token := s.o.Token()
		if len(token) == 0 {
			if !httpserver.LoopbackHost(c.Request().Host) {
				return fail(c, http.StatusForbidden, "host_not_loopback")
			}
			return next(c)
		}
		api := Guard{g: s.guard, surface: SurfaceAPI}
		if wait := api.Admit(c.Request()); wait > 0 {
			SetRetryAfter(c.Response().Header(), wait)
			return fail(c, http.StatusTooManyRequests, ReasonThrottled)
		}
		got, sent := bearerDigest(c.Request().Header.Get("Authorization"))
		token = tokenDigest(token) // both sides 32 bytes: the compare cannot leak the length
		if sent && subtle.ConstantTimeCompare([]byte(got), token) == 1 {
			return next(c)
		}
		if sent {
			api.Failed(c.Request()) // no token at all is no guess: a client not set up, not counted
		}
		// Which of the two tells the caller only what it sent, and says
		// what to fix: a client without the token, or one whose token
		// differs from the daemon's. The header follows RFC 6750 3.1: no
		// error code when no credentials came.
		reason, challenge := ReasonTokenMissing, `Bearer realm="batchhook"`
		if sent {
			reason, challenge = ReasonTokenMismatch, `Bearer realm="batchhook", error="invalid_token"`
		}
		s.unauthorizedLog.Warn().Str("event", "admin_unauthorized").Str("reason", reason).Str("remote_addr", c.Request().RemoteAddr).
			Str("url_path", netval.Text(c.Request().URL.Path, netval.Path)).Msg("admin request without a valid token")
		c.Response().Header().Set("WWW-Authenticate", challenge)
		return fail(c, http.StatusUnauthorized, reason)
	}
}

func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) readyz(c echo.Context) error {
	if err := s.o.Ready(); err != nil {
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "not_ready", "reason": err.Error()})
	}
	if s.o.Warnings != nil {
		if w := s.o.Warnings(); len(w) > 0 {
			return c.JSON(http.StatusOK, map[string]any{"status": "ready", "warnings": w})
		}
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
}

func fail(c echo.Context, code int, reason string) error {
	return c.JSON(code, map[string]string{"error": reason})
}

// storeError maps the store's errors to statuses, in one place.
func storeError(c echo.Context, err error) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fail(c, http.StatusNotFound, "not_found")
	case errors.Is(err, store.ErrState):
		return fail(c, http.StatusConflict, conflictReason(err))
	case errors.Is(err, store.ErrAmbiguous):
		return fail(c, http.StatusBadRequest, err.Error())
	case errors.Is(err, store.ErrBadCursor):
		return fail(c, http.StatusBadRequest, "bad_cursor")
	default:
		return fail(c, http.StatusInternalServerError, "store_error")
	}
}

func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	code, reason := http.StatusInternalServerError, "internal_error"
	var he *echo.HTTPError
	if errors.As(err, &he) {
		code = he.Code
		reason = strings.ToLower(strings.ReplaceAll(http.StatusText(code), " ", "_"))
	}
	_ = fail(c, code, reason)
}
