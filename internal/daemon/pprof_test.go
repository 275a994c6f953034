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
