package admin

import (
	"net/http"

	"github.com/batchhook/batchhook/internal/httpserver"
)

// consoleHost refuses (403) a console request whose Host the console does
// not answer to (httpserver.HostAllowed): while the listener is on
// loopback, only loopback names and ConsoleHosts. Without it, a
// DNS-rebinding page in the operator's browser, under its own name
// resolved to 127.0.0.1, could load the sign-in form and guess the token
// through it, as its own origin.
func (s *Server) consoleHost(ui http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		loopback := !s.nonLoopback.Load()
		if !httpserver.HostAllowed(r.Host, loopback, s.o.ConsoleHosts) {
			http.Error(w, hostRefusal(loopback, s.o.ConsoleHosts), http.StatusForbidden)
			return
		}
		ui.ServeHTTP(w, r)
	})
}

// hostRefusal is the 403's text: it names the rule, not the Host (a
// stranger's value), and the variable that widens it.
func hostRefusal(loopback bool, names []string) string {
	rule := "a loopback name or address (localhost, 127.0.0.1, [::1])"
	if !loopback {
		rule = "a loopback name, an IP address"
	}
	if len(names) > 0 {
		return "forbidden: the console answers only under " + rule + " or a name of BATCHHOOK_CONSOLE_HOSTS on this listener"
	}
	return "forbidden: the console answers only under " + rule +
		" on this listener; set BATCHHOOK_CONSOLE_HOSTS to the name you reach it by"
}
