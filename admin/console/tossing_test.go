package console

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// sessionOf returns the session cookie a sign-in's reply set.
func sessionOf(t *testing.T, resp *http.Response) *http.Cookie {
	t.Helper()
	for _, ck := range resp.Cookies() {
		if ck.Name == cookieName && ck.Value != "" {
			return ck
		}
	}
	t.Fatalf("no session cookie in the reply (%d)", resp.StatusCode)
	return nil
}

// getWithCookies sends GET path with the Cookie header exactly as given
// (a browser puts the cookie with the longer Path first), redirects not
// followed.
func getWithCookies(t *testing.T, tc *testConsole, path, cookie string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, tc.srv.URL+path, nil)
	req.Header.Set("Cookie", cookie)
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// Cookie tossing: a page on another port of the same host can set a
// cookie of the console's name with a longer Path (/ui/batches), which the
// browser then sends first. The console reads every cookie of its name:
// the tossed one neither locks the operator out of the Batches page nor is
// trusted on its own.
func TestATossedCookieNeitherLocksOutNorIsTrusted(t *testing.T) {
	tc := newTestConsole(t, "tok")
	real := sessionOf(t, tc.signIn(t, tc.client(t), "tok"))
	for _, header := range []string{
		cookieName + "=tossed-by-another-port; " + cookieName + "=" + real.Value,
		cookieName + "=; " + cookieName + "=x; " + cookieName + "=" + real.Value,
		cookieName + "=" + real.Value + "; " + cookieName + "=tossed-by-another-port",
	} {
		resp, body := getWithCookies(t, tc, "/ui/batches", header)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, "b_1") {
			t.Errorf("Cookie %q: the Batches page answered %d (to %q), want 200", header, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	resp, _ := getWithCookies(t, tc, "/ui/batches", cookieName+"=tossed-by-another-port")
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("a tossed cookie alone: %d, want the sign-in (303)", resp.StatusCode)
	}
}

// Signing in again from a browser that holds a session ends that session:
// a cookie stolen before the new sign-in opens nothing after it.
func TestSigningInEndsTheBrowsersPreviousSession(t *testing.T) {
	tc := newTestConsole(t, "tok")
	c := tc.client(t)
	old := sessionOf(t, tc.signIn(t, c, "tok"))
	fresh := sessionOf(t, tc.signIn(t, c, "tok")) // the jar sends the old cookie with it
	if fresh.Value == old.Value {
		t.Fatal("the second sign-in kept the same session value")
	}
	if resp, _ := getWithCookies(t, tc, "/ui/batches", cookieName+"="+old.Value); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("the cookie of the previous session after a new sign-in: %d, want 303 (ended)", resp.StatusCode)
	}
	if resp, _ := getWithCookies(t, tc, "/ui/batches", cookieName+"="+fresh.Value); resp.StatusCode != http.StatusOK {
		t.Fatalf("the new session: %d, want 200", resp.StatusCode)
	}
	if n := tc.console.sessions.count(); n != 1 {
		t.Fatalf("%d sessions kept after signing in twice from one browser, want 1", n)
	}
}
