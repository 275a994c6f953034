package browser

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/batchhook/batchhook/admin"
	"github.com/batchhook/batchhook/demo"
	"github.com/batchhook/batchhook/lookupsim"
)

const (
	adminToken    = "browser-test-admin-token"
	signingSecret = "whsec browser secret"
	apiKey        = "key-browser"
	webhookPath   = "/webhooks/batch-completed"
	// cookieName is the console's session cookie.
	cookieName = "batchhook_console"
)

// world is one daemon with the console, the simulator behind it, an http
// sink receiver, and one exported batch whose http delivery failed: the
// receiver refused it with 400, which the sink takes as permanent.
type world struct {
	d *daemonProc
	// tokenFile holds the daemon's admin token (BATCHHOOK_ADMIN_TOKEN_FILE);
	// token is what it holds now (rotated by the last step).
	tokenFile string
	token     atomic.Pointer[string]
	id        string
	// answer is the receiver's status for every part.
	answer atomic.Int32
	recv   *demo.Receiver
	api    *http.Client
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{api: &http.Client{Timeout: waitBound}}
	w.answer.Store(http.StatusBadRequest)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	sinkSecret := "whsec_" + base64.StdEncoding.EncodeToString(key)
	recv, err := demo.NewReceiver(sinkSecret, func(context.Context, demo.Message) int { return int(w.answer.Load()) })
	if err != nil {
		t.Fatal(err)
	}
	w.recv = recv
	srv := httptest.NewServer(recv)
	t.Cleanup(srv.Close)

	ln, err := net.Listen("tcp", "127.0.0.1:0") // the daemon's webhook address, for the simulator
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	sim, err := lookupsim.New(lookupsim.Options{APIKey: apiKey, SigningSecret: []byte(signingSecret),
		WebhookURL: "http://" + addr + webhookPath, ProcessingDelay: 50 * time.Millisecond, RetryBackoff: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close(context.Background()) })
	secretFile := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secretFile, []byte(signingSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	w.tokenFile = filepath.Join(t.TempDir(), "admin-token")
	if err := os.WriteFile(w.tokenFile, []byte(adminToken), 0o600); err != nil {
		t.Fatal(err)
	}
	tok := adminToken
	w.token.Store(&tok)
	w.d = startDaemon(t, map[string]string{
		"BATCHHOOK_LISTEN_ADDR":         addr,
		"BATCHHOOK_SIGNING_SECRET_FILE": secretFile,
		"BATCHHOOK_API_KEY":             apiKey,
		"BATCHHOOK_API_BASE_URL":        sim.URL(),
		"BATCHHOOK_DATA_DIR":            t.TempDir(),
		"BATCHHOOK_ADMIN_TOKEN_FILE":    w.tokenFile,
		"BATCHHOOK_BACKOFF_BASE":        "50ms",
		"BATCHHOOK_BACKOFF_MAX":         "1s",
		"BATCHHOOK_SINKS":               "file,http",
		"BATCHHOOK_HTTP_SINK_URL":       srv.URL + "/hooks/batchhook",
		"BATCHHOOK_HTTP_SINK_SECRET":    sinkSecret,
		"BATCHHOOK_LOG_LEVEL":           "info",
	})
	if w.id, err = sim.Submit(lookupsim.SampleCPFs(40, 1)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the http delivery to fail", func() error {
		d, err := w.delivery()
		if err == nil && d.State != "failed" {
			err = fmt.Errorf("delivery %s", d.State)
		}
		return err
	})
	// One unsigned webhook, refused with 401, so that the overview's
	// count of refusals is not a zero that any page could show.
	resp, err := http.Post("http://"+addr+webhookPath, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("an unsigned webhook: HTTP %d, want 401", resp.StatusCode)
	}
	return w
}

// get decodes the admin API's reply to GET path into out.
func (w *world) get(path string, out any) error {
	req, err := http.NewRequest(http.MethodGet, w.d.admin+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+*w.token.Load())
	resp, err := w.api.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: HTTP %d: %s", path, resp.StatusCode, body)
	}
	return json.Unmarshal(body, out)
}

