package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/batchhook/batchhook/lookupsim"
)

// BATCHHOOK_TRUSTED_PROXIES on the real binary: a
// forged delivery through a trusted proxy (loopback) is logged with the
// sender the proxy names; a bad value stops the start naming the variable.
func TestTrustedProxiesNameTheSenderInTheLog(t *testing.T) {
	t.Parallel()
	s := newSetup(t, lookupsim.Options{})
	s.env["BATCHHOOK_TRUSTED_PROXIES"] = "127.0.0.1/32"
	d := startDaemon(t, s.addr, s.env)
	req, _ := http.NewRequest(http.MethodPost, "http://"+s.addr+e2ePath, strings.NewReader("{}"))
	req.Header.Set("X-Forwarded-For", "203.0.113.7")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	waitFor(t, func() bool { return strings.Contains(d.out.String(), `"event":"webhook_rejected"`) })
	logLine(t, d.out.String(), `"event":"webhook_rejected"`, `"remote_addr":"203.0.113.7"`, `"proxy_addr":"127.0.0.1:`)

	code, stderr, _ := runServe(t, []string{binary, "serve"}, map[string]string{"BATCHHOOK_TRUSTED_PROXIES": "0.0.0.0/0"})
	if code != 2 || !strings.Contains(stderr, "BATCHHOOK_TRUSTED_PROXIES") {
		t.Fatalf("exit %d, stderr %q; want 2 naming the variable", code, stderr)
	}
}
