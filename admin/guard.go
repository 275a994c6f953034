package admin

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/internal/authlimit"
)

// Guessing the admin token costs time (docs/decisions.md, 39): failed
// checks of the token, at the API's bearer check and at the console's
// sign-in alike, go to one limiter, per client address and in total
// (authlimit.Defaults()). Past it the sender gets 429 with Retry-After,
// whatever it sends, the right token included.
//
// The client address is the TCP peer: the admin listener trusts no
// forwarding header (BATCHHOOK_TRUSTED_PROXIES is the webhook listener's),
// so behind a reverse proxy every browser shares the proxy's address.

// The surfaces where the admin token is checked: the label of
// batchhook_admin_auth_failures_total and the surface field of
// admin_auth_throttled.
const (
	SurfaceAPI     = "api"
	SurfaceConsole = "console"
)

// Surfaces are every surface, for metrics to start at 0.
var Surfaces = []string{SurfaceAPI, SurfaceConsole}

// Guard is the admin listener's limiter of failed token checks as one
// surface sees it. The console gets the console's (UIParts.Guard).
type Guard struct {
	g       *guard
	surface string
}

// guard is what the surfaces share.
type guard struct {
	lim    *authlimit.Limiter
	now    func() time.Time
	failed func(surface string)
	// log is the listener's sampled logger of refused requests.
	log zerolog.Logger
}

// Admit returns 0 when r's sender may have its token checked now, and
// otherwise how long it must wait; a refusal is logged (sampled) as
// admin_auth_throttled. A request the console makes in process for a
// signed-in operator is always admitted: its session was checked.
func (g Guard) Admit(r *http.Request) time.Duration {
	if inProcess(r.Context()) {
		return 0
	}
	w := g.g.lim.Wait(r.RemoteAddr, g.g.now())
	if w > 0 {
		g.g.log.Warn().Str("event", "admin_auth_throttled").Str("surface", g.surface).Str("remote_addr", r.RemoteAddr).
			Int("retry_after_seconds", RetryAfter(w)).Msg("too many wrong admin tokens from this address or in total: refused without checking the token")
	}
	return w
}

// Failed counts a failed check of the token r carried.
func (g Guard) Failed(r *http.Request) {
	if inProcess(r.Context()) {
		return
	}
	g.g.lim.Fail(r.RemoteAddr, g.g.now())
	g.g.failed(g.surface)
}

// RetryAfter is a wait in the whole seconds of a Retry-After header,
// rounded up, at least 1.
func RetryAfter(d time.Duration) int {
	return max(int((d+time.Second-1)/time.Second), 1)
}

// SetRetryAfter sets the Retry-After header of a 429 for a wait of d.
func SetRetryAfter(h http.Header, d time.Duration) {
	h.Set("Retry-After", strconv.Itoa(RetryAfter(d)))
}

// inProcessKey marks the requests the console sends the API in process.
type inProcessKey struct{}

// inProcess says whether ctx is that of a request the console sent in
// process; no request from the network carries the mark.
func inProcess(ctx context.Context) bool {
	v, _ := ctx.Value(inProcessKey{}).(bool)
	return v
}

// markInProcess wraps the API's handler for the console: its requests
// come from a signed-in session, not from the network.
func markInProcess(api http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		api.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), inProcessKey{}, true)))
	})
}

// guessingWarning is the status's warning while someone may be guessing
// the token: at least a burst's worth of failures (more than an operator's
// typos) in the limiter's window; "" when there were fewer.
func (g *guard) guessingWarning(now time.Time) string {
	l := g.lim.Limits()
	n, last := g.lim.Recent(now)
	if n < l.PerAddrBurst {
		return ""
	}
	return fmt.Sprintf("%s in the last %s (API and console sign-in), the last %s ago: someone may be guessing the admin token; "+
		"admin_unauthorized, console_signin_refused and admin_auth_throttled in the log name the addresses "+
		"(batchhook_admin_auth_failures_total counts them; docs/operations.md, when someone guesses the admin token)",
		countOf(n, "wrong admin token", "wrong admin tokens"), FormatAge(l.Window), FormatAge(now.Sub(last)))
}
