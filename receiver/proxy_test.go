package receiver

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/internal/signature"
	"github.com/batchhook/batchhook/internal/testutil"
	"github.com/batchhook/batchhook/store"
)

// serveWithProxies serves both webhooks with trusted (CIDRs) and returns
// the base URL and the log.
func serveWithProxies(t *testing.T, trusted ...string) (string, *testutil.SyncBuffer) {
	t.Helper()
	st, err := store.Open(t.TempDir(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var nets []*net.IPNet
	for _, c := range trusted {
		_, n, err := net.ParseCIDR(c)
		if err != nil {
			t.Fatal(err)
		}
		nets = append(nets, n)
	}
	logs := &testutil.SyncBuffer{}
	srv, err := New(Options{Path: testPath, MaxBodyBytes: 4096, Secret: func() []byte { return []byte(testSecret) },
		Store: st, Logger: zerolog.New(logs), RejectBurst: 50, TrustedProxies: nets,
		Payments: &PaymentOptions{Path: payPath, Secret: func() []byte { return []byte(paySecret) },
			DedupFields: defaultDedup, Store: st}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Serve(ln)
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	return "http://" + ln.Addr().String(), logs
}

// lastLine returns the last log line of event, decoded.
func lastLine(t *testing.T, logs *testutil.SyncBuffer, event string) map[string]any {
	t.Helper()
	var out map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["event"] == event {
			out = m
		}
	}
	if out == nil {
		t.Fatalf("no %s line in:\n%s", event, logs.String())
	}
	return out
}

func postWith(t *testing.T, url string, hdr map[string]string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader([]byte(`{"forged":true}`)))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("forged request: %d, want 401", resp.StatusCode)
	}
}

// Behind a trusted proxy (loopback here) the logged remote_addr is the
// client its X-Forwarded-For or X-Real-IP names, on both webhook paths,
// with the proxy as proxy_addr; from an untrusted peer, or with no proxy
// configured, the headers are ignored.
func TestTrustedProxyNamesTheSender(t *testing.T) {
	for _, tt := range []struct {
		name    string
		trusted []string
		hdr     map[string]string
		want    string // "" = the peer's own 127.0.0.1:port
	}{
		{"xff from trusted", []string{"127.0.0.1/32"}, map[string]string{"X-Forwarded-For": "203.0.113.7"}, "203.0.113.7"},
		{"xff chain", []string{"127.0.0.0/8", "10.0.0.0/8"}, map[string]string{"X-Forwarded-For": "198.51.100.1, 203.0.113.8, 10.1.2.3"}, "203.0.113.8"},
		{"real ip from trusted", []string{"127.0.0.1/32"}, map[string]string{"X-Real-IP": "198.51.100.9"}, "198.51.100.9"},
		{"untrusted peer", []string{"10.0.0.0/8"}, map[string]string{"X-Forwarded-For": "203.0.113.7", "X-Real-IP": "198.51.100.9"}, ""},
		{"none configured", nil, map[string]string{"X-Forwarded-For": "203.0.113.7", "X-Real-IP": "198.51.100.9"}, ""},
		{"garbage", []string{"127.0.0.1/32"}, map[string]string{"X-Forwarded-For": "not-an-ip"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			base, logs := serveWithProxies(t, tt.trusted...)
			for path, event := range map[string]string{testPath: "webhook_rejected", payPath: "payment_rejected"} {
				postWith(t, base+path, tt.hdr)
				line := lastLine(t, logs, event)
				got, _ := line["remote_addr"].(string)
				if tt.want == "" {
					if !strings.HasPrefix(got, "127.0.0.1:") || line["proxy_addr"] != nil {
						t.Fatalf("%s: remote_addr %q proxy_addr %v, want the peer and no proxy", path, got, line["proxy_addr"])
					}
					continue
				}
				proxy, _ := line["proxy_addr"].(string)
				if got != tt.want || !strings.HasPrefix(proxy, "127.0.0.1:") {
					t.Fatalf("%s: remote_addr %q proxy_addr %q, want %s via 127.0.0.1", path, got, proxy, tt.want)
				}
			}
		})
	}
}

// webhook_rejected carries the explanation `batchhook verify` prints for
// the same reason, on both webhook paths.
func TestRejectedLineExplainsLikeVerify(t *testing.T) {
	base, logs := serveWithProxies(t)
	for path, event := range map[string]string{testPath: "webhook_rejected", payPath: "payment_rejected"} {
		postWith(t, base+path, map[string]string{signature.Header: "E0JT1g23jfpLIVmVv1uaEXNnF1BMHYi2F+sQsvj022s="})
		line := lastLine(t, logs, event)
		if line["reason"] != "raw_digest_encoding" || line["explanation"] != signature.RawDigest.Explain() ||
			!strings.Contains(line["explanation"].(string), "44 characters") {
			t.Fatalf("%s: %v", path, line)
		}
	}
}
