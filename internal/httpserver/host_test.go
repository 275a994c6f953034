package httpserver

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1:6060": true, "127.0.0.1": true, "127.1.2.3:80": true, "[::1]:6060": true, "::1": true,
		"localhost:6060": true, "LOCALHOST": true, "localhost.": true, "app.localhost:1": true,
		"evil.example:6060": false, "evil.example": false, "localhost.evil.example": false, "10.0.0.1:6060": false,
		"[::2]:6060": false, "": false, "127.0.0.1.nip.io": false, "0.0.0.0:6060": false,
	} {
		if got := LoopbackHost(host); got != want {
			t.Errorf("LoopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
}

// Over a real loopback connection: the request reaches 127.0.0.1 either
// way; only its Host header tells a rebinding page from a local client.
func TestRequireLoopbackHostRefusesARebindingHost(t *testing.T) {
	srv := httptest.NewServer(RequireLoopbackHost(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "profile")
	})))
	defer srv.Close()
	for host, want := range map[string]int{"": 200, "localhost": 200, "evil.example:80": 403} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %q: %d %q, want %d", host, resp.StatusCode, body, want)
		}
	}
}