// delivery is the batch's http delivery as the admin API shows it.
func (w *world) delivery() (admin.DeliveryView, error) {
	var b admin.BatchView
	if err := w.get("/admin/batches/"+w.id, &b); err != nil {
		return admin.DeliveryView{}, err
	}
	for _, d := range b.Deliveries {
		if d.Sink == "http" {
			return d, nil
		}
	}
	return admin.DeliveryView{}, fmt.Errorf("batch %s (%s) has no http delivery yet", w.id, b.State)
}

// TestConsole drives the console in Chromium through one daemon, in
// order: a wrong token, signing in, the pages, a refused form, markup in
// an id, a redelivery, signing out. A step that fails stops the ones
// after it, which need what it set up.
func TestConsole(t *testing.T) {
	bin := chromium(t)
	w := newWorld(t)
	b := newBrowser(t, bin, w.d.admin)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("daemon log:\n%s\nchromium log:\n%s", w.d.out.String(), b.log.String())
		}
	})
	steps := []struct {
		name string
		fn   func(*testing.T, *world, *browser)
	}{
		{"WrongTokenSetsNoCookie", wrongToken},
		{"SignInShowsTheAPIsNumbers", signIn},
		{"PagesAndHeaders", pagesAndHeaders},
		{"FormWithoutCSRFRefused", formWithoutCSRF},
		{"MarkupInAnIDIsInert", markupIsInert},
		{"RedeliverAFailedDelivery", redeliver},
		{"ACookieFromAnotherPortIsIgnored", cookieFromAnotherPort},
		{"SignOutEndsTheSession", signOut},
		{"TokenRotationEndsTheSession", tokenRotation},
	}
	for _, s := range steps {
		if !t.Run(s.name, func(t *testing.T) { s.fn(t, w, b) }) {
			return
		}
	}
}

// wrongToken: the sign-in page refuses a wrong token with 401, and the
// browser holds no session cookie afterwards.
func wrongToken(t *testing.T, w *world, b *browser) {
	if resp := b.open(t, "/ui/"); resp.Status != http.StatusOK {
		t.Fatalf("GET /ui/ signed out: HTTP %d", resp.Status)
	}
	b.shot(t, "console-signin.png")
	b.do(t, "type a wrong token", chromedp.SendKeys(chromedp.ID("token"), "not-"+adminToken))
	resp := b.click(t, "#signin")
	if resp.Status != http.StatusUnauthorized {
		t.Fatalf("a wrong token: HTTP %d, want 401", resp.Status)
	}
	if got := b.text(t, "#problem"); got != "That is not the admin token." {
		t.Fatalf("a wrong token: the page says %q", got)
	}
	if c := b.cookie(t); c != nil {
		t.Fatalf("a wrong token left a session cookie: %+v", c)
	}
	if !contains(w.d.out.String(), `"event":"console_signin_refused"`, `"reason":"token_mismatch"`) {
		t.Fatal("a wrong token was not logged as console_signin_refused")
	}
}

// signIn types the token and clicks; the overview's numbers are then
// exactly the admin API's.
func signIn(t *testing.T, w *world, b *browser) {
	b.open(t, "/ui/")
	b.do(t, "type the token", chromedp.SendKeys(chromedp.ID("token"), adminToken))
	if resp := b.click(t, "#signin"); resp.Status != http.StatusOK {
		t.Fatalf("sign in: the page after it answered HTTP %d", resp.Status)
	}
	if p := b.path(t); p != "/ui/" {
		t.Fatalf("sign in led to %s, want /ui/", p)
	}
	b.do(t, "the overview", chromedp.WaitVisible(chromedp.ID("health")))
	c := b.cookie(t)
	if c == nil || !c.HTTPOnly || c.SameSite != network.CookieSameSiteStrict || c.Path != "/ui/" {
		t.Fatalf("session cookie %+v, want HttpOnly, SameSite=Strict, Path=/ui/", c)
	}
	shown := run(t, b, "the data fields", chromedp.Evaluate[map[string]string](
		`Object.fromEntries([...document.querySelectorAll('[data-field]')].map(e => [e.dataset.field, e.textContent.trim()]))`))
	var s admin.StatusView
	if err := w.get("/admin/status", &s); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"unauthorized_webhooks": strconv.FormatUint(s.UnauthorizedWebhooks, 10),
		"not_found_requests":    strconv.FormatUint(s.NotFoundRequests, 10),
		"in_flight":             strconv.Itoa(s.Queue.InFlight),
	}
	for _, st := range []string{"submitted", "tracked", "queued", "fetching", "exported", "abandoned", "purged"} {
		want["batches."+st] = strconv.Itoa(s.Queue.Batches[st])
	}
	for _, sk := range s.Sinks {
		want["sink."+sk.Name+".pending"] = strconv.Itoa(sk.Pending)
		want["sink."+sk.Name+".failed"] = strconv.Itoa(sk.Failed)
	}
	for k, n := range s.Chunks {
		want["chunks."+k] = strconv.Itoa(n)
	}
	for k, v := range want {
		if shown[k] != v {
			t.Errorf("overview %s = %q, the admin API says %s", k, shown[k], v)
		}
	}
	// And those numbers are the world's: one batch, exported, its http
	// delivery failed, one refused webhook.
	for k, v := range map[string]string{"batches.exported": "1", "sink.http.failed": "1", "sink.http.pending": "0",
		"unauthorized_webhooks": "1", "in_flight": "0"} {
		if shown[k] != v {
			t.Errorf("overview %s = %q, want %s", k, shown[k], v)
		}
	}
	b.shot(t, "console-overview.png")
}

