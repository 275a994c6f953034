package fetcher_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/batchhook/batchhook/fetcher"
)

// A base URL that already ends in /api/v1 gets 404 for every page: the
// error names the URL asked for (so the doubled prefix shows), without the
// query (the cursor) and without the API key, and Observe sees each call.
func TestErrorsNameTheRequestedURL(t *testing.T) {
	srv := startPageServer(t, func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	var mu sync.Mutex
	var seen []string
	c := newPageClient(t, srv.URL+"/api/v1", func(o *fetcher.ClientOptions) {
		o.Observe = func(status int, url string) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, url+" "+http.StatusText(status))
		}
	})
	_, err := c.Page(context.Background(), "b_1", clientCursor)
	var fe *fetcher.Error
	if !errors.As(err, &fe) || fe.Kind != fetcher.KindNotFound {
		t.Fatalf("err = %v, want not_found", err)
	}
	want := srv.URL + "/api/v1/api/v1/batches/b_1"
	if !strings.Contains(err.Error(), "GET "+want+")") || fe.URL != want {
		t.Fatalf("error %q (URL %q) does not name %s", err, fe.URL, want)
	}
	for _, secret := range []string{clientCursor, clientAPIKey, "limit="} {
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("error %q carries %q", err, secret)
		}
	}
	if len(seen) != 1 || seen[0] != want+" Not Found" {
		t.Fatalf("Observe saw %q", seen)
	}

	// No response at all: the URL is named too, Observe sees status 0.
	srv.Close()
	_, err = c.Page(context.Background(), "b_2", "")
	if err == nil || !strings.Contains(err.Error(), "GET "+srv.URL+"/api/v1/api/v1/batches/b_2") {
		t.Fatalf("transport error %v does not name the URL", err)
	}
	if len(seen) != 2 || !strings.HasSuffix(seen[1], "b_2 ") {
		t.Fatalf("Observe saw %q", seen)
	}
}
