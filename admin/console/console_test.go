package console

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/admin"
	"github.com/batchhook/batchhook/internal/testutil"
)

// fakeAPI stands in for the admin API: it checks the bearer token the
// console sends, answers a few routes with fixed views and counts the
// calls, by method and path.
type fakeAPI struct {
	token string
	mu    sync.Mutex
	calls []string
}

func (f *fakeAPI) called(prefix string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if strings.HasPrefix(c, prefix) {
			n++
		}
	}
	return n
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.calls = append(f.calls, r.Method+" "+r.URL.Path)
	f.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer "+f.token {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"error":"token_mismatch"}`)
		return
	}
	age := int64(90)
	reply := func(v any) { _ = json.NewEncoder(w).Encode(v) }
	switch {
	case r.URL.Path == "/admin/status":
		reply(admin.StatusView{Ready: true, Queue: admin.QueueView{Batches: map[string]int{"queued": 3, "exported": 41, "abandoned": 1},
			OldestAgeSeconds: &age, InFlight: 2}, Sinks: []admin.SinkStatusView{{Name: "http", Pending: 4, Failed: 2, OldestAgeSeconds: &age}},
			Warnings: []string{"a warning with <b>markup</b>"}, LastAccepted: map[string]admin.LastAcceptedView{}})
	case r.URL.Path == "/admin/batches/b_1" && r.Method == http.MethodGet:
		reply(admin.BatchView{ID: "b_1", State: "exported", Status: "completed", ReceivedAt: time.Now(),
			Deliveries: []admin.DeliveryView{{BatchID: "b_1", Sink: "http", State: "failed", Attempts: 7, ErrorKind: "status_4xx", LastError: "POST …: 410 Gone"}}})
	case r.URL.Path == "/admin/batches/b_1/redeliver" && r.Method == http.MethodPost:
		w.WriteHeader(http.StatusAccepted)
		reply(admin.DeliveryView{BatchID: "b_1", Sink: r.URL.Query().Get("sink"), State: "pending"})
	case r.URL.Path == "/admin/deliveries" && r.URL.Query().Get("state") == "failed":
		reply(admin.ListReply[admin.DeliveryView]{Items: []admin.DeliveryView{{BatchID: "b_1", Sink: "http", State: "failed", ErrorKind: "status_4xx", LastError: "POST …: 410 Gone"}}})
	case r.URL.Path == "/admin/batches" && r.Method == http.MethodGet:
		reply(admin.ListReply[admin.BatchView]{Items: []admin.BatchView{{ID: "b_1", State: "exported"}}})
	default:
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error":"not_found"}`)
	}
}

// testConsole serves a console over fakeAPI on loopback; token is what
// the daemon's token is (swap it to rotate), now its clock.
type testConsole struct {
	srv     *httptest.Server
	api     *fakeAPI
	console *Console
	token   atomic.Pointer[string]
	now     atomic.Pointer[time.Time]
	logs    *testutil.SyncBuffer
}