// pagesAndHeaders: the batches list, the batch page and the failed
// deliveries show the batch; the pages carry the CSP and X-Frame-Options.
func pagesAndHeaders(t *testing.T, w *world, b *browser) {
	resp := b.open(t, "/ui/batches")
	if got := b.text(t, "#batches"); !strings.Contains(got, w.id) {
		t.Fatalf("the batches list lacks %s: %s", w.id, got)
	}
	checkHeaders(t, "GET /ui/batches in the browser", func(k string) string { return header(resp.Headers, k) })
	b.shot(t, "console-batches.png")

	b.open(t, "/ui/batches/"+w.id)
	if got := b.text(t, "#timeline"); !contains(got, "Exported (version 0)", "Delivery to http: failed", "HTTP 400") {
		t.Fatalf("the batch's timeline lacks the failed delivery: %s", got)
	}
	b.shot(t, "console-batch.png")

	b.open(t, "/ui/deliveries?state=failed&sink=http")
	if got := b.text(t, "#deliveries"); !contains(got, w.id, "http", "failed") {
		t.Fatalf("the failed deliveries lack %s: %s", w.id, got)
	}
	b.shot(t, "console-deliveries-failed.png")

	// The same from a plain client with the browser's cookie: the
	// headers on a signed-in page, and on the sign-in page.
	c := b.cookie(t)
	for _, signedIn := range []bool{true, false} {
		req, _ := http.NewRequest(http.MethodGet, w.d.admin+"/ui/", nil)
		if signedIn {
			req.AddCookie(&http.Cookie{Name: cookieName, Value: c.Value})
		}
		resp, err := w.api.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if signedIn != strings.Contains(string(body), `id="health"`) {
			t.Fatalf("GET /ui/ (signed in: %v) shows the wrong page:\n%s", signedIn, body)
		}
		checkHeaders(t, fmt.Sprintf("GET /ui/ (signed in: %v)", signedIn), resp.Header.Get)
	}
}

// checkHeaders checks the console's security headers.
func checkHeaders(t *testing.T, what string, get func(string) string) {
	t.Helper()
	csp := get("Content-Security-Policy")
	for _, d := range []string{"default-src 'none'", "form-action 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, d) {
			t.Errorf("%s: Content-Security-Policy %q lacks %s", what, csp, d)
		}
	}
	if strings.Contains(csp, "script-src") {
		t.Errorf("%s: Content-Security-Policy %q allows a script", what, csp)
	}
	if got := get("X-Frame-Options"); got != "DENY" {
		t.Errorf("%s: X-Frame-Options %q, want DENY", what, got)
	}
}

// header reads a header from a DevTools response, whatever its case.
func header(h network.Headers, name string) string {
	for k, v := range h {
		if strings.EqualFold(k, name) {
			s, _ := v.(string)
			return s
		}
	}
	return ""
}

