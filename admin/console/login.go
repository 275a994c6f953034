package console

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
)

// signInPage shows the sign-in form; problem says why the last attempt
// failed.
func (c *Console) signInPage(w http.ResponseWriter, status int, problem string) {
	c.render(w, status, "login", view{Title: "Sign in", Problem: problem, D: struct{ NoToken bool }{len(c.o.Token()) == 0}})
}

// login is POST /ui/login: the form's token against the admin token, in
// constant time. A wrong one sets no cookie and is logged, sampled.
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
	given, want := sha256.Sum256([]byte(r.PostFormValue("token"))), sha256.Sum256(tok)
	if subtle.ConstantTimeCompare(given[:], want[:]) != 1 {
		reason := "token_mismatch"
		if r.PostFormValue("token") == "" {
			reason = "token_missing"
		}
		c.o.Refused.Warn().Str("event", "console_signin_refused").Str("reason", reason).Str("remote_addr", r.RemoteAddr).
			Msg("a console sign-in with a wrong admin token was refused")
		c.signInPage(w, http.StatusUnauthorized, "That is not the admin token.")
		return
	}
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
