package console

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"

	"github.com/batchhook/batchhook/admin"
)

// signInPage shows the sign-in form; problem says why the last attempt
// failed.
func (c *Console) signInPage(w http.ResponseWriter, status int, problem string) {
	c.render(w, status, "login", view{Title: "Sign in", Problem: problem, D: struct{ NoToken bool }{len(c.o.Token()) == 0}})
}

// login is POST /ui/login: the form's token against the admin token, in
// constant time. A wrong one sets no cookie, is logged, sampled, and
// counts towards the limit of wrong tokens the admin API's bearer check
// shares (Guard); past it, the sign-in answers 429 with Retry-After
// before looking at the token. A sign-in ends the session the browser
// held.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		c.signInPage(w, http.StatusBadRequest, "The form could not be read.")
		return
	}
	tok := c.o.Token()
	if len(tok) == 0 {
		c.signInPage(w, http.StatusForbidden, "No admin token is configured, so nobody can sign in: set BATCHHOOK_ADMIN_TOKEN or BATCHHOOK_ADMIN_TOKEN_FILE and reload the daemon (SIGHUP).")
		return
	}
	if wait := c.o.Guard.Admit(r); wait > 0 {
		admin.SetRetryAfter(w.Header(), wait)
		c.signInPage(w, http.StatusTooManyRequests, fmt.Sprintf("Too many wrong tokens came from this address (or from everywhere): "+
			"try again in %d s. The token was not checked.", admin.RetryAfter(wait)))
		return
	}
	given, want := sha256.Sum256([]byte(r.PostFormValue("token"))), sha256.Sum256(tok)
	if subtle.ConstantTimeCompare(given[:], want[:]) != 1 {
		reason := "token_mismatch"
		if r.PostFormValue("token") == "" {
			reason = "token_missing"
		} else {
			c.o.Guard.Failed(r) // an empty form is no guess
		}
		c.o.Refused.Warn().Str("event", "console_signin_refused").Str("reason", reason).Str("remote_addr", r.RemoteAddr).
			Msg("a console sign-in with a wrong admin token was refused")
		c.signInPage(w, http.StatusUnauthorized, "That is not the admin token.")
		return
	}
	// The browser's previous session, if it sent one, ends here: a
	// session is never carried past a new sign-in.
	c.sessions.end(r)
	id, _ := c.sessions.start(tok, c.o.Now(), c.o.SessionTTL)
	http.SetCookie(w, sessionCookie(r, id, c.o.SessionTTL))
	c.o.Logger.Info().Str("event", "console_signin").Str("remote_addr", r.RemoteAddr).Msg("an operator signed in to the console")
	http.Redirect(w, r, "/ui/", http.StatusSeeOther)
}

// logout is POST /ui/logout: the session ends here and in the browser.
func (c *Console) logout(w http.ResponseWriter, r *http.Request, _ *session) {
	c.sessions.end(r)
	http.SetCookie(w, sessionCookie(r, "", 0))
	c.o.Logger.Info().Str("event", "console_signout").Str("remote_addr", r.RemoteAddr).Msg("an operator signed out of the console")
	http.Redirect(w, r, "/ui/", http.StatusSeeOther)
}
