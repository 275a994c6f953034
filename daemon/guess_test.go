package daemon

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/config"
	"github.com/batchhook/batchhook/internal/testutil"
)

// guessToken is a daemon's admin token in these tests (16 characters or
// more, as the configuration requires).
const guessToken = "guess-test-admin-token-0123456789"

// fromAddr is an HTTP client whose connections come from the loopback
// address ip (127.0.0.2, …): another client address to the daemon, as
// another machine would be. It follows no redirect.
func fromAddr(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// adminGet sends GET path with the bearer token (none when empty) and
// returns the status, Retry-After and body.
func adminGet(t *testing.T, c *http.Client, base, path, token string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), string(body)
}

// signIn posts the console's sign-in form with token under Host host
// ("" = the address) and returns the status, Retry-After and body.
func signIn(t *testing.T, c *http.Client, base, host, token string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/ui/login", strings.NewReader(url.Values{"token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if host != "" {
		req.Host = host
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), string(body)
}

func startGuessDaemon(t *testing.T, edit func(*config.Config)) (*Daemon, string, *testutil.SyncBuffer) {
	t.Helper()
	cfg, ln, _ := testConfig(t, t.TempDir())
	cfg.Console, cfg.AdminToken = true, []byte(guessToken)
	if edit != nil {
		edit(&cfg)
	}
	logs := &testutil.SyncBuffer{}
	d := New(cfg, zerolog.New(logs))
	if err := d.Start(ln); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Stop(context.Background()) })
	return d, "http://" + d.AdminAddr().String(), logs
}

// retryAfter checks a 429's Retry-After: whole seconds, at least 1.
func retryAfter(t *testing.T, what, v string) int {
	t.Helper()
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s: Retry-After %q, want whole seconds >= 1", what, v)
	}
	return n
}

// A burst of wrong tokens from one address is answered 429 with
// Retry-After after a few, on the admin API and at the console's sign-in
// alike (one limiter): past it, even the right token from that address
// waits, while another address still gets in. The failures are counted
// in batchhook_admin_auth_failures_total and the status warns of them.
func TestGuessingTheAdminTokenIsThrottled(t *testing.T) {
	_, base, logs := startGuessDaemon(t, nil)
	guesser, operator := fromAddr("127.0.0.2"), fromAddr("127.0.0.3")

	failures, throttled := 0, false
	for i := 0; i < 40 && !throttled; i++ {
		code, ra, body := adminGet(t, guesser, base, "/admin/status", "wrong-guess-"+strconv.Itoa(i))
		switch code {
		case http.StatusUnauthorized:
			failures++
		case http.StatusTooManyRequests:
			retryAfter(t, "API", ra)
			throttled = true
		default:
			t.Fatalf("wrong token %d: %d %s", i, code, body)
		}
	}
	if !throttled || failures > 10 {
		t.Fatalf("%d wrong tokens on the API answered 401 and none 429 (throttled %v)", failures, throttled)
	}
	if code, ra, _ := signIn(t, guesser, base, "", "another-wrong-guess"); code != http.StatusTooManyRequests {
		t.Fatalf("console sign-in from the throttled address: %d, want 429 (one limiter for both)", code)
	} else {
		retryAfter(t, "console", ra)
	}
	if code, _, _ := adminGet(t, guesser, base, "/admin/status", guessToken); code != http.StatusTooManyRequests {
		t.Fatalf("the right token from the throttled address: %d, want 429 (it waits too)", code)
	}
	if code, _, _ := signIn(t, guesser, base, "", guessToken); code != http.StatusTooManyRequests {
		t.Fatalf("the right token at the sign-in from the throttled address: %d, want 429", code)
	}

	// Another address is not held back by this one's guesses.
	code, _, body := adminGet(t, operator, base, "/admin/status", guessToken)
	if code != http.StatusOK {
		t.Fatalf("the right token from another address: %d %s", code, body)
	}
	var st struct{ Warnings []string }
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(st.Warnings, "\n"), "admin token") {
		t.Errorf("status warnings while guessing goes on: %q, want one about the admin token", st.Warnings)
	}
	if code, _, _ := signIn(t, operator, base, "", guessToken); code != http.StatusSeeOther {
		t.Fatalf("console sign-in from another address: %d, want 303", code)
	}
	if code, _, _ := signIn(t, fromAddr("127.0.0.4"), base, "", "wrong-guess-at-the-form"); code != http.StatusUnauthorized {
		t.Fatalf("a wrong sign-in from a fresh address: %d, want 401", code)
	}
	_, _, metrics := adminGet(t, operator, base, "/metrics", guessToken)
	for _, want := range []string{`batchhook_admin_auth_failures_total{surface="api"} ` + strconv.Itoa(failures),
		`batchhook_admin_auth_failures_total{surface="console"} 1`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %q:\n%s", want, grepLines(metrics, "auth_failures"))
		}
	}
	if strings.Contains(logs.String(), "wrong-guess") {
		t.Errorf("a guessed token reached the log")
	}
}

