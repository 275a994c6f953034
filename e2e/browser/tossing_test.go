package browser

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// cookieFromAnotherPort: a page served on another port of 127.0.0.1 sets
// a cookie of the console's name with Path=/ui/batches, which Chromium
// keeps for the console too (cookies are not kept apart by port) and sends
// first on the Batches pages. The signed-in operator still gets the
// Batches page, not the overview.
func cookieFromAnotherPort(t *testing.T, w *world, b *browser) {
	other := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		http.SetCookie(rw, &http.Cookie{Name: cookieName, Value: "tossed-by-another-port", Path: "/ui/batches"})
		rw.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(rw, "<!doctype html><title>another port</title><p>another port")
	}))
	defer other.Close()
	b.do(t, "open the page on another port", chromedp.Navigate(other.URL+"/"))
	ctx, cancel := b.ctx()
	res, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{b.base + "/ui/batches"}})
	cancel()
	if err != nil {
		t.Fatalf("cookies: %v", err)
	}
	n := 0
	for _, c := range res.Cookies {
		if c.Name == cookieName {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("the browser holds %d cookies named %s for /ui/batches, want the console's and the tossed one", n, cookieName)
	}
	if resp := b.open(t, "/ui/batches"); resp.Status != http.StatusOK {
		t.Fatalf("/ui/batches with a tossed cookie: HTTP %d", resp.Status)
	}
	if p := b.path(t); p != "/ui/batches" {
		t.Fatalf("/ui/batches with a tossed cookie led to %s, want the Batches page", p)
	}
	b.do(t, "the batches list", chromedp.WaitVisible(chromedp.ID("batches")))
}
