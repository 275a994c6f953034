package admin

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/lifecycle/erasure"
	"github.com/batchhook/batchhook/store"
	"github.com/batchhook/batchhook/submit"
)

// fakeExports stands in for export.Dir (admin may not import export): the
// batch b1 holds two items of the erased CPF.
type fakeExports struct{ left map[string]int64 }

func (f fakeExports) Erase(id string, base int, _ string, _ func(string) bool, settle func(int64, int) error) (int64, int, bool, error) {
	n := f.left[id]
	delete(f.left, id)
	v := base
	if n > 0 {
		v++
	}
	if err := settle(n, v); err != nil {
		return 0, 0, false, err
	}
	return n, v, true, nil
}

func (fakeExports) Purge(string) error  { return nil }
func (fakeExports) Remove(string) error { return nil }

func erasureServer(t *testing.T) (*httptest.Server, *store.Store) {
	t.Helper()
	st, err := store.Open(t.TempDir(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	st.SetSinks([]string{"http"})
	svc, err := erasure.New(erasure.Options{Store: st, Exports: fakeExports{map[string]int64{"b1": 2}}, CPFField: "cpf", Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := submit.NewService(submit.ServiceOptions{Store: st, Logger: zerolog.Nop(),
		Rule:    submit.ResubmitRule{Field: "result", Values: []string{"pending"}, CPFField: "cpf"},
		Results: func(store.Batch) (io.ReadCloser, error) { return nil, io.EOF }})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Store: st, Token: func() []byte { return []byte("tok") }, Submissions: sub, MaxSubmissionBytes: 4096,
		Retention: time.Hour, Metrics: http.NotFoundHandler(), Ready: func() error { return nil }, Logger: zerolog.Nop(), Erasures: svc})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv, st
}

func postErasure(t *testing.T, url, token, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url+"/admin/erasures", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

func TestErasureEndpoints(t *testing.T) {
	srv, st := erasureServer(t)
	now := time.Now()
	st.Record(store.Notification{BatchID: "b1", Status: "completed", ReceivedAt: now, Raw: []byte(`{}`)})
	b, _, _ := st.Lease(now)
	if err := st.Finish(b.ID, store.StateExported, "/x/b1", "", 0, now); err != nil {
		t.Fatal(err)
	}
	d, _, _ := st.NextDelivery("http", now, func(string) bool { return false })
	if _, err := st.Delivered("b1", "http", d.Generation, now, false); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AddSubmission(store.Submission{ID: "s1", Valid: 1}, [][]string{{"52998224725"}}, now); err != nil {
		t.Fatal(err)
	}

	if code, _ := postErasure(t, srv.URL, "wrong", `{"cpf":"52998224725"}`); code != http.StatusUnauthorized {
		t.Fatalf("without the token: %d", code)
	}
	for _, bad := range []string{"529.982.247-26", "52998224"} {
		code, body := postErasure(t, srv.URL, "tok", `{"cpf":"`+bad+`"}`)
		if code != http.StatusBadRequest || strings.Contains(body, bad) || strings.Contains(body, "52998224") || !strings.Contains(body, "CPF") {
			t.Fatalf("bad CPF: %d %s; want 400 naming the problem without the value", code, body)
		}
	}
	if code, _ := postErasure(t, srv.URL, "tok", `{"name":"x"}`); code != http.StatusBadRequest {
		t.Fatalf("no cpf member: %d", code)
	}

	code, body := postErasure(t, srv.URL, "tok", `{"cpf":"529.982.247-25"}`)
	if code != http.StatusOK || strings.Contains(body, "52998224725") || strings.Contains(body, "982.247") {
		t.Fatalf("erase: %d %s", code, body)
	}
	var v ErasureView
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatal(err)
	}
	if !v.Touched || v.State != "done" || len(v.Batches) != 1 || v.Batches[0].BatchID != "b1" || v.Batches[0].Items != 2 ||
		len(v.Batches[0].Sinks) != 1 || v.Batches[0].Sinks[0].Sink != "http" || v.Batches[0].Sinks[0].Received != "delivered" ||
		len(v.Chunks) != 1 || !v.Chunks[0].Ended {
		t.Fatalf("reply = %s", body)
	}
	code, body = postErasure(t, srv.URL, "tok", `{"cpf":"52998224725"}`)
	if code != http.StatusOK || !strings.Contains(body, `"touched":false`) || !strings.Contains(body, `"previous":"`+v.ID+`"`) {
		t.Fatalf("second erase: %d %s", code, body)
	}
	req, _ := http.NewRequest("GET", srv.URL+"/admin/erasures", nil)
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list ListReply[ErasureView]
	data, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(data, &list); err != nil || len(list.Items) != 2 || bytes.Contains(data, []byte("52998224725")) {
		t.Fatalf("list: %v %s", err, data)
	}
}
