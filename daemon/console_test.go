package daemon

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// The console is served on the admin listener with the daemon's token,
// and BATCHHOOK_CONSOLE=false takes it away; the overview reads the real
// admin API (its counts come from the same store).
func TestConsoleOnTheAdminListener(t *testing.T) {
	for _, on := range []bool{true, false} {
		cfg, ln, _ := testConfig(t, t.TempDir())
		cfg.Console, cfg.AdminToken = on, []byte("console-test-token")
		d := New(cfg, zerolog.Nop())
		if err := d.Start(ln); err != nil {
			t.Fatal(err)
		}
		base := "http://" + d.AdminAddr().String()
		resp, err := http.Get(base + "/ui/")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !on {
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("BATCHHOOK_CONSOLE=false: GET /ui/ answered %d", resp.StatusCode)
			}
			d.Stop(context.Background())
			continue
		}
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `name="token"`) {
			t.Fatalf("GET /ui/: %d\n%s", resp.StatusCode, body)
		}
		noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err = noRedirect.PostForm(base+"/ui/login", url.Values{"token": {"console-test-token"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		var cookie *http.Cookie
		for _, c := range resp.Cookies() {
			cookie = c
		}
		if resp.StatusCode != http.StatusSeeOther || cookie == nil {
			t.Fatalf("sign-in with the daemon's token: %d, cookies %v", resp.StatusCode, resp.Cookies())
		}
		req, _ := http.NewRequest(http.MethodGet, base+"/ui/", nil)
		req.AddCookie(cookie)
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `data-field="batches.exported">0<`) {
			t.Fatalf("the overview through the real admin API: %d\n%s", resp.StatusCode, body)
		}
		d.Stop(context.Background())
	}
}
