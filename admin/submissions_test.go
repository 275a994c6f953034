package admin

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/store"
)

func send(t *testing.T, method, url, contentType, body string) (int, map[string]any, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var raw json.RawMessage
	json.NewDecoder(resp.Body).Decode(&raw)
	var out map[string]any
	json.Unmarshal(raw, &out)
	return resp.StatusCode, out, string(raw)
}

// Valid CPFs (mod-11 worked by hand in submit/intake_test.go).
const (
	cpfA = "529.982.247-25"
	cpfB = "11144477735"
	cpfC = "12345678909"
)

func TestSubmissionIntake(t *testing.T) {
	srv, st := newTestServer(t, "")
	body := strings.Join([]string{cpfA, "52998224725", "123.456.789-00", cpfB, "", "111.111.111-11", cpfC}, "\n")
	code, out, raw := send(t, "POST", srv.URL+"/admin/submissions", "text/plain", body)
	if code != http.StatusAccepted || out["valid"] != 3.0 || out["duplicates"] != 1.0 || out["chunks"] != 1.0 {
		t.Fatalf("POST = %d %s", code, raw)
	}
	if !strings.Contains(raw, `"masked":"***.456.789-**"`) || strings.Contains(raw, "123.456.789-00") || strings.Contains(raw, "11111111111") {
		t.Fatalf("invalid lines not masked as ***.456.789-**: %s", raw)
	}
	if want := `"line":3`; !strings.Contains(raw, want) {
		t.Fatalf("reply %s lacks %s", raw, want)
	}
	id := out["submission_id"].(string)
	code, out, raw = send(t, "GET", srv.URL+"/admin/submissions/"+id, "", "")
	chunks, _ := out["chunks"].([]any)
	if code != 200 || len(chunks) != 1 || chunks[0].(map[string]any)["state"] != "waiting" || strings.Contains(raw, "52998224725") {
		t.Fatalf("GET submission = %d %s", code, raw)
	}
	if c, _ := st.NextChunk(); c == nil || len(c.CPFs) != 3 {
		t.Fatalf("stored chunk = %+v", c)
	}

	cases := []struct {
		name, ct, query, body string
		code                  int
	}{
		{"strict with an invalid line", "text/plain", "?strict=true", cpfA + "\n123.456.789-00", 422},
		{"nothing valid", "text/plain", "", "123.456.789-00\n", 422},
		{"csv without column", "text/csv", "", "cpf\n" + cpfA, 400},
		{"csv missing column", "text/csv", "?column=doc", "cpf\n" + cpfA, 400},
		{"csv", "text/csv", "?column=CPF", "name,cpf\nAna,\"" + cpfA + "\"\n", 202},
		{"json", "application/json", "", `{"cpfs":["` + cpfB + `"]}`, 202},
		{"bad json", "application/json", "", `{"cpfs":"x"}`, 400},
		{"unknown type", "application/xml", "", "<x/>", 415},
		{"too large", "text/plain", "", strings.Repeat(cpfA+"\n", 400), 413},
	}
	for _, tc := range cases {
		code, _, raw := send(t, "POST", srv.URL+"/admin/submissions"+tc.query, tc.ct, tc.body)
		if code != tc.code {
			t.Errorf("%s: %d %s, want %d", tc.name, code, raw, tc.code)
		}
	}
	if code, _, _ := send(t, "GET", srv.URL+"/admin/submissions/s_nope", "", ""); code != 404 {
		t.Errorf("unknown submission: %d", code)
	}
}