func newTestConsole(t *testing.T, token string) *testConsole {
	t.Helper()
	tc := &testConsole{api: &fakeAPI{token: token}, logs: &testutil.SyncBuffer{}}
	tc.token.Store(&token)
	now := time.Date(2026, 11, 28, 3, 0, 0, 0, time.UTC)
	tc.now.Store(&now)
	log := zerolog.New(tc.logs)
	c, err := New(Options{API: tc.api, Token: func() []byte { return []byte(*tc.token.Load()) }, Refused: log, Logger: log,
		Now: func() time.Time { return *tc.now.Load() }, SessionTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	tc.console = c
	tc.srv = httptest.NewServer(c)
	t.Cleanup(tc.srv.Close)
	return tc
}

// client is a browser-like client: a cookie jar, redirects not followed
// (the tests look at each reply).
func (tc *testConsole) client(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func do(t *testing.T, c *http.Client, method, u string, form url.Values) (*http.Response, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp, string(raw)
}

// signIn signs c in and returns the session cookie's value.
func (tc *testConsole) signIn(t *testing.T, c *http.Client, token string) *http.Response {
	t.Helper()
	resp, _ := do(t, c, http.MethodPost, tc.srv.URL+"/ui/login", url.Values{"token": {token}})
	return resp
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func csrfOf(t *testing.T, page string) string {
	t.Helper()
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no csrf field on the page:\n%s", page)
	}
	return m[1]
}

func TestSignInSetsAStrictSessionCookieAndAWrongTokenNone(t *testing.T) {
	tc := newTestConsole(t, "s3cret-token")
	c := tc.client(t)
	resp, body := do(t, c, http.MethodGet, tc.srv.URL+"/ui/", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `name="token"`) || !strings.Contains(body, `action="/ui/login"`) {
		t.Fatalf("GET /ui/ without a session: %d\n%s", resp.StatusCode, body)
	}
	resp = tc.signIn(t, c, "zq-given-9")
	if resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
		t.Fatalf("a wrong token: %d, cookies %v; want 401 and no cookie", resp.StatusCode, resp.Cookies())
	}
	if !strings.Contains(tc.logs.String(), `"event":"console_signin_refused"`) || strings.Contains(tc.logs.String(), "zq-given-9") {
		t.Fatalf("the refused sign-in's log line (and never the token given): %s", tc.logs.String())
	}
	resp = tc.signIn(t, c, "s3cret-token")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/" {
		t.Fatalf("sign-in: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	set := resp.Header.Get("Set-Cookie")
	for _, want := range []string{cookieName + "=", "Path=/ui/", "HttpOnly", "SameSite=Strict", "Max-Age=3600"} {
		if !strings.Contains(set, want) {
			t.Errorf("Set-Cookie %q lacks %s", set, want)
		}
	}
	if strings.Contains(set, "Secure") {
		t.Errorf("Set-Cookie %q: Secure over plain HTTP would keep the browser from sending it", set)
	}
	resp, body = do(t, c, http.MethodGet, tc.srv.URL+"/ui/", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `data-field="batches.exported">41<`) {
		t.Fatalf("the overview after sign-in: %d\n%s", resp.StatusCode, body)
	}
	for _, want := range []string{"Needs attention", "1 batch was abandoned", "410 Gone", `data-field="sink.http.failed">2<`} {
		if !strings.Contains(body, want) {
			t.Errorf("the overview does not say %q:\n%s", want, body)
		}
	}
}

func TestSecureCookieBehindATLSProxy(t *testing.T) {
	tc := newTestConsole(t, "tok")
	req, _ := http.NewRequest(http.MethodPost, tc.srv.URL+"/ui/login", strings.NewReader("token=tok"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Forwarded-Proto", "https")
	resp, err := tc.client(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if set := resp.Header.Get("Set-Cookie"); !strings.Contains(set, "Secure") {
		t.Fatalf("Set-Cookie %q over TLS (by the proxy's word) lacks Secure", set)
	}
}

func TestEveryPageCarriesTheSecurityHeaders(t *testing.T) {
	tc := newTestConsole(t, "tok")
	c := tc.client(t)
	tc.signIn(t, c, "tok")
	for _, path := range []string{"/ui/", "/ui/batches", "/ui/batches/b_1", "/ui/nope", "/ui/static/console.css"} {
		resp, _ := do(t, c, http.MethodGet, tc.srv.URL+path, nil)
		h := resp.Header
		if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "script-src") || strings.Contains(csp, "unsafe") {
			t.Errorf("%s: Content-Security-Policy %q", path, csp)
		}
		if h.Get("X-Frame-Options") != "DENY" || h.Get("Referrer-Policy") != "no-referrer" || h.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: headers %v", path, h)
		}
	}
}

func TestAPostWithoutItsCSRFTokenDoesNothing(t *testing.T) {
	tc := newTestConsole(t, "tok")
	c := tc.client(t)
	tc.signIn(t, c, "tok")
	_, page := do(t, c, http.MethodGet, tc.srv.URL+"/ui/batches/b_1/confirm?action=redeliver&sink=http", nil)
	csrf := csrfOf(t, page)
	for _, form := range []url.Values{{"sink": {"http"}}, {"sink": {"http"}, "csrf": {"not-" + csrf}}} {
		resp, body := do(t, c, http.MethodPost, tc.srv.URL+"/ui/batches/b_1/redeliver", form)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "CSRF") {
			t.Fatalf("POST with %v: %d\n%s", form, resp.StatusCode, body)
		}
	}
	if n := tc.api.called("POST /admin/batches/b_1/redeliver"); n != 0 {
		t.Fatalf("the API was asked to redeliver %d time(s) without a CSRF token", n)
	}
	resp, _ := do(t, c, http.MethodPost, tc.srv.URL+"/ui/batches/b_1/redeliver", url.Values{"sink": {"http"}, "csrf": {csrf}})
	if resp.StatusCode != http.StatusSeeOther || tc.api.called("POST /admin/batches/b_1/redeliver") != 1 {
		t.Fatalf("with the token: %d, %d call(s)", resp.StatusCode, tc.api.called("POST /admin/batches/b_1/redeliver"))
	}
	loc := resp.Header.Get("Location")
	_, body := do(t, c, http.MethodGet, tc.srv.URL+loc, nil)
	if !strings.Contains(body, "Redelivery queued. Sink: http.") {
		t.Fatalf("after the redeliver (%s) the batch page does not say so:\n%s", loc, body)
	}
}

func TestSignOutAndTokenRotationEndTheSession(t *testing.T) {
	tc := newTestConsole(t, "tok")
	c := tc.client(t)
	resp := tc.signIn(t, c, "tok")
	var old *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == cookieName {
			old = ck
		}
	}
	if old == nil {
		t.Fatal("no session cookie")
	}
	_, page := do(t, c, http.MethodGet, tc.srv.URL+"/ui/", nil)
	resp, _ = do(t, c, http.MethodPost, tc.srv.URL+"/ui/logout", url.Values{"csrf": {csrfOf(t, page)}})
	if resp.StatusCode != http.StatusSeeOther || !strings.Contains(resp.Header.Get("Set-Cookie"), "Max-Age=0") {
		t.Fatalf("sign out: %d, Set-Cookie %q", resp.StatusCode, resp.Header.Get("Set-Cookie"))
	}
	// The old cookie, replayed by hand, opens nothing.
	replay := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequest(http.MethodGet, tc.srv.URL+"/ui/batches", nil)
	req.AddCookie(&http.Cookie{Name: cookieName, Value: old.Value})
	if resp, err := replay.Do(req); err != nil || resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("the signed-out cookie replayed: %v %v; want a redirect to the sign-in", resp.StatusCode, err)
	}

	c2 := tc.client(t)
	tc.signIn(t, c2, "tok")
	if resp, _ := do(t, c2, http.MethodGet, tc.srv.URL+"/ui/batches", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("signed in: %d", resp.StatusCode)
	}
	rotated := "tok-2"
	tc.token.Store(&rotated)
	if resp, _ := do(t, c2, http.MethodGet, tc.srv.URL+"/ui/batches", nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("after the token changed the session still opens pages: %d", resp.StatusCode)
	}
}

func TestASessionEndsAfterItsLifetime(t *testing.T) {
	tc := newTestConsole(t, "tok")
	c := tc.client(t)
	tc.signIn(t, c, "tok")
	later := tc.now.Load().Add(59 * time.Minute)
	tc.now.Store(&later)
	if resp, _ := do(t, c, http.MethodGet, tc.srv.URL+"/ui/batches", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("within the lifetime: %d", resp.StatusCode)
	}
	later = later.Add(2 * time.Minute)
	tc.now.Store(&later)
	if resp, _ := do(t, c, http.MethodGet, tc.srv.URL+"/ui/batches", nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("past the lifetime: %d", resp.StatusCode)
	}
}

func TestWithoutATokenNobodySignsIn(t *testing.T) {
	tc := newTestConsole(t, "")
	c := tc.client(t)
	_, body := do(t, c, http.MethodGet, tc.srv.URL+"/ui/", nil)
	if !strings.Contains(body, "BATCHHOOK_ADMIN_TOKEN") || strings.Contains(body, `name="token"`) {
		t.Fatalf("the sign-in page without a token:\n%s", body)
	}
	if resp := tc.signIn(t, c, ""); resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) != 0 {
		t.Fatalf("sign-in without a configured token: %d %v", resp.StatusCode, resp.Cookies())
	}
}

