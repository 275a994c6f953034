package console

import (
	"errors"
	"net/http"

	"github.com/batchhook/batchhook/internal/netval"
)

// maxForm caps a console form's body: a token, a CSRF token, a CPF.
const maxForm = 8 << 10

// pageFunc renders a page for a signed-in operator.
type pageFunc func(w http.ResponseWriter, r *http.Request, ss *session)

func (c *Console) routes() *http.ServeMux {
	m := http.NewServeMux()
	m.HandleFunc("GET /ui/static/console.css", c.stylesheet)
	m.HandleFunc("GET /ui", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ui/", http.StatusSeeOther)
	})
	m.HandleFunc("GET /ui/{$}", c.page(c.overview))
	m.HandleFunc("POST /ui/login", c.login)
	m.HandleFunc("POST /ui/logout", c.action(c.logout))
	m.HandleFunc("GET /ui/batches", c.page(c.batches))
	m.HandleFunc("GET /ui/batches/{id}", c.page(c.batch))
	m.HandleFunc("GET /ui/batches/{id}/confirm", c.page(c.confirm))
	m.HandleFunc("POST /ui/batches/{id}/{action}", c.action(c.batchAction))
	m.HandleFunc("GET /ui/deliveries", c.page(c.deliveries))
	for path, h := range c.morePages() {
		m.HandleFunc(path, h)
	}
	m.HandleFunc("/ui/", c.page(func(w http.ResponseWriter, r *http.Request, ss *session) {
		c.render(w, http.StatusNotFound, "problem", view{Title: "Not found", CSRF: ss.csrf, SignedIn: true,
			Problem: "The console has no page at " + r.URL.Path + "."})
	}))
	return m
}

// page wraps a page behind the sign-in: without a live session, /ui/
// shows the sign-in form and every other page sends the browser there.
func (c *Console) page(h pageFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ss := c.sessions.get(r, c.o.Token(), c.o.Now())
		if ss == nil {
			if r.URL.Path == "/ui/" {
				c.signInPage(w, http.StatusOK, "")
				return
			}
			http.Redirect(w, r, "/ui/", http.StatusSeeOther)
			return
		}
		h(w, r, ss)
	}
}

// action wraps a state-changing POST: a live session and its CSRF token
// in the form, or 403 and nothing done.
func (c *Console) action(h pageFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, maxForm)
		if err := r.ParseForm(); err != nil {
			c.render(w, http.StatusBadRequest, "problem", view{Title: "Bad form", Problem: "The form could not be read: " + err.Error()})
			return
		}
		ss := c.sessions.get(r, c.o.Token(), c.o.Now())
		if ss == nil {
			c.render(w, http.StatusForbidden, "problem", view{Title: "Signed out",
				Problem: "Your session has ended (signed out, expired, a restart, or the admin token changed): nothing was done. Sign in again."})
			return
		}
		if !checkCSRF(r, ss) {
			c.o.Refused.Warn().Str("event", "console_csrf_refused").Str("url_path", netval.Text(r.URL.Path, netval.Path)).Str("remote_addr", r.RemoteAddr).
				Msg("a console form came without its CSRF token: refused, nothing done")
			c.render(w, http.StatusForbidden, "problem", view{Title: "Refused", CSRF: ss.csrf, SignedIn: true,
				Problem: "This request did not carry the form's CSRF token, so nothing was done. Reload the page and try again."})
			return
		}
		h(w, r, ss)
	}
}

// problemOf says an admin API failure in words for a page.
func problemOf(err error) (int, string) {
	var ae *apiError
	if errors.As(err, &ae) {
		switch ae.Status {
		case http.StatusNotFound:
			return http.StatusNotFound, "Not found."
		case http.StatusConflict, http.StatusBadRequest:
			return ae.Status, ae.Reason
		}
		return http.StatusBadGateway, ae.Error()
	}
	return http.StatusInternalServerError, err.Error()
}

func (c *Console) stylesheet(w http.ResponseWriter, r *http.Request) {
	raw, err := files.ReadFile("static/console.css")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	_, _ = w.Write(raw)
}
