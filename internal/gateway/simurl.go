package gateway

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"
)

// Simulation actions and the URL each opens (docs/provider-api.md §4.4).
const (
	Pay     = "pay"     // {sandbox_url}/api/transactions/<processor_transaction_id>/pay
	Receive = "receive" // the withdrawal's qrcode, {sandbox_url}/api/transactions/<transaction_ref>/receive
	Refund  = "refund"  // the receive URL with its last segment replaced by refund
)

// ErrRef is why SimulationURL refused its argument.
var ErrRef = errors.New("want an http(s) URL or a bare reference (no /, ? or #)")

// SimulationURL turns the argument of `sandbox pay|receive|refund` into the
// URL to open. A full http(s) URL (a qrcode) is used as given for pay and
// receive; for refund its last path segment is replaced by "refund". Any
// other argument is a reference: {sandbox}/api/transactions/<ref>/<action>,
// which needs the sandbox URL.
func SimulationURL(arg, sandbox, action string) (string, error) {
	if action != Pay && action != Receive && action != Refund {
		return "", fmt.Errorf("unknown action %q", action)
	}
	if strings.Contains(arg, "://") {
		u, err := url.Parse(arg)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "", ErrRef
		}
		if action != Refund {
			return arg, nil
		}
		p := strings.TrimSuffix(u.Path, "/")
		dir, last := path.Split(p)
		if last == "" || dir == "" {
			return "", fmt.Errorf("the URL has no last path segment to replace by refund")
		}
		u.Path, u.RawPath = dir+Refund, ""
		return u.String(), nil
	}
	if arg == "" || strings.ContainsAny(arg, "/?#") || strings.TrimSpace(arg) != arg || arg == "." || arg == ".." {
		return "", ErrRef
	}
	if sandbox == "" {
		return "", fmt.Errorf("sandbox URL: %w", ErrNotConfigured)
	}
	return sandbox + "/api/transactions/" + url.PathEscape(arg) + "/" + action, nil
}