func TestMarkupFromTheAddressIsShownAsText(t *testing.T) {
	tc := newTestConsole(t, "tok")
	c := tc.client(t)
	tc.signIn(t, c, "tok")
	markup := `<img src=x id=pwned onerror=alert(1)>`
	for _, u := range []string{"/ui/batches/" + url.PathEscape(markup), "/ui/batches?q=" + url.QueryEscape(markup), "/ui/" + url.PathEscape(markup)} {
		_, body := do(t, c, http.MethodGet, tc.srv.URL+u, nil)
		if strings.Contains(body, "<img") || !strings.Contains(body, "&lt;img src=x id=pwned onerror=alert(1)&gt;") {
			t.Errorf("%s: the markup is not escaped:\n%s", u, body)
		}
	}
	// The status's warnings come from the network too (via the daemon).
	_, body := do(t, c, http.MethodGet, tc.srv.URL+"/ui/", nil)
	if strings.Contains(body, "<b>markup</b>") || !strings.Contains(body, "&lt;b&gt;markup&lt;/b&gt;") {
		t.Errorf("a warning's markup is not escaped:\n%s", body)
	}
}

func TestOldestSessionsGiveWayPastTheCap(t *testing.T) {
	s := newSessions(3)
	now := time.Now()
	var first string
	for i := range 5 {
		id, _ := s.start([]byte("t"), now.Add(time.Duration(i)*time.Second), time.Hour)
		if i == 0 {
			first = id
		}
	}
	if n := s.count(); n != 3 {
		t.Fatalf("%d sessions kept, want 3", n)
	}
	req := httptest.NewRequest(http.MethodGet, "/ui/", nil)
	req.AddCookie(&http.Cookie{Name: cookieName, Value: first})
	if s.get(req, []byte("t"), now.Add(10*time.Second)) != nil {
		t.Fatal("the oldest session outlived the cap")
	}
}

func TestChartsDrawRatesPerMinute(t *testing.T) {
	r := newRates(4)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, acc := range []float64{0, 10, 30, 30, 5} { // the last one: a restart
		r.add(t0.Add(time.Duration(i)*30*time.Second), Totals{Accepted: acc})
	}
	c := r.charts(t0, nil)[0]
	// Kept: 10, 30, 30, 5 → rates 40/min, 0, 0 (a counter going down).
	if c.Peak != "40" || c.Last != "0" || c.Span != "1m 30s" {
		t.Fatalf("chart %+v", c)
	}
	if got := strings.Count(c.Points, ","); got != 3 {
		t.Fatalf("points %q: want 3", c.Points)
	}
	if !strings.HasPrefix(c.Points, "0.0,2.0 ") {
		t.Fatalf("points %q: the peak first, at the top", c.Points)
	}
	// With the counters as they are now, the last point is current: 5 more
	// in the 30 s since the last sample is 10 a minute.
	live := r.charts(t0.Add(150*time.Second), &Totals{Accepted: 10})[0]
	if live.Last != "10" || strings.Count(live.Points, ",") != 4 {
		t.Fatalf("chart with the live counters %+v", live)
	}
}
