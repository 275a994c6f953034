package lookupsim

import (
	"context"
	"net/http"
	"testing"
	"time"
)

func finalBatch(t *testing.T, s *Server) string {
	t.Helper()
	id, err := s.Submit(SampleCPFs(30, 28))
	if err != nil {
		t.Fatal(err)
	}
	waitFinal(t, s, id)
	return id
}

func TestFailGETs500(t *testing.T) {
	s := startSim(t, Options{})
	id := finalBatch(t, s)
	if err := s.SetFaults(Faults{FailGETs: 2, FailStatus: 500}); err != nil {
		t.Fatal(err)
	}
	url := s.URL() + "/api/v1/batches/" + id
	// An unauthenticated request does not consume a fault.
	if r := call(t, http.MethodGet, url, "", nil); r.status != http.StatusUnauthorized {
		t.Fatalf("no key: %d", r.status)
	}
	for i := range 2 {
		if r := call(t, http.MethodGet, url, testKey, nil); r.status != http.StatusInternalServerError {
			t.Fatalf("GET %d: %d, want 500", i+1, r.status)
		}
	}
	if f := s.Faults(); f.FailGETs != 0 {
		t.Fatalf("remaining FailGETs %d", f.FailGETs)
	}
	getPage(t, s, id, "")
	if st := s.Stats(); st.GETFaults != 2 || st.PagesServed != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestFailGETs429CarriesRetryAfter(t *testing.T) {
	s := startSim(t, Options{Faults: Faults{FailGETs: 1, FailStatus: 429, RetryAfter: 1500 * time.Millisecond}})
	id := finalBatch(t, s)
	url := s.URL() + "/api/v1/batches/" + id
	r := call(t, http.MethodGet, url, testKey, nil)
	if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") != "2" || errorOf(t, r) != "rate_limited" {
		t.Fatalf("got %d Retry-After %q %s", r.status, r.header.Get("Retry-After"), r.body)
	}
	// Without RetryAfter the header still says at least one second.
	if err := s.SetFaults(Faults{FailGETs: 1, FailStatus: 429}); err != nil {
		t.Fatal(err)
	}
	if r := call(t, http.MethodGet, url, testKey, nil); r.status != 429 || r.header.Get("Retry-After") != "1" {
		t.Fatalf("got %d Retry-After %q", r.status, r.header.Get("Retry-After"))
	}
	getPage(t, s, id, "")
}

func TestDropGETsAfterFailGETs(t *testing.T) {
	s := startSim(t, Options{})
	id := finalBatch(t, s)
	if err := s.SetFaults(Faults{FailGETs: 1, DropGETs: 2}); err != nil {
		t.Fatal(err)
	}
	url := s.URL() + "/api/v1/batches/" + id
	if r := call(t, http.MethodGet, url, testKey, nil); r.status != http.StatusInternalServerError {
		t.Fatalf("first GET: %d, want the 500 before the drops", r.status)
	}
	for i := range 2 {
		if r, err := tryCall(http.MethodGet, url, testKey, nil); err == nil {
			t.Fatalf("dropped GET %d got a reply: %d", i+1, r.status)
		}
	}
	getPage(t, s, id, "")
	if st := s.Stats(); st.Dropped != 2 || st.GETFaults != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestSlowPage(t *testing.T) {
	s := startSim(t, Options{})
	id := finalBatch(t, s)
	if err := s.SetFaults(Faults{SlowPage: 150 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	getPage(t, s, id, "")
	if took := time.Since(start); took < 150*time.Millisecond {
		t.Fatalf("slow page answered in %s", took)
	}
	// A client that gives up is not answered, and the page is not counted.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := tryCallCtx(ctx, http.MethodGet, s.URL()+"/api/v1/batches/"+id, testKey, nil); err == nil {
		t.Fatal("a slow page beat a 30ms client timeout")
	}
	time.Sleep(200 * time.Millisecond) // past SlowPage: the abandoned handler has finished
	if st := s.Stats(); st.PagesServed != 1 {
		t.Fatalf("stats %+v: the abandoned request was served", st)
	}
}

func TestSlowPageDoesNotHoldClose(t *testing.T) {
	s, err := New(Options{APIKey: testKey, ProcessingDelay: 10 * time.Millisecond, Faults: Faults{SlowPage: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	id := finalBatch(t, s)
	errc := make(chan error, 1)
	go func() {
		_, err := tryCall(http.MethodGet, s.URL()+"/api/v1/batches/"+id, testKey, nil)
		errc <- err
	}()
	time.Sleep(50 * time.Millisecond) // let the request reach the handler
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Fatalf("Close with a slow page in progress: %v", err)
	}
	select {
	case <-errc:
	case <-time.After(2 * time.Second):
		t.Fatal("the slow request is still open after Close")
	}
}

func TestFaultValidation(t *testing.T) {
	s := startSim(t, Options{})
	for _, f := range []Faults{{FailStatus: 404}, {FailStatus: 200}, {FailGETs: -1}, {SlowPage: -time.Second}} {
		if err := s.SetFaults(f); err == nil {
			t.Errorf("SetFaults(%+v) accepted", f)
		}
	}
	if _, err := New(Options{APIKey: "k", Faults: Faults{FailStatus: 302}}); err == nil {
		t.Error("New accepted FailStatus 302")
	}
	if err := s.SetFaults(Faults{FailGETs: 1, FailStatus: 503}); err != nil {
		t.Fatal(err)
	}
	if f := s.Faults(); f.FailGETs != 1 || f.FailStatus != 503 {
		t.Fatalf("Faults() = %+v", f)
	}
}
