package fetcher_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/batchhook/batchhook/fetcher"
)

// A request that got no answer counts as "none" (status 0) when the
// provider is at fault (our per-request timeout ran out), but not when
// the caller gave up on it (a stop, a page read ahead and then dropped):
// the provider did nothing wrong then.
func TestNoAnswerCountsOnlyWhenTheCallerStillWaited(t *testing.T) {
	release := make(chan struct{})
	srv := startPageServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	var mu sync.Mutex
	var seen []int
	c := newPageClient(t, srv.URL, func(o *fetcher.ClientOptions) {
		o.Timeout = 100 * time.Millisecond
		o.Observe = func(status int, _ string) {
			mu.Lock()
			seen = append(seen, status)
			mu.Unlock()
		}
	})
	if _, err := c.Page(t.Context(), "b_timeout", ""); err == nil {
		t.Fatal("a page that never came was returned")
	}
	ctx, cancel := context.WithCancel(t.Context())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	if _, err := c.Page(ctx, "b_dropped", ""); err == nil {
		t.Fatal("a cancelled page was returned")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0] != 0 {
		t.Fatalf("observed %v, want [0] (the timeout only; the cancelled request is not the provider's)", seen)
	}
}