func TestTrackAndUnknownChunks(t *testing.T) {
	srv, st := newTestServer(t, "")
	code, out, raw := send(t, "POST", srv.URL+"/admin/batches/b_elsewhere/track", "", "")
	if code != http.StatusCreated || out["state"] != "tracked" {
		t.Fatalf("track = %d %s", code, raw)
	}
	if code, _, _ := send(t, "POST", srv.URL+"/admin/batches/b_elsewhere/track", "", ""); code != http.StatusOK {
		t.Fatalf("second track = %d, want 200", code)
	}
	if code, _, raw := send(t, "POST", srv.URL+"/admin/batches/.hidden/track", "", ""); code != 400 {
		t.Fatalf("unsafe id = %d %s", code, raw)
	}
	st.AddSubmission(store.Submission{ID: "s1"}, [][]string{{"52998224725"}}, time.Now())
	c, _ := st.NextChunk()
	st.ChunkSending(c.Seq, c.Index, time.Now())
	st.ChunkGiveUp(c.Seq, c.Index, store.ChunkUnknown, "timeout after the request was sent", time.Now())
	code, out, raw = send(t, "GET", srv.URL+"/admin/chunks", "", "")
	items, _ := out["items"].([]any)
	if code != 200 || len(items) != 1 || items[0].(map[string]any)["state"] != "submit_unknown" {
		t.Fatalf("GET /admin/chunks = %d %s", code, raw)
	}
	if code, _, raw := send(t, "POST", srv.URL+"/admin/submissions/s1/chunks/0/resend", "", ""); code != http.StatusAccepted || !strings.Contains(raw, `"state":"waiting"`) {
		t.Fatalf("resend = %d %s", code, raw)
	}
	if code, out, _ := send(t, "POST", srv.URL+"/admin/submissions/s1/chunks/0/resend", "", ""); code != http.StatusConflict {
		t.Fatalf("resend of a waiting chunk = %d, want 409", code)
	} else if reason, _ := out["error"].(string); !strings.HasSuffix(reason, "only failed or submit_unknown chunks are resent") || hasStateTail(reason) {
		t.Fatalf("resend of a waiting chunk: reply %q, want it to end with the rule", reason)
	}
	if code, _, _ := send(t, "POST", srv.URL+"/admin/submissions/s1/chunks/7/resend", "", ""); code != http.StatusNotFound {
		t.Fatalf("resend of a missing chunk = %d, want 404", code)
	}
	if code, _, _ := send(t, "POST", srv.URL+"/admin/submissions/s1/chunks/x/resend", "", ""); code != http.StatusBadRequest {
		t.Fatalf("resend with a bad index = %d, want 400", code)
	}
	if c, _ := st.NextChunk(); c == nil || c.Index != 0 || len(c.CPFs) != 1 {
		t.Fatalf("resent chunk not queued with its CPFs: %+v", c)
	}
}

// exportBatch records a batch with status and an export holding items.
func exportBatch(t *testing.T, st *store.Store, id, status string, items ...string) {
	t.Helper()
	now := time.Now()
	if _, err := st.Record(store.Notification{BatchID: id, Status: status, ReceivedAt: now}); err != nil {
		t.Fatal(err)
	}
	if b, _, err := st.Lease(now.Add(time.Second)); err != nil || b == nil || b.ID != id {
		t.Fatalf("lease %s: %v %v", id, b, err)
	}
	dir := filepath.Join(t.TempDir(), id)
	os.MkdirAll(dir, 0o700)
	os.WriteFile(filepath.Join(dir, "results.ndjson"), []byte(strings.Join(items, "\n")+"\n"), 0o600)
	if err := st.Finish(id, store.StateExported, dir, "", 0, now); err != nil {
		t.Fatal(err)
	}
}

