package admin

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/store"
	"github.com/batchhook/batchhook/submit"
)

func newTestServer(t *testing.T, token string) (*httptest.Server, *store.Store) {
	t.Helper()
	st, err := store.Open(t.TempDir(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	svc, err := submit.NewService(submit.ServiceOptions{Store: st, Logger: zerolog.Nop(),
		Rule: submit.ResubmitRule{Field: "result", Values: []string{"pending", "incomplete"}, CPFField: "cpf"},
		Results: func(b store.Batch) (io.ReadCloser, error) {
			return os.Open(filepath.Join(b.ExportPath, "results.ndjson"))
		}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Store: st, Token: func() []byte { return []byte(token) }, Submissions: svc, MaxSubmissionBytes: 4096, Retention: 168 * time.Hour,
		Metrics: http.NotFoundHandler(), Ready: func() error { return nil }, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv, st
}

func call(t *testing.T, method, url string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body
}

func TestAdminErrorsAndStates(t *testing.T) {
	srv, st := newTestServer(t, "")
	now := time.Now()
	st.Record(store.Notification{BatchID: "b1", Status: "completed", ReceivedAt: now, Raw: []byte(`{"secret":"no"}`)})
	cases := []struct {
		method, path string
		code         int
		errText      string
	}{
		{"POST", "/admin/batches/b1/refetch", 409, "queued"},
		{"POST", "/admin/batches/nope/refetch", 404, "not_found"},
		{"GET", "/admin/batches/nope", 404, "not_found"},
		{"GET", "/admin/batches?state=lost", 400, "state"},
		{"GET", "/admin/batches?limit=0", 400, "limit"},
		{"GET", "/admin/batches?limit=5000", 400, "limit"},
		{"GET", "/admin/batches?cursor=zz", 400, "bad_cursor"},
		{"GET", "/admin/quarantine/nope", 404, "not_found"},
		{"GET", "/nowhere", 404, "not_found"},
	}
	for _, c := range cases {
		code, body := call(t, c.method, srv.URL+c.path)
		if code != c.code || !strings.Contains(body["error"].(string), c.errText) {
			t.Errorf("%s %s: %d %v, want %d with %q", c.method, c.path, code, body, c.code, c.errText)
		}
	}
	code, body := call(t, "GET", srv.URL+"/admin/batches/b1")
	if code != 200 || body["state"] != "queued" || body["next_attempt_at"] == nil {
		t.Fatalf("show b1: %d %v", code, body)
	}
	if _, ok := body["raw"]; ok {
		t.Fatal("the batch view carries the raw notification")
	}
	// Exported: refetch is accepted once, then refused while queued.
	b, _, _ := st.Lease(now)
	st.Finish(b.ID, store.StateExported, "/x", "", 0, now)
	if code, body := call(t, "POST", srv.URL+"/admin/batches/b1/refetch"); code != 202 || body["refetch"] != true {
		t.Fatalf("refetch exported: %d %v", code, body)
	}
	if code, _ := call(t, "POST", srv.URL+"/admin/batches/b1/refetch"); code != 409 {
		t.Fatalf("second refetch: %d, want 409", code)
	}
}

func TestReadyzReportsTheReason(t *testing.T) {
	st, err := store.Open(t.TempDir(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	svc, _ := submit.NewService(submit.ServiceOptions{Store: st, Rule: submit.ResubmitRule{Field: "r", Values: []string{"p"}, CPFField: "c"},
		Results: func(store.Batch) (io.ReadCloser, error) { return nil, os.ErrNotExist }})
	s, err := New(Options{Store: st, Token: func() []byte { return []byte("t") }, Metrics: http.NotFoundHandler(),
		Submissions: svc, MaxSubmissionBytes: 1024, Retention: time.Hour, Ready: func() error { return errTest }, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	code, body := call(t, "GET", srv.URL+"/readyz")
	if code != 503 || body["reason"] != errTest.Error() {
		t.Fatalf("/readyz: %d %v", code, body)
	}
	if code, _ := call(t, "GET", srv.URL+"/healthz"); code != 200 {
		t.Fatalf("/healthz: %d", code)
	}
}

type testErr string

func (e testErr) Error() string { return string(e) }

const errTest = testErr("webhook listener not serving")

// Once the provider no longer keeps a batch's results, a
// refetch answers 409 with the reason and leaves the batch as it was.
func TestRefetchPastRetentionIsAConflictWithTheReason(t *testing.T) {
	srv, st := newTestServer(t, "")
	completed := time.Now().Add(-169 * time.Hour)
	if _, err := st.Record(store.Notification{BatchID: "b_old", Status: "completed", CompletedAt: &completed, ReceivedAt: completed}); err != nil {
		t.Fatal(err)
	}
	b, _, _ := st.Lease(time.Now())
	if err := st.Finish(b.ID, store.StateExported, "/x/b_old", "", 0, time.Now()); err != nil {
		t.Fatal(err)
	}
	code, body := call(t, "POST", srv.URL+"/admin/batches/b_old/refetch")
	if reason, _ := body["error"].(string); code != 409 || !strings.Contains(reason, "no longer keeps its results") {
		t.Fatalf("refetch past retention: %d %v, want 409 with the reason", code, body)
	}
	if b, _ := st.Get("b_old"); b.State != store.StateExported || b.ExportPath != "/x/b_old" {
		t.Fatalf("the refused refetch changed the batch: %+v", b)
	}
}
