package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/admin"
	"github.com/batchhook/batchhook/store"
	"github.com/batchhook/batchhook/submit"
)

// TestSubmissionsList: `submissions list` shows each submission's id,
// progress and state; a waiting one says why, naming the variable to fix
// when the provider (a loopback server answering 401) refused the key;
// --limit pages with a cursor line; --json is the API's page.
func TestSubmissionsList(t *testing.T) {
	t.Setenv("BATCHHOOK_ADMIN_TOKEN", "")
	os.Unsetenv("BATCHHOOK_ADMIN_TOKEN")
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":"bad key"}`, http.StatusUnauthorized)
	}))
	t.Cleanup(provider.Close)
	st, err := store.Open(t.TempDir(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	client, err := submit.NewClient(submit.ClientOptions{BaseURL: provider.URL, APIKey: func() []byte { return []byte("k") }, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := submit.NewSubmitter(submit.SubmitterOptions{Queue: st, Sender: client, Logger: zerolog.Nop(), PerMinute: 10,
		MaxInFlight: 50, ReconcileAfter: time.Minute, BackoffBase: time.Minute, BackoffMax: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	base := serveAdmin(t, st, "", func(o *admin.Options) { o.SubmitWait = sub.Wait })

	now := time.Now()
	if _, err := st.AddSubmission(store.Submission{ID: "s_done", Valid: 2}, [][]string{{"52998224725"}, {"11144477735"}}, now.Add(-2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	for i, end := range []store.ChunkState{store.ChunkSubmitted, store.ChunkFailed} {
		c, err := st.NextChunk()
		if err != nil || c == nil {
			t.Fatalf("chunk %d: %v %v", i, c, err)
		}
		if err := st.ChunkSending(c.Seq, c.Index, now); err != nil {
			t.Fatal(err)
		}
		if end == store.ChunkSubmitted {
			_, err = st.ChunkSubmitted(c.Seq, c.Index, "b_one", now.Add(time.Hour), now)
		} else {
			err = st.ChunkGiveUp(c.Seq, c.Index, end, "HTTP 422", now)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.AddSubmission(store.Submission{ID: "s_wait", Valid: 1}, [][]string{{"12345678909"}}, now); err != nil {
		t.Fatal(err)
	}
	if _, err := sub.Step(context.Background()); err != nil { // the provider refuses the key
		t.Fatal(err)
	}

	out, errOut, code := runIn(t, submissionsCmd, "list", "--admin", base)
	if code != 0 {
		t.Fatalf("submissions list = %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		`^SUBMISSION\s+CREATED\s+SUBMITTED\s+CPFS\s+STATE$`,
		`^s_wait\s+\S+Z\s+0/1\s+1\s+waiting: the provider refused the API key: fix it in BATCHHOOK_API_KEY_FILE and send SIGHUP`,
		`^s_done\s+\S+Z\s+1/2\s+2\s+incomplete: 1 failed$`,
	} {
		if !regexpLine(out, want) {
			t.Errorf("no line matching %s\n%s", want, out)
		}
	}
	if strings.Index(out, "s_wait") > strings.Index(out, "s_done") {
		t.Errorf("not newest first:\n%s", out)
	}

	out, _, code = runIn(t, submissionsCmd, "list", "--limit", "1", "--admin", base)
	cursor := ""
	for _, l := range strings.Split(out, "\n") {
		if c, ok := strings.CutPrefix(l, "more: --cursor "); ok {
			cursor = c
		}
	}
	if code != 0 || !strings.Contains(out, "s_wait") || strings.Contains(out, "s_done") || cursor == "" {
		t.Fatalf("--limit 1 = %d, want s_wait and a cursor line\n%s", code, out)
	}
	out, _, code = runIn(t, submissionsCmd, "list", "--limit", "1", "--cursor", cursor, "--json", "--admin", base)
	var page admin.ListReply[admin.SubmissionSummaryView]
	if err := json.Unmarshal([]byte(out), &page); code != 0 || err != nil || len(page.Items) != 1 || page.Items[0].ID != "s_done" ||
		page.Items[0].State != admin.SubmissionIncomplete || page.NextCursor != "" {
		t.Fatalf("--cursor --json = %d %v\n%s", code, err, out)
	}
}
