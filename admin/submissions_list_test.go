package admin

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestListSubmissions: GET /admin/submissions pages newest first with
// limit and cursor; each submission sums up its chunks (submitted,
// incomplete when one failed, waiting with the reason the queue waits:
// here the provider refusing the key).
func TestListSubmissions(t *testing.T) {
	answers := []int{http.StatusOK, http.StatusBadRequest, http.StatusUnauthorized}
	var n atomic.Int32
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch code := answers[min(int(n.Add(1))-1, len(answers)-1)]; code {
		case http.StatusOK:
			w.Write([]byte(`{"batch_id":"b_listed"}`))
		default:
			http.Error(w, `{"error":"no"}`, code)
		}
	}))
	t.Cleanup(provider.Close)
	srv, sub, _, _ := waitingServer(t, provider.URL, "k")
	var ids []string
	for _, body := range []string{cpfA, cpfB, cpfC + "\n" + cpfA} {
		code, out, raw := send(t, "POST", srv.URL+"/admin/submissions", "text/plain", body)
		if code != http.StatusAccepted {
			t.Fatalf("POST = %d %s", code, raw)
		}
		ids = append(ids, out["submission_id"].(string))
	}
	for range answers {
		if _, err := sub.Step(context.Background()); err != nil {
			t.Fatal(err)
		}
	}

	page := listPage(t, srv.URL+"/admin/submissions?limit=2")
	if len(page.Items) != 2 || page.NextCursor == "" {
		t.Fatalf("first page: %+v, want 2 items and a cursor", page)
	}
	waiting, failed := page.Items[0], page.Items[1]
	if waiting.ID != ids[2] || waiting.State != SubmissionWaiting || waiting.Valid != 2 || waiting.Chunks != 1 || waiting.Submitted != 0 ||
		waiting.Waiting == nil || waiting.Waiting.ErrorKind != "auth" || !strings.Contains(waiting.Waiting.Hint, "BATCHHOOK_API_KEY") {
		t.Errorf("newest: %+v (waiting %+v), want %s waiting on the refused key", waiting, waiting.Waiting, ids[2])
	}
	if failed.ID != ids[1] || failed.State != SubmissionIncomplete || failed.ChunkState["failed"] != 1 || failed.Waiting != nil {
		t.Errorf("second: %+v, want %s incomplete with 1 failed chunk", failed, ids[1])
	}
	last := listPage(t, srv.URL+"/admin/submissions?limit=2&cursor="+page.NextCursor)
	if len(last.Items) != 1 || last.NextCursor != "" {
		t.Fatalf("last page: %+v, want 1 item and no cursor", last)
	}
	if s := last.Items[0]; s.ID != ids[0] || s.State != SubmissionSubmitted || s.Submitted != 1 || s.Chunks != 1 || s.CreatedAt.IsZero() {
		t.Errorf("oldest: %+v, want %s submitted 1/1", s, ids[0])
	}
	if all := listPage(t, srv.URL+"/admin/submissions"); len(all.Items) != 3 || all.NextCursor != "" {
		t.Errorf("default limit: %d items, cursor %q; want all 3", len(all.Items), all.NextCursor)
	}
	for _, q := range []string{"?cursor=zz", "?cursor=00", "?limit=0", "?limit=1001"} {
		if code, _, raw := send(t, "GET", srv.URL+"/admin/submissions"+q, "", ""); code != http.StatusBadRequest {
			t.Errorf("GET /admin/submissions%s = %d %s, want 400", q, code, raw)
		}
	}
}

func listPage(t *testing.T, url string) ListReply[SubmissionSummaryView] {
	t.Helper()
	code, _, raw := send(t, "GET", url, "", "")
	var page ListReply[SubmissionSummaryView]
	if err := json.Unmarshal([]byte(raw), &page); code != http.StatusOK || err != nil {
		t.Fatalf("GET %s = %d %v %s", url, code, err, raw)
	}
	return page
}
