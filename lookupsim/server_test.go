package lookupsim

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestNewValidates(t *testing.T) {
	cases := []Options{
		{},
		{APIKey: "k", WebhookURL: "http://127.0.0.1:1/hook"},
		{APIKey: "k", ProcessingDelay: -1},
		{APIKey: "k", MaxAttempts: -1},
		{APIKey: "k", SubmitPerMinute: -2},
	}
	for _, o := range cases {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
}

func TestStartAndClose(t *testing.T) {
	s, err := New(Options{APIKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	if s.URL() != "" {
		t.Fatal("URL before Start")
	}
	addr, err := s.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if s.URL() != "http://"+addr.String() {
		t.Fatalf("URL %q for %s", s.URL(), addr)
	}
	if _, err := s.Start("127.0.0.1:0"); err == nil {
		t.Fatal("second Start accepted")
	}
	other, _ := New(Options{APIKey: testKey})
	if _, err := other.Start(addr.String()); err == nil || !strings.Contains(err.Error(), addr.String()) {
		t.Fatalf("Start on a used address: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := http.Get(s.URL() + "/api/v1/batches/x"); err == nil {
		t.Fatal("still serving after Close")
	}
	if _, err := s.Submit(SampleCPFs(1, 1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Submit after Close: %v", err)
	}
}

// Handler works without Start, under httptest, as the brief promises.
func TestHandlerUnderHTTPTest(t *testing.T) {
	s, err := New(Options{APIKey: testKey, ProcessingDelay: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	r := call(t, http.MethodPost, srv.URL+"/api/v1/batches", testKey, submitBody(t, SampleCPFs(3, 2)))
	if r.status != http.StatusAccepted {
		t.Fatalf("%d %s", r.status, r.body)
	}
}

func TestWaitFinal(t *testing.T) {
	s := startSim(t, Options{ProcessingDelay: time.Hour})
	if err := s.WaitFinal(t.Context(), "b_nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown id: %v", err)
	}
	id, err := s.Submit(SampleCPFs(2, 3))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := s.WaitFinal(ctx, id); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitFinal on an in-flight batch: %v", err)
	}
	if st, ok := s.Status(id); !ok || st != StatusProcessing {
		t.Fatalf("Status %q %v", st, ok)
	}
}

func TestCyclePanicsOnUnknownStatus(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Cycle accepted an unknown status")
		}
	}()
	Cycle("completed", "done")
}

func TestCycle(t *testing.T) {
	f := Cycle("partial", "failed")
	for i, want := range []string{"partial", "failed", "partial", "failed"} {
		if got := f(i, nil); got != want {
			t.Fatalf("seq %d: %s, want %s", i, got, want)
		}
	}
	if got := Cycle()(5, nil); got != StatusCompleted {
		t.Fatalf("empty Cycle gave %s", got)
	}
}
