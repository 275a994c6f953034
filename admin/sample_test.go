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
// up to the sampler's burst; the rest are counted as dropped (issue 10,
// item 10: 5,000 unauthorized requests wrote 5,000 lines).
func TestUnauthorizedLinesAreSampledAndDropsCounted(t *testing.T) {
	st, err := store.Open(t.TempDir(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	svc, err := submit.NewService(submit.ServiceOptions{Store: st, Logger: zerolog.Nop(),
		Rule: submit.ResubmitRule{Field: "result", Values: []string{"pending"}, CPFField: "cpf"},
		Results: func(b store.Batch) (io.ReadCloser, error) {
			return os.Open(filepath.Join(b.ExportPath, "results.ndjson"))
		}})
	if err != nil {
		t.Fatal(err)
	}
	logs := &testutil.SyncBuffer{}
	var mu sync.Mutex
	dropped := map[string]int{}
	s, err := New(Options{Store: st, Token: func() []byte { return []byte("the-token") }, Submissions: svc,
		MaxSubmissionBytes: 4096, Metrics: http.NotFoundHandler(), Ready: func() error { return nil }, Retention: time.Hour,
		Logger: zerolog.New(logs), LogDropped: func(event string) {
			mu.Lock()
			defer mu.Unlock()
			dropped[event]++
		}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()

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
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("request %d without the token: %d", i, resp.StatusCode)
		}
	}
	allowed := strangerBurst * (int(time.Since(start)/time.Second) + 1)
	lines := strings.Count(logs.String(), `"event":"admin_unauthorized"`)
	mu.Lock()
	defer mu.Unlock()
	if lines == 0 || lines > allowed {
		t.Errorf("%d admin_unauthorized lines for %d requests; want 1..%d", lines, n, allowed)
	}
	if lines+dropped["admin_unauthorized"] != n {
		t.Errorf("%d lines + %d counted as dropped, want %d", lines, dropped["admin_unauthorized"], n)
	}
}
