package admin

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/internal/testutil"
	"github.com/batchhook/batchhook/store"
	"github.com/batchhook/batchhook/submit"
)

// Requests without the token are answered 401 every time, but logged only
// up to the sampler's burst; the rest are counted as dropped (unsampled,
// 5,000 unauthorized requests once wrote 5,000 lines).
// droppedLines counts what the sampler dropped, by event.
type droppedLines struct {
	mu sync.Mutex
	n  map[string]int
}

// tokenServer serves the admin API with a token over a real store; its
// log goes to logs.
func tokenServer(t *testing.T) (*httptest.Server, *testutil.SyncBuffer, *droppedLines) {
	t.Helper()
	st, err := store.Open(t.TempDir(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	svc, err := submit.NewService(submit.ServiceOptions{Store: st, Logger: zerolog.Nop(),
		Rule: submit.ResubmitRule{Field: "result", Values: []string{"pending"}, CPFField: "cpf"},
		Results: func(b store.Batch) (io.ReadCloser, error) {
			return os.Open(filepath.Join(b.ExportPath, "results.ndjson"))
		}})
	if err != nil {
		t.Fatal(err)
	}
	logs := &testutil.SyncBuffer{}
	dropped := &droppedLines{n: map[string]int{}}
	s, err := New(Options{Store: st, Token: func() []byte { return []byte("the-token") }, Submissions: svc,
		MaxSubmissionBytes: 4096, Metrics: http.NotFoundHandler(), Ready: func() error { return nil }, Retention: time.Hour,
		Logger: zerolog.New(logs), LogDropped: func(event string) {
			dropped.mu.Lock()
			defer dropped.mu.Unlock()
			dropped.n[event]++
		}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv, logs, dropped
}

// A stranger without the token chooses the path that
// admin_unauthorized quotes. A CPF in it is masked and a huge one is cut,
// so each line costs a bounded number of bytes, not only the sampler's
// bounded number of lines.
func TestUnauthorizedLineQuotesThePathMaskedAndCut(t *testing.T) {
	srv, logs, _ := tokenServer(t)
	for _, path := range []string{"/admin/batches/52998224725", "/admin/batches/529.982.247-25",
		"/admin/batches/" + strings.Repeat("7", 19_000)} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("%.40s without the token: %d", path, resp.StatusCode)
		}
	}
	out := logs.String()
	if n := strings.Count(out, `"event":"admin_unauthorized"`); n != 3 {
		t.Fatalf("%d admin_unauthorized lines, want 3:\n%.2000s", n, out)
	}
	if strings.Contains(out, "529982247") || strings.Contains(out, "529.982.247") || strings.Contains(out, "777777777") {
		t.Fatalf("the log quotes a CPF or the long path as sent:\n%.2000s", out)
	}
	if len(out) > 3*600 {
		t.Fatalf("three lines cost %d bytes:\n%.2000s", len(out), out)
	}
	if !strings.Contains(out, `"url_path":"/admin/batches/***********"`) || !strings.Contains(out, "(19015 bytes)") {
		t.Fatalf("the path is not quoted masked, or its cut does not say how long it was:\n%.2000s", out)
	}
}

func TestUnauthorizedLinesAreSampledAndDropsCounted(t *testing.T) {
	srv, logs, dropped := tokenServer(t)
	mu := &dropped.mu

	const n = 200
	start := time.Now()
	for i := 0; i < n; i++ {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/admin/batches", nil)
		req.Header.Set("Authorization", "Bearer wrong")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		// Past the limit of wrong tokens the answer is 429
		// (admin_auth_throttled), through the same sampler.
		if want := http.StatusUnauthorized; resp.StatusCode != want && (i < 5 || resp.StatusCode != http.StatusTooManyRequests) {
			t.Fatalf("request %d with a wrong token: %d", i, resp.StatusCode)
		}
	}
	allowed := strangerBurst * (int(time.Since(start)/time.Second) + 1)
	lines := strings.Count(logs.String(), `"event":"admin_unauthorized"`) + strings.Count(logs.String(), `"event":"admin_auth_throttled"`)
	mu.Lock()
	defer mu.Unlock()
	if lines == 0 || lines > allowed {
		t.Errorf("%d admin_unauthorized and admin_auth_throttled lines for %d requests; want 1..%d", lines, n, allowed)
	}
	if lines+dropped.n["admin_unauthorized"] != n {
		t.Errorf("%d lines + %d counted as dropped, want %d", lines, dropped.n["admin_unauthorized"], n)
	}
}
