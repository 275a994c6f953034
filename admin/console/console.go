// Package console is the operator's console: server-rendered pages on the
// admin listener under /ui/ that show the pipeline at a glance (webhook,
// fetch, export, each sink) and put the admin API's actions (refetch,
// retry, redeliver, erasure) one confirmed click away.
//
// The console holds no data of its own and reads nothing but the admin
// API: every page is rendered from that API's JSON replies, and every
// action posts to it, in process, with the current admin token. The
// numbers on a page are therefore the API's numbers, and an action is
// logged and checked exactly as the same call from the CLI would be. What
// the API never returns (result items, CPFs, payments bodies, secrets) the
// console cannot show.
//
// Safety is built in rather than added: pages come from html/template,
// which escapes every value by context; the stylesheet is embedded and
// the pages run no script at all, so the Content-Security-Policy can
// forbid every script; a session is a random cookie that is HttpOnly and
// SameSite=Strict, bound to the token it signed in with (a token rotated
// by SIGHUP ends it); every state-changing request is a POST that carries
// the session's CSRF token.
package console

import (
	"context"
	"embed"
	"errors"
	"net/http"
	"time"

	"github.com/rs/zerolog"
)

//go:embed templates/*.html static/*
var files embed.FS

// Options configures the console.
type Options struct {
	// API is the admin API's handler; the console sends it requests in
	// process, under /admin/ and /healthz, with Token as bearer token.
	API http.Handler
	// Token returns the current admin token. The console needs one: with
	// none configured its sign-in page says so and lets nobody in.
	Token func() []byte
	// Refused logs refused sign-ins; pass the admin listener's sampled
	// logger of refused requests, since anyone who reaches the listener
	// can cause these lines.
	Refused zerolog.Logger
	// Logger logs sign-ins, sign-outs and the console's own failures.
	Logger zerolog.Logger
	// SessionTTL bounds a session's life from its sign-in; 0 = 8h.
	SessionTTL time.Duration
	// Totals returns the daemon's running counters for the rate charts
	// (see Totals); nil draws no chart.
	Totals func() Totals
	// SampleEvery is how often the charts' counters are sampled; 0 = 15s.
	SampleEvery time.Duration
	Now         func() time.Time
	// Guard limits wrong tokens at the sign-in; pass the admin server's
	// (admin.UIParts.Guard), which its bearer check shares. nil limits
	// nothing.
	Guard Guard
}

// Guard is the limiter of failed token checks (admin.Guard).
type Guard interface {
	// Admit returns 0 when r's sender may have its token checked now,
	// otherwise how long it must wait.
	Admit(r *http.Request) time.Duration
	// Failed counts a wrong token from r's sender.
	Failed(r *http.Request)
}

// noGuard admits everyone.
type noGuard struct{}

func (noGuard) Admit(*http.Request) time.Duration { return 0 }
func (noGuard) Failed(*http.Request)              {}

// Console serves the pages; it is an http.Handler for the paths under
// /ui/.
type Console struct {
	o        Options
	mux      *http.ServeMux
	sessions *sessions
	pages    map[string]*page
	rates    *rates
}

// Defaults of Options.
const (
	DefaultSessionTTL  = 8 * time.Hour
	defaultSampleEvery = 15 * time.Second
	// maxSessions bounds the sessions kept: signing in past it ends the
	// oldest one.
	maxSessions = 64
)

// New builds the console; Run samples its charts' counters.
func New(o Options) (*Console, error) {
	if o.API == nil || o.Token == nil {
		return nil, errors.New("console: API and Token are required")
	}
	if o.SessionTTL <= 0 {
		o.SessionTTL = DefaultSessionTTL
	}
	if o.SampleEvery <= 0 {
		o.SampleEvery = defaultSampleEvery
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Guard == nil {
		o.Guard = noGuard{}
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	c := &Console{o: o, sessions: newSessions(maxSessions), pages: pages, rates: newRates(chartPoints)}
	c.mux = c.routes()
	return c, nil
}

// Run samples the charts' counters until ctx ends; without Totals it
// returns at once. It returns nil: a sample cannot fail.
func (c *Console) Run(ctx context.Context) error {
	if c.o.Totals == nil {
		return nil
	}
	t := time.NewTicker(c.o.SampleEvery)
	defer t.Stop()
	c.rates.add(c.o.Now(), c.o.Totals())
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			c.rates.add(c.o.Now(), c.o.Totals())
		}
	}
}

// ServeHTTP serves a console path with the security headers every page
// carries.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	c.mux.ServeHTTP(w, r)
}

// csp lets a page load only the console's own stylesheet and submit forms
// only to the console; no script runs, from anywhere.
const csp = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