func TestResubmit(t *testing.T) {
	srv, st := newTestServer(t, "")
	exportBatch(t, st, "b_exp", "expired",
		`{"cpf":"52998224725","result":"found","profile":{}}`,
		`{"cpf":"11144477735","result":"pending"}`,
		`{"cpf":"12345678909","result":"incomplete","profile":{}}`)
	code, out, raw := send(t, "POST", srv.URL+"/admin/batches/b_exp/resubmit", "", "")
	if code != http.StatusAccepted || out["valid"] != 2.0 || out["resubmit_of"] != "b_exp" {
		t.Fatalf("resubmit = %d %s", code, raw)
	}
	c, _ := st.NextChunk()
	if c == nil || fmt.Sprint(c.CPFs) != "[11144477735 12345678909]" {
		t.Fatalf("resubmitted chunk = %+v", c)
	}
	if code, _, raw := send(t, "POST", srv.URL+"/admin/batches/b_exp/resubmit", "", ""); code != 409 || !strings.Contains(raw, "already resubmitted") {
		t.Fatalf("second resubmit = %d %s", code, raw)
	}
	exportBatch(t, st, "b_ok", "completed", `{"cpf":"52998224725","result":"found"}`)
	exportBatch(t, st, "b_anon", "partial", `{"result":"incomplete"}`)
	exportBatch(t, st, "b_shape", "expired", `{"document":"11144477735","state":"pending"}`)
	for id, want := range map[string]string{
		"b_ok":    "only expired or partial",
		"b_anon":  `no string member \"cpf\"`,
		"b_shape": `no member \"result\"`,
	} {
		code, _, raw := send(t, "POST", srv.URL+"/admin/batches/"+id+"/resubmit", "", "")
		if code != 409 || !strings.Contains(raw, want) {
			t.Errorf("resubmit %s = %d %s, want 409 mentioning %s", id, code, raw, want)
		}
	}
	if code, _, _ := send(t, "POST", srv.URL+"/admin/batches/b_none/resubmit", "", ""); code != 404 {
		t.Errorf("resubmit unknown = %d", code)
	}
}

// TestSubmissionShowsPurgedChunkCPFs: after RECORD_RETENTION the purger
// deletes a failed chunk's CPFs; the submission's view says so on that
// chunk (cpfs_purged), and not on a failed chunk still within retention.
func TestSubmissionShowsPurgedChunkCPFs(t *testing.T) {
	srv, st := newTestServer(t, "")
	now := time.Now()
	old := now.Add(-72 * time.Hour)
	if _, err := st.AddSubmission(store.Submission{ID: "s_old"}, [][]string{{"52998224725"}, {"11144477735"}}, old); err != nil {
		t.Fatal(err)
	}
	for i, at := range []time.Time{old, now} {
		c, err := st.NextChunk()
		if err != nil || c == nil || c.Index != i {
			t.Fatalf("next chunk = %+v %v, want chunk %d", c, err, i)
		}
		if err := st.ChunkSending(c.Seq, c.Index, at); err != nil {
			t.Fatal(err)
		}
		if err := st.ChunkGiveUp(c.Seq, c.Index, store.ChunkFailed, "HTTP 422: invalid batch", at); err != nil {
			t.Fatal(err)
		}
	}
	if n, _, err := st.PurgeChunkCPFs(now.Add(-24*time.Hour), "", 100); err != nil || n != 1 {
		t.Fatalf("PurgeChunkCPFs = %d %v, want 1", n, err)
	}

	code, out, raw := send(t, "GET", srv.URL+"/admin/submissions/s_old", "", "")
	chunks, _ := out["chunks"].([]any)
	if code != 200 || len(chunks) != 2 {
		t.Fatalf("GET submission = %d %s", code, raw)
	}
	purged, kept := chunks[0].(map[string]any), chunks[1].(map[string]any)
	if purged["state"] != "failed" || purged["cpfs"] != 1.0 || purged["cpfs_purged"] != true {
		t.Fatalf("chunk 0, failed and past retention: %v, want state failed, cpfs 1, cpfs_purged true (reply %s)", purged, raw)
	}
	if _, ok := kept["cpfs_purged"]; ok || kept["state"] != "failed" {
		t.Fatalf("chunk 1, failed within retention: %v, want no cpfs_purged (reply %s)", kept, raw)
	}
	if code, out, _ := send(t, "POST", srv.URL+"/admin/submissions/s_old/chunks/0/resend", "", ""); code != http.StatusConflict {
		t.Fatalf("resend of a purged chunk = %d, want 409", code)
	} else if reason, _ := out["error"].(string); !strings.Contains(reason, "RECORD_RETENTION") {
		t.Fatalf("resend of a purged chunk: reply %q does not say its CPFs were deleted", reason)
	}
}