// formWithoutCSRF: the confirm page's form, its csrf field removed,
// is refused with 403 and nothing is done.
func formWithoutCSRF(t *testing.T, w *world, b *browser) {
	before, err := w.delivery()
	if err != nil {
		t.Fatal(err)
	}
	b.open(t, "/ui/batches/"+w.id+"/confirm?action=redeliver&sink=http")
	removed := run(t, b, "remove the csrf field", chromedp.Evaluate[int](
		`(() => { const f = document.querySelectorAll('form input[name=csrf]'); f.forEach(e => e.remove()); return f.length })()`))
	if removed < 1 {
		t.Fatal("the confirm page has no csrf field to remove")
	}
	resp := b.click(t, "#confirm")
	if resp.Status != http.StatusForbidden {
		t.Fatalf("a form without its CSRF token: HTTP %d, want 403", resp.Status)
	}
	if got := b.text(t, "#problem"); !strings.Contains(got, "CSRF") {
		t.Fatalf("the 403 page says %q", got)
	}
	after, err := w.delivery()
	if err != nil {
		t.Fatal(err)
	}
	if after.State != "failed" || after.Attempts != before.Attempts || !after.QueuedAt.Equal(before.QueuedAt) {
		t.Fatalf("the refused form changed the delivery: before %+v, after %+v", before, after)
	}
	if !strings.Contains(w.d.out.String(), `"event":"console_csrf_refused"`) {
		t.Fatal("the refused form was not logged as console_csrf_refused")
	}
}

// markupIsInert: markup in a batch id, in the path or in the search
// field, is shown as text; no element of it exists and no script runs.
func markupIsInert(t *testing.T, w *world, b *browser) {
	const markup = `"><img src=x id=pwned onerror=alert(document.domain)>`
	ctx, stop := context.WithCancel(b.tab)
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	var opened atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, err := range dialogs {
			if err != nil {
				return
			}
			opened.Add(1)
			go func() { // a dialog blocks the page until it is answered
				_, _ = chromedp.Call(b.tab, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{})
			}()
		}
	}()
	defer func() { stop(); <-done }()

	// The listener hears a dialog when there is one: the same markup in a
	// page of its own, outside the console, opens one.
	b.do(t, "the markup in a page of its own", chromedp.Navigate("data:text/html,"+url.PathEscape(markup)))
	waitFor(t, "the control page's dialog", func() error {
		if opened.Load() == 0 {
			return fmt.Errorf("no dialog")
		}
		return nil
	})
	opened.Store(0)

	for _, path := range []string{"/ui/batches/" + url.PathEscape(markup), "/ui/batches?q=" + url.QueryEscape(markup)} {
		resp := b.open(t, path)
		if resp.Status == http.StatusOK && !strings.Contains(path, "?q=") {
			t.Fatalf("%s: HTTP 200 for a batch that does not exist", path)
		}
		if got := b.text(t, "#problem"); !strings.Contains(got, markup) {
			t.Errorf("%s: the page does not show the markup as text: %q", path, got)
		}
		if n := run(t, b, "count img elements", chromedp.Evaluate[int](`document.querySelectorAll('img').length`)); n != 0 {
			t.Errorf("%s: the page has %d img element(s)", path, n)
		}
		if run(t, b, "look for #pwned", chromedp.Evaluate[bool](`document.getElementById('pwned') !== null`)) {
			t.Errorf("%s: the markup made an element", path)
		}
	}
	if v := run(t, b, "the search field", chromedp.Value(chromedp.ID("q"))); v != markup {
		t.Errorf("the search field holds %q, want the markup as typed", v)
	}
	// A dialog opens as the page loads, before the load event the
	// navigations waited for; a reload of the page flushes the events.
	b.do(t, "reload", chromedp.Reload())
	if n := opened.Load(); n != 0 {
		t.Fatalf("%d dialog(s) opened on the console's pages", n)
	}
}

