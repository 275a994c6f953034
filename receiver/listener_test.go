package receiver

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// rawStatus sends req as is on a new connection and returns the status
// code of the answer.
func rawStatus(t *testing.T, url, req string) int {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("read the answer to %.60q: %v", req, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// headerBlock returns a GET of the webhook path whose request line and
// headers, blank line included, are exactly n bytes.
func headerBlock(n int) string {
	head := "GET " + testPath + " HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: "
	pad := n - len(head) - len("\r\n\r\n")
	return head + strings.Repeat("p", pad) + "\r\n\r\n"
}

// The header limit docs/configuration.md states (16 KiB: request line
// and headers together) is the one enforced, to the byte; "OPTIONS *",
// which net/http answers 200 on its own, and paths outside the webhook's
// are 404, another method on a webhook path 405.
func TestListenerEnforcesTheStatedHeaderLimitAndServesOnlyItsPaths(t *testing.T) {
	e := start(t, nil)
	if got := len(headerBlock(16 << 10)); got != 16<<10 {
		t.Fatalf("the test's header block is %d bytes", got)
	}
	if code := rawStatus(t, e.url, headerBlock(16<<10)); code != http.StatusMethodNotAllowed {
		t.Errorf("a 16384-byte header block: %d, want 405 (read whole, then the method refused)", code)
	}
	if code := rawStatus(t, e.url, headerBlock(16<<10+1)); code != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("a 16385-byte header block: %d, want 431", code)
	}
	for _, req := range []string{
		"OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
		"OPTIONS / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
		"POST /webhooks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n",
	} {
		if code := rawStatus(t, e.url, req); code != http.StatusNotFound {
			t.Errorf("%q: %d, want 404", strings.SplitN(req, "\r\n", 2)[0], code)
		}
	}
	opt := fmt.Sprintf("OPTIONS %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", testPath)
	if code := rawStatus(t, e.url, opt); code != http.StatusMethodNotAllowed {
		t.Errorf("OPTIONS on the webhook path: %d, want 405", code)
	}
}
