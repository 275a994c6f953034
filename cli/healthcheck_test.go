package cli

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// --wait keeps asking through not-ready answers and succeeds on the first
// 200; when none comes in time it exits 1 naming the not-ready reason.
func TestHealthcheckWaitsForReady(t *testing.T) {
	var asked, readyAfter atomic.Int64
	readyAfter.Store(3)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		if asked.Add(1) < readyAfter.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"status":"not_ready","reason":"store not writable: disk full"}`))
			return
		}
		w.Write([]byte(`{"status":"ready"}`))
	}))
	t.Cleanup(srv.Close)

	out, errOut, code := runIn(t, healthcheckCmd, "--ready", "--wait", "30s", "--admin", srv.URL)
	if code != 0 || !strings.Contains(out, "200 OK") || asked.Load() != 3 {
		t.Fatalf("wait for ready = %d after %d requests\n%s%s", code, asked.Load(), out, errOut)
	}
	if !strings.Contains(errOut, "waiting up to 30s for "+srv.URL+"/readyz (now: 503 Service Unavailable: store not writable: disk full)") {
		t.Fatalf("the wait was not announced with what it saw: %q", errOut)
	}

	readyAfter.Store(1 << 40)
	out, errOut, code = runIn(t, healthcheckCmd, "--ready", "--wait", "600ms", "--admin", srv.URL)
	if code != 1 || out != "" || !strings.Contains(errOut, "did not answer 200 within 600ms; last: 503 Service Unavailable: store not writable: disk full") {
		t.Fatalf("timed out = %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code := runIn(t, healthcheckCmd, "--wait", "-1s", "--admin", srv.URL); code != 2 || !strings.Contains(errOut, "must not be negative") {
		t.Fatalf("negative wait = %d %q, want 2", code, errOut)
	}
	// Without --wait it asks once, as before.
	before := asked.Load()
	if out, _, code := runIn(t, healthcheckCmd, "--ready", "--admin", srv.URL); code != 1 || !strings.HasPrefix(out, "503 ") || asked.Load() != before+1 {
		t.Fatalf("without --wait = %d %q after %d requests", code, out, asked.Load()-before)
	}
}
