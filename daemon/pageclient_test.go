package daemon

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/batchhook/batchhook/config"
)

// The workers' page requests (one each, plus one read ahead) reuse their
// connections: after a first round of 2×FETCH_WORKERS concurrent pages,
// further rounds open (almost) none. With Go's default of 2 idle
// connections a host, each round opens about 2×FETCH_WORKERS-2 again.
func TestPageClientKeepsAConnectionPerRequestInFlight(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"next_cursor":null,"results":[]}`))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	cfg := config.Defaults()
	cfg.APIBaseURL, cfg.FetchWorkers = srv.URL, 4
	c, err := pageClient(cfg, func() []byte { return []byte("k") }, nil)
	if err != nil {
		t.Fatal(err)
	}
	inFlight := 2 * cfg.FetchWorkers
	var warm int64
	for round := range 20 {
		if round == 1 {
			warm = conns.Load()
		}
		var wg sync.WaitGroup
		for range inFlight {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := c.Page(context.Background(), "b1", ""); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
	}
	if n := conns.Load() - warm; n > int64(inFlight) {
		t.Fatalf("%d new connections over 19 rounds of %d requests after the first round", n, inFlight)
	}
}
