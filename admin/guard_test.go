package admin

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/internal/testutil"
	"github.com/batchhook/batchhook/store"
	"github.com/batchhook/batchhook/submit"
)

const guardToken = "guard-test-token-0123456789"

// guardServer is an admin server on a real store with a clock the test
// moves, counting the failures it reports, and a stand-in console that
// calls the API in process with the right token.
type guardServer struct {
	url    string
	now    atomic.Pointer[time.Time]
	mu     sync.Mutex
	failed map[string]int
	logs   *testutil.SyncBuffer
}

func newGuardServer(t *testing.T) *guardServer {
	t.Helper()
	st, err := store.Open(t.TempDir(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	svc, err := submit.NewService(submit.ServiceOptions{Store: st, Logger: zerolog.Nop(),
		Rule:    submit.ResubmitRule{Field: "result", Values: []string{"pending"}, CPFField: "cpf"},
		Results: func(store.Batch) (io.ReadCloser, error) { return nil, errors.New("no results in this test") }})
	if err != nil {
		t.Fatal(err)
	}
	gs := &guardServer{failed: map[string]int{}, logs: &testutil.SyncBuffer{}}
	t0 := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	gs.now.Store(&t0)
	s, err := New(Options{Store: st, Token: func() []byte { return []byte(guardToken) }, Submissions: svc, MaxSubmissionBytes: 4096,
		Retention: 168 * time.Hour, Metrics: http.NotFoundHandler(), Logger: zerolog.New(gs.logs),
		Now: func() time.Time { return *gs.now.Load() }, Ready: func() error { return nil },
		Status: func() Facts { return Facts{StartedAt: t0} },
		AuthFailed: func(surface string) {
			gs.mu.Lock()
			defer gs.mu.Unlock()
			gs.failed[surface]++
		},
		UI: func(p UIParts) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				req := httptest.NewRequestWithContext(r.Context(), http.MethodGet, "/admin/status", nil)
				req.Header.Set("Authorization", "Bearer "+guardToken)
				req.RemoteAddr = r.RemoteAddr
				rec := httptest.NewRecorder()
				p.API.ServeHTTP(rec, req)
				w.WriteHeader(rec.Code)
			})
		}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	gs.url = srv.URL
	return gs
}

func (gs *guardServer) advance(d time.Duration) {
	n := gs.now.Load().Add(d)
	gs.now.Store(&n)
}

// The API's bearer check at fixed times: five wrong tokens, then 429 with
// Retry-After (the right token too), one more try after 10 s; the status
// warns from the fifth failure until the window has passed; a request the
// console sends in process for a signed-in operator is never held.
func TestTheBearerCheckLimitsWrongTokens(t *testing.T) {
	gs := newGuardServer(t)
	for i := range 5 {
		if code, _, body := getStatus(t, gs.url, "wrong-guess"); code != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: %d %s", i+1, code, body)
		}
		if i == 3 {
			if _, v, _ := getStatus(t, gs.url, guardToken); strings.Contains(strings.Join(v.Warnings, "\n"), "admin token") {
				t.Fatalf("the status warns after 4 wrong tokens (an operator's typos): %q", v.Warnings)
			}
		}
	}
	for _, tok := range []string{"wrong-guess", guardToken, ""} {
		req, _ := http.NewRequest(http.MethodGet, gs.url+"/admin/batches", nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "10" ||
			!strings.Contains(string(body), ReasonThrottled) {
			t.Fatalf("token %q after the burst: %d, Retry-After %q, %s; want 429, 10, %s", tok, resp.StatusCode,
				resp.Header.Get("Retry-After"), body, ReasonThrottled)
		}
	}
	// The stand-in console's in-process call with the right token passes.
	if resp, err := http.Get(gs.url + "/ui/"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the console's in-process call from a throttled address: %v %v, want 200", resp.StatusCode, err)
	}
	gs.advance(10 * time.Second)
	code, v, _ := getStatus(t, gs.url, guardToken)
	if code != http.StatusOK {
		t.Fatalf("the right token 10 s later: %d", code)
	}
	w := strings.Join(v.Warnings, "\n")
	if !strings.Contains(w, "5 wrong admin tokens in the last 15m") || !strings.Contains(w, "the last 10s ago") ||
		!strings.Contains(w, "console_signin_refused") {
		t.Fatalf("status warnings while guessing goes on: %q", v.Warnings)
	}
	gs.mu.Lock()
	failed := gs.failed["api"]
	gs.mu.Unlock()
	if failed != 5 {
		t.Fatalf("%d failures reported for the API, want 5", failed)
	}
	if n := strings.Count(gs.logs.String(), `"event":"admin_auth_throttled"`); n != 3 {
		t.Fatalf("%d admin_auth_throttled lines, want one per refused request (3):\n%s", n, gs.logs)
	}
	if strings.Contains(gs.logs.String(), "wrong-guess") || strings.Contains(gs.logs.String(), guardToken) {
		t.Fatal("a token reached the log")
	}
	gs.advance(15 * time.Minute)
	if _, v, _ := getStatus(t, gs.url, guardToken); strings.Contains(strings.Join(v.Warnings, "\n"), "admin token") {
		t.Fatalf("the warning outlived its window: %q", v.Warnings)
	}
}

// No token at all is not a guess: a client that is not set up is refused
// (401) without counting towards the limit.
func TestAMissingTokenIsNotCounted(t *testing.T) {
	gs := newGuardServer(t)
	for range 20 {
		if code, _, _ := getStatus(t, gs.url, ""); code != http.StatusUnauthorized {
			t.Fatalf("no token: %d, want 401", code)
		}
	}
	if code, _, _ := getStatus(t, gs.url, guardToken); code != http.StatusOK {
		t.Fatalf("the right token after 20 requests without one: %d", code)
	}
}

func TestRetryAfterRoundsUp(t *testing.T) {
	for d, want := range map[time.Duration]int{time.Millisecond: 1, time.Second: 1, 1001 * time.Millisecond: 2, 10 * time.Second: 10} {
		if got := RetryAfter(d); got != want {
			t.Errorf("RetryAfter(%v) = %d, want %d", d, got, want)
		}
	}
}