// redeliver: the receiver now accepts; the failed deliveries page's
// link, the confirm page and its button queue a redelivery, which ends
// delivered on the batch page and in the admin API.
func redeliver(t *testing.T, w *world, b *browser) {
	w.answer.Store(http.StatusOK)
	b.open(t, "/ui/deliveries?state=failed&sink=http")
	b.click(t, "#deliveries a.redeliver")
	want := "/ui/batches/" + w.id + "/confirm?action=redeliver&sink=http"
	if p := b.path(t); p != want {
		t.Fatalf("the redeliver link led to %s, want %s", p, want)
	}
	b.shot(t, "console-confirm.png")
	resp := b.click(t, "#confirm")
	if p := b.path(t); resp.Status != http.StatusOK || !strings.HasPrefix(p, "/ui/batches/"+w.id+"?") {
		t.Fatalf("confirm: HTTP %d at %s, want the batch page", resp.Status, p)
	}
	if got := b.text(t, "#flash"); got != "Redelivery queued. Sink: http." {
		t.Fatalf("the flash says %q", got)
	}
	waitFor(t, "the batch page to show the delivery delivered", func() error {
		ctx, cancel := b.ctx()
		defer cancel()
		if err := chromedp.Do(ctx, chromedp.Navigate(b.base+"/ui/batches/"+w.id)); err != nil {
			return err
		}
		got, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.ID("timeline")))
		if err == nil && !strings.Contains(got, "Delivery to http: delivered") {
			err = fmt.Errorf("timeline: %s", strings.Join(strings.Fields(got), " "))
		}
		return err
	})
	d, err := w.delivery()
	if err != nil {
		t.Fatal(err)
	}
	if d.State != "delivered" || d.DeliveredAt == nil {
		t.Fatalf("the admin API shows the delivery %+v, want delivered", d)
	}
	if len(w.recv.Messages()) == 0 {
		t.Fatal("the receiver accepted no part")
	}
}

// signOut: after the button, the pages send the browser to the sign-in
// form, and the old cookie's value no longer opens a session.
func signOut(t *testing.T, w *world, b *browser) {
	b.open(t, "/ui/")
	old := b.cookie(t)
	if old == nil {
		t.Fatal("no session cookie before signing out")
	}
	b.click(t, "#signout")
	b.do(t, "the sign-in form", chromedp.WaitVisible(chromedp.ID("token")))
	if c := b.cookie(t); c != nil {
		t.Fatalf("the browser still holds the session cookie: %+v", c)
	}
	b.open(t, "/ui/batches")
	if p := b.path(t); p != "/ui/" {
		t.Fatalf("/ui/batches after signing out led to %s, want /ui/", p)
	}
	b.do(t, "the sign-in form", chromedp.WaitVisible(chromedp.ID("signin")))

	noFollow := &http.Client{Timeout: waitBound, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequest(http.MethodGet, w.d.admin+"/ui/batches", nil)
	req.AddCookie(&http.Cookie{Name: cookieName, Value: old.Value})
	resp, err := noFollow.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/" {
		t.Fatalf("the old cookie on /ui/batches: HTTP %d to %q, want 303 to /ui/", resp.StatusCode, resp.Header.Get("Location"))
	}
	form := url.Values{"csrf": {"anything"}}
	req, _ = http.NewRequest(http.MethodPost, w.d.admin+"/ui/logout", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: cookieName, Value: old.Value})
	if resp, err = noFollow.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a POST with the old cookie: HTTP %d, want 403", resp.StatusCode)
	}
}

// tokenRotation: a session signed in with the old admin token ends when
// the token file is rewritten and the daemon reloads it (SIGHUP); the new
// token signs in.
func tokenRotation(t *testing.T, w *world, b *browser) {
	b.open(t, "/ui/")
	b.do(t, "type the token", chromedp.SendKeys(chromedp.ID("token"), adminToken))
	b.click(t, "#signin")
	b.do(t, "the overview", chromedp.WaitVisible(chromedp.ID("health")))
	b.open(t, "/ui/batches")
	if p := b.path(t); p != "/ui/batches" {
		t.Fatalf("signed in, /ui/batches led to %s", p)
	}
	rotated := adminToken + "-rotated"
	if err := os.WriteFile(w.tokenFile, []byte(rotated), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := w.d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	w.token.Store(&rotated)
	waitFor(t, "the daemon to take the new admin token", func() error {
		var s admin.StatusView
		return w.get("/admin/status", &s)
	})
	b.open(t, "/ui/batches")
	if p := b.path(t); p != "/ui/" {
		t.Fatalf("after the token was rotated /ui/batches led to %s, want the sign-in at /ui/", p)
	}
	b.do(t, "the sign-in form", chromedp.WaitVisible(chromedp.ID("signin")))
	b.do(t, "type the new token", chromedp.SendKeys(chromedp.ID("token"), rotated))
	b.click(t, "#signin")
	b.do(t, "the overview", chromedp.WaitVisible(chromedp.ID("health")))
}
