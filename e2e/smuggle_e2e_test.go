package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/internal/testutil"
	"github.com/batchhook/batchhook/lookupsim"
)

// The real binary: a request carrying both Content-Length and
// Transfer-Encoding, in each of the six shapes, is answered 400 on the
// webhook and the admin listeners, the connection is closed, the request
// hidden in its body is never answered, and the refusal is counted and
// logged without what the stranger sent.
func TestBinaryRefusesBothLengthHeaders(t *testing.T) {
	t.Parallel()
	s := newSetup(t, lookupsim.Options{})
	d := startDaemon(t, s.addr, s.env)
	admin := strings.TrimPrefix(d.admin, "http://")
	hidden := "GET /admin/status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
	listeners := []struct{ name, addr, path string }{{"webhook", s.addr, e2ePath}, {"admin", admin, "/ui/login"}}
	for _, l := range listeners {
		for _, v := range testutil.Smuggling(l.path, hidden) {
			x, err := testutil.Send(l.addr, v.Bytes, 20*time.Second)
			if err != nil {
				t.Fatalf("%s, %s: %v", l.name, v.Name, err)
			}
			if why := x.Refused(); why != "" {
				t.Errorf("%s, %s: %s", l.name, v.Name, why)
			}
		}
	}
	if _, metrics := get(t, d.admin+"/metrics", ""); !strings.Contains(metrics, `batchhook_webhook_requests_total{outcome="ambiguous_framing"} 6`+"\n") {
		t.Errorf("the webhook's refusals are not counted:\n%s", grepLines(metrics, "batchhook_webhook_requests_total"))
	}
	for _, l := range listeners {
		waitLogLine(t, d, `"event":"http_ambiguous_framing"`, `"listener":"`+l.name+`"`)
	}
	for _, line := range strings.Split(d.out.String(), "\n") {
		if strings.Contains(line, "http_ambiguous_framing") && (strings.Contains(strings.ToLower(line), "chunked") || strings.Contains(line, "/admin/status")) {
			t.Errorf("the log line quotes the request: %s", line)
		}
	}
}
