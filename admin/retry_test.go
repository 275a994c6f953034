package admin

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/internal/testutil"
	"github.com/batchhook/batchhook/store"
	"github.com/batchhook/batchhook/submit"
)

// retryServer serves the admin API over a real store with its clock at
// now; its log goes to logs.
func retryServer(t *testing.T, now time.Time) (url string, st *store.Store, logs *testutil.SyncBuffer) {
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
	logs = &testutil.SyncBuffer{}
	s, err := New(Options{Store: st, Token: func() []byte { return nil }, Submissions: svc, MaxSubmissionBytes: 4096,
		Retention: 168 * time.Hour, Metrics: http.NotFoundHandler(), Ready: func() error { return nil },
		Logger: zerolog.New(logs), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv.URL, st, logs
}

// POST /admin/batches/{id}/retry makes a batch waiting out a backoff due
// now (202 with the batch, retry_requested in the log); other states are
// 409 with the reason, an unknown batch 404.
func TestRetryNowRoute(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	url, st, logs := retryServer(t, now)
	for _, id := range []string{"b_wait", "b_fetching"} {
		if _, err := st.Record(store.Notification{BatchID: id, Status: "completed", ReceivedAt: now.Add(-time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if b, _, _ := st.Lease(now); b == nil || b.ID != id {
			t.Fatalf("leased %v, want %s", b, id)
		}
	}
	backoff := now.Add(30 * time.Minute)
	if err := st.Retry("b_wait", backoff, "transient", "503 from the provider", true, now); err != nil {
		t.Fatal(err)
	}
	code, body := call(t, "POST", url+"/admin/batches/b_wait/retry")
	if code != http.StatusAccepted || body["id"] != "b_wait" || body["state"] != "queued" ||
		body["next_attempt_at"] != now.Format(time.RFC3339Nano) || body["fetch_attempts"] != float64(1) {
		t.Fatalf("retry b_wait: %d %v; want 202, queued, due %s, 1 attempt kept", code, body, now.Format(time.RFC3339))
	}
	if b, _ := st.Get("b_wait"); !b.NextAttemptAt.Equal(now) {
		t.Fatalf("stored next attempt %v, want %v", b.NextAttemptAt, now)
	}
	if !strings.Contains(logs.String(), `"event":"retry_requested","batch_id":"b_wait"`) {
		t.Fatalf("no retry_requested for b_wait in the log:\n%s", logs.String())
	}
	// Already due: accepted again, nothing changes.
	if code, body := call(t, "POST", url+"/admin/batches/b_wait/retry"); code != http.StatusAccepted || body["next_attempt_at"] != now.Format(time.RFC3339Nano) {
		t.Fatalf("second retry of b_wait: %d %v, want 202 unchanged", code, body)
	}
	for _, c := range []struct {
		path string
		code int
		want string
	}{
		{"/admin/batches/b_fetching/retry", http.StatusConflict, "already being fetched"},
		{"/admin/batches/nope/retry", http.StatusNotFound, "not_found"},
	} {
		code, body := call(t, "POST", url+c.path)
		if reason, _ := body["error"].(string); code != c.code || !strings.Contains(reason, c.want) || strings.Contains(reason, store.ErrState.Error()) {
			t.Errorf("POST %s: %d %v, want %d with %q", c.path, code, body, c.code, c.want)
		}
	}
	if code, _ := call(t, "GET", url+"/admin/batches/b_wait/retry"); code != http.StatusMethodNotAllowed {
		t.Errorf("GET of the retry route: %d, want 405", code)
	}
}
