package daemon

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/internal/testutil"
)

// exchangeWait bounds one raw exchange: a refused request is answered and
// closed at once, so it is reached only when the server keeps the
// connection open.
const exchangeWait = 10 * time.Second

// A request carrying both Content-Length and Transfer-Encoding, in each of
// its spellings, is answered 400 on every listener of the daemon (the
// webhook, the admin API with the console, the profiles), the connection
// is closed, and the request hidden after its chunked body is never
// answered.
func TestEveryListenerRefusesBothLengthHeaders(t *testing.T) {
	cfg, ln, _ := testConfig(t, t.TempDir())
	cfg.PprofAddr = "127.0.0.1:0"
	logs := &testutil.SyncBuffer{}
	d := New(cfg, zerolog.New(logs))
	if err := d.Start(ln); err != nil {
		t.Fatal(err)
	}
	defer d.Stop(t.Context())
	listeners := []struct{ name, addr, path, hidden string }{
		{"webhook", d.addr.String(), cfg.WebhookPath, "/admin/status"},
		{"admin", d.adminAddr.String(), "/ui/login", "/admin/status"},
		{"pprof", d.pprofAddr.String(), "/debug/pprof/", "/debug/pprof/cmdline"},
	}
	type result struct {
		what string
		x    testutil.Exchange
		err  error
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		results []result
	)
	for _, l := range listeners {
		hidden := "GET " + l.hidden + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
		for _, v := range append(testutil.Smuggling(l.path, hidden), testutil.MoreSmuggling(l.path, hidden)...) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				x, err := testutil.Send(l.addr, v.Bytes, exchangeWait)
				mu.Lock()
				defer mu.Unlock()
				results = append(results, result{l.name + ", " + v.Name, x, err})
			}()
		}
	}
	wg.Wait()
	for _, r := range results {
		if r.err != nil {
			t.Errorf("%s: %v", r.what, r.err)
		} else if why := r.x.Refused(); why != "" {
			t.Errorf("%s: %s", r.what, why)
		}
	}

	// Counted on the webhook listener, logged (sampled) on each, and no
	// line quotes what the stranger sent.
	perListener := len(results) / len(listeners)
	resp, err := http.Get("http://" + d.adminAddr.String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := fmt.Sprintf("batchhook_webhook_requests_total{outcome=\"ambiguous_framing\"} %d\n", perListener); !strings.Contains(string(metrics), want) {
		t.Errorf("/metrics lacks %q", want)
	}
	seen := map[string]int{}
	for _, line := range strings.Split(logs.String(), "\n") {
		if !strings.Contains(line, `"event":"http_ambiguous_framing"`) {
			continue
		}
		for _, l := range listeners {
			if strings.Contains(line, `"listener":"`+l.name+`"`) {
				seen[l.name]++
			}
		}
		if strings.Contains(strings.ToLower(line), "chunked") || strings.Contains(line, "/hidden") || len(line) > 400 {
			t.Errorf("log line quotes the request or runs long: %s", line)
		}
	}
	for _, l := range listeners {
		if seen[l.name] != perListener {
			t.Errorf("%d http_ambiguous_framing lines for the %s listener, want %d", seen[l.name], l.name, perListener)
		}
	}
}

// The control: a chunked request and one with Content-Length, pipelined on
// one connection with a third that asks to close, are each answered on
// every listener, so the framing check finds each request where net/http
// does.
func TestEveryListenerServesPipelinedRequests(t *testing.T) {
	cfg, ln, _ := testConfig(t, t.TempDir())
	cfg.PprofAddr = "127.0.0.1:0"
	d := New(cfg, zerolog.Nop())
	if err := d.Start(ln); err != nil {
		t.Fatal(err)
	}
	defer d.Stop(t.Context())
	for _, l := range []struct{ name, addr, path string }{
		{"webhook", d.addr.String(), cfg.WebhookPath},
		{"admin", d.adminAddr.String(), "/healthz"},
		{"pprof", d.pprofAddr.String(), "/debug/pprof/cmdline"},
	} {
		body := `{"event":"batch.completed"}`
		raw := "POST " + l.path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n" +
			fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(body), body) +
			"POST " + l.path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body) +
			"GET " + l.path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
		x, err := testutil.Send(l.addr, raw, exchangeWait)
		if err != nil {
			t.Fatalf("%s: %v", l.name, err)
		}
		if len(x.Statuses) != 3 || !x.Closed {
			t.Errorf("%s: answered %v (closed %v, %v), want three answers and the close asked for", l.name, x.Statuses, x.Closed, x.Err)
		}
		for _, code := range x.Statuses {
			if code == http.StatusBadRequest {
				t.Errorf("%s: a well-framed request answered 400 (%v)", l.name, x.Statuses)
			}
		}
	}
}
