package daemon

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// With BATCHHOOK_PPROF_ADDR set, the profiles are served on their own
// loopback listener, and neither the webhook nor the admin listener serves
// them.
func TestPprofIsServedOnItsOwnListenerOnly(t *testing.T) {
	cfg, ln, _ := testConfig(t, t.TempDir())
	cfg.PprofAddr = "127.0.0.1:0"
	d := New(cfg, zerolog.Nop())
	if err := d.Start(ln); err != nil {
		t.Fatal(err)
	}
	defer d.Stop(t.Context())
	get := func(base string) (int, string) {
		t.Helper()
		resp, err := http.Get("http://" + base + "/debug/pprof/goroutine?debug=1")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := get(d.pprofAddr.String()); code != 200 || !strings.Contains(body, "goroutine profile") {
		t.Fatalf("profile listener: %d %.80q", code, body)
	}
	for name, addr := range map[string]string{"webhook": d.addr.String(), "admin": d.adminAddr.String()} {
		if code, _ := get(addr); code == 200 {
			t.Errorf("the %s listener serves /debug/pprof/", name)
		}
	}
}

// The profile listener is loopback, but a page in a
// local browser can reach it through DNS rebinding under its own name; a
// request whose Host is not a loopback name or address is refused. So is
// one to the admin API without a token (its only guard is the loopback).
func TestPprofAndTokenlessAdminAnswerOnlyALoopbackHost(t *testing.T) {
	cfg, ln, _ := testConfig(t, t.TempDir())
	cfg.PprofAddr = "127.0.0.1:0"
	d := New(cfg, zerolog.Nop())
	if err := d.Start(ln); err != nil {
		t.Fatal(err)
	}
	defer d.Stop(t.Context())
	get := func(addr, path, host string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	pprofAddr, adminAddr := d.pprofAddr.String(), d.adminAddr.String()
	_, port, _ := strings.Cut(pprofAddr, ":")
	for _, c := range []struct {
		addr, path, host string
		want             int
	}{
		{pprofAddr, "/debug/pprof/goroutine?debug=1", "", 200},
		{pprofAddr, "/debug/pprof/goroutine?debug=1", "localhost:" + port, 200},
		{pprofAddr, "/debug/pprof/goroutine?debug=1", "rebind.example:" + port, 403},
		{pprofAddr, "/debug/pprof/heap", "rebind.example", 403},
		{adminAddr, "/admin/batches", "", 200},
		{adminAddr, "/admin/batches", "rebind.example", 403},
		{adminAddr, "/healthz", "rebind.example", 200}, // probes carry no data
	} {
		if got := get(c.addr, c.path, c.host); got != c.want {
			t.Errorf("GET %s with Host %q: %d, want %d", c.path, c.host, got, c.want)
		}
	}
}

// Unset, no profile listener exists.
func TestPprofIsOffByDefault(t *testing.T) {
	cfg, ln, _ := testConfig(t, t.TempDir())
	d := New(cfg, zerolog.Nop())
	if err := d.Start(ln); err != nil {
		t.Fatal(err)
	}
	defer d.Stop(t.Context())
	if d.pprof != nil || d.pprofAddr != nil {
		t.Fatal("a profile listener runs without BATCHHOOK_PPROF_ADDR")
	}
}
