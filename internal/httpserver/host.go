package httpserver

import (
	"net"
	"net/http"
	"strings"
)

// LoopbackHost reports whether a request's Host names this machine's
// loopback: "localhost" (or a name under ".localhost"), or an address in
// 127.0.0.0/8 or ::1, with or without a port. A listener that relies on
// being reachable only from this machine (no token) must also check the
// Host: through DNS rebinding, a web page a local browser opens can send
// requests to 127.0.0.1 under its own name (evil.example), and read the
// answers as its own. Its Host is then that name, never a loopback one.
func LoopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	return ip != nil && ip.IsLoopback()
}

// RequireLoopbackHost answers 403 to a request whose Host is not a
// loopback name or address (LoopbackHost), and passes the others to next.
func RequireLoopbackHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !LoopbackHost(r.Host) {
			http.Error(w, ErrHostNotLoopback, http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// HostAllowed reports whether a request's Host may reach a page that a
// DNS-rebinding page must not (a sign-in form): on a listener bound to
// loopback, a loopback name or address (LoopbackHost) or one of names;
// on any other listener, any Host while names is empty (the operator
// reaches it by whatever name the network gives it), else a loopback
// name, an IP address or one of names. A rebinding page's Host is always
// its own DNS name, never an address. names are lower case, without port
// or trailing dot.
func HostAllowed(host string, loopbackListener bool, names []string) bool {
	if LoopbackHost(host) {
		return true
	}
	if !loopbackListener && len(names) == 0 {
		return true
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, n := range names {
		if host == n {
			return true
		}
	}
	return !loopbackListener && net.ParseIP(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")) != nil
}

// ErrHostNotLoopback is the 403's text: it names the rule, not the Host
// (a stranger's value).
const ErrHostNotLoopback = "forbidden: the Host header must be a loopback name or address (localhost, 127.0.0.1, [::1]) on this listener"

// headerSlack is how much net/http reads past Server.MaxHeaderBytes
// before it answers 431: it lets the request line and headers together
// reach MaxHeaderBytes+4096 bytes.
const headerSlack = 4096

// MaxHeaderBytes returns the http.Server.MaxHeaderBytes that makes
// net/http refuse (431) a request whose request line and headers, blank
// line included, exceed total bytes, so the limit the docs state is the
// one enforced. A total of 4 KiB or less cannot be met exactly (net/http
// reads at least 4097 bytes); it gives the smallest limit net/http has.
func MaxHeaderBytes(total int) int { return max(total-headerSlack, 1) }