// Past the total limit, a fresh address is throttled too: many addresses
// guessing a few times each cannot add up to a fast guesser.
func TestGuessingFromManyAddressesMeetsTheTotalLimit(t *testing.T) {
	_, base, _ := startGuessDaemon(t, nil)
	for n := 10; n < 250; n++ {
		c := fromAddr("127.0.0." + strconv.Itoa(n))
		code, ra, body := adminGet(t, c, base, "/admin/status", "wrong-guess")
		switch code {
		case http.StatusUnauthorized:
			continue
		case http.StatusTooManyRequests:
			retryAfter(t, "total", ra)
			if n-10 < 30 {
				t.Fatalf("a fresh address was throttled after only %d addresses guessed once each", n-10)
			}
			return
		default:
			t.Fatalf("address %d: %d %s", n, code, body)
		}
	}
	t.Fatalf("240 addresses guessed once each and none was throttled: no total limit")
}

// With the admin listener on loopback, the console refuses a Host that is
// not a loopback name: a DNS-rebinding page (its own name, resolved to
// 127.0.0.1) must not even see the sign-in form.
func TestConsoleRefusesAForeignHostOnLoopback(t *testing.T) {
	_, base, _ := startGuessDaemon(t, nil)
	c := fromAddr("127.0.0.1")
	for _, host := range []string{"rebind.evil.example", "rebind.evil.example:9090", "localhost.evil.example"} {
		if code, _, body := signIn(t, c, base, host, guessToken); code != http.StatusForbidden || strings.Contains(body, guessToken) {
			t.Errorf("sign-in under Host %s: %d %s, want 403", host, code, body)
		}
		req, _ := http.NewRequest(http.MethodGet, base+"/ui/", nil)
		req.Host = host
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || strings.Contains(string(body), `name="token"`) {
			t.Errorf("GET /ui/ under Host %s: %d (sign-in form shown: %v), want 403 without the form", host, resp.StatusCode, strings.Contains(string(body), `name="token"`))
		}
	}
	for _, host := range []string{"", "localhost", "127.0.0.1"} {
		if code, _, body := signIn(t, c, base, host, guessToken); code != http.StatusSeeOther {
			t.Errorf("sign-in under Host %q: %d %s, want 303", host, code, body)
		}
	}
}

// A reload that would make the admin token shorter than 16 characters is
// refused: the old token stays and the line says why.
func TestReloadRefusesAShortAdminToken(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "admin-token")
	if err := os.WriteFile(file, []byte(guessToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d, base, logs := startGuessDaemon(t, func(c *config.Config) { c.AdminTokenFile = file })
	if err := os.WriteFile(file, []byte("tiny-Zq9\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := d.Reload(); err == nil || !strings.Contains(err.Error(), "BATCHHOOK_ADMIN_TOKEN_FILE") || !strings.Contains(err.Error(), "16") {
		t.Fatalf("reload to an 8-character token: %v; want refused, naming the variable and the minimum", err)
	}
	c := fromAddr("127.0.0.1")
	if code, _, _ := adminGet(t, c, base, "/admin/status", guessToken); code != http.StatusOK {
		t.Fatalf("the old token after the refused reload: %d, want 200", code)
	}
	if code, _, _ := adminGet(t, c, base, "/admin/status", "tiny-Zq9"); code != http.StatusUnauthorized {
		t.Fatalf("the short token after the refused reload: %d, want 401", code)
	}
	if !strings.Contains(logs.String(), `"event":"secret_reload_failed"`) || strings.Contains(logs.String(), "Zq9") {
		t.Fatalf("want a secret_reload_failed line without the value:\n%s", logs)
	}
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// A name the operator configures (BATCHHOOK_CONSOLE_HOSTS: the name a
// reverse proxy or a tunnel presents) is answered on a loopback listener;
// others still are not.
func TestConsoleAnswersAConfiguredHost(t *testing.T) {
	_, base, _ := startGuessDaemon(t, func(c *config.Config) { c.ConsoleHosts = "Ops.Example.org" })
	c := fromAddr("127.0.0.1")
	for _, host := range []string{"ops.example.org", "ops.example.org:8443", "OPS.EXAMPLE.ORG."} {
		if code, _, body := signIn(t, c, base, host, guessToken); code != http.StatusSeeOther {
			t.Errorf("sign-in under the configured Host %s: %d %s, want 303", host, code, body)
		}
	}
	if code, _, body := signIn(t, c, base, "rebind.evil.example", guessToken); code != http.StatusForbidden ||
		!strings.Contains(body, "BATCHHOOK_CONSOLE_HOSTS") || strings.Contains(body, "ops.example.org") {
		t.Errorf("sign-in under another Host: %d %q, want 403 naming the variable, not its names", code, body)
	}
}
