package submit

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// As for pages: no answer within our timeout counts as "none" (0); a
// request the caller gave up on (a stop) does not count.
func TestSubmitNoAnswerCountsOnlyWhenTheCallerStillWaited(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	var mu sync.Mutex
	var seen []int
	c, err := NewClient(ClientOptions{BaseURL: srv.URL, APIKey: func() []byte { return []byte(testKey) }, Timeout: 100 * time.Millisecond,
		Observe: func(status int, _ string) {
			mu.Lock()
			seen = append(seen, status)
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	c.Submit(t.Context(), []string{"52998224725"})
	ctx, cancel := context.WithCancel(t.Context())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	c.Submit(ctx, []string{"52998224725"})
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0] != 0 {
		t.Fatalf("observed %v, want [0] (the timeout only)", seen)
	}
}
