package fetcher_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/batchhook/batchhook/fetcher"
	"github.com/batchhook/batchhook/lookupsim"
)

// TestStatusAgainstSimulator: the reconciler's assumption (the GET result
// carries "status", "processing" while in flight) holds for the simulator.
func TestStatusAgainstSimulator(t *testing.T) {
	sim, err := lookupsim.New(lookupsim.Options{APIKey: clientAPIKey, ProcessingDelay: 300 * time.Millisecond,
		Outcome: lookupsim.Cycle("partial")})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(func() { sim.Close(context.Background()) })
	id, err := sim.Submit(lookupsim.SampleCPFs(3, 1))
	if err != nil {
		t.Fatal(err)
	}
	c := newPageClient(t, srv.URL, nil)
	ctx := context.Background()
	if got, err := c.Status(ctx, id); err != nil || got != "processing" {
		t.Fatalf("Status in flight = %q, %v; want processing", got, err)
	}
	if err := sim.WaitFinal(ctx, id); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Status(ctx, id); err != nil || got != "partial" {
		t.Fatalf("Status when final = %q, %v; want partial", got, err)
	}
	var fe *fetcher.Error
	if _, err := c.Status(ctx, "b_unknown"); !errors.As(err, &fe) || fe.Kind != fetcher.KindNotFound {
		t.Fatalf("unknown batch = %v, want a not_found error", err)
	}
}

func TestStatusFieldIsConfigurable(t *testing.T) {
	var limit string
	srv := startPageServer(t, func(w http.ResponseWriter, r *http.Request) {
		limit = r.URL.Query().Get("limit")
		w.Write([]byte(`{"state":"completed","items":[],"next_cursor":null}`))
	})
	c := newPageClient(t, srv.URL, func(o *fetcher.ClientOptions) { o.StatusField = "state" })
	if got, err := c.Status(context.Background(), "b1"); err != nil || got != "completed" {
		t.Fatalf("Status = %q, %v", got, err)
	}
	if limit != "1" {
		t.Fatalf("Status asked for limit=%s, want 1 (it needs the status, not the items)", limit)
	}
	c = newPageClient(t, srv.URL, nil) // default "status": absent here
	var fe *fetcher.Error
	if _, err := c.Status(context.Background(), "b1"); !errors.As(err, &fe) || fe.Kind != fetcher.KindProtocol {
		t.Fatalf("missing status member = %v, want a protocol error naming the field", err)
	}
}
