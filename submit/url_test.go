package submit

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A 404 to a submission names the URL asked for (the doubled /api/v1 of a
// wrong base URL shows) and never the API key; Observe sees the call.
func TestSubmitReasonNamesTheRequestedURL(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }))
	t.Cleanup(srv.Close)
	var observed []string
	c, err := NewClient(ClientOptions{BaseURL: srv.URL + "/api/v1/", APIKey: func() []byte { return []byte(testKey) },
		Timeout: 2 * time.Second, Observe: func(status int, url string) {
			observed = append(observed, http.StatusText(status)+" "+url)
		}})
	if err != nil {
		t.Fatal(err)
	}
	res := c.Submit(context.Background(), []string{"52998224725"})
	want := "POST " + srv.URL + "/api/v1/api/v1/batches"
	if res.Outcome != OutcomeRejected || !strings.Contains(res.Reason, "HTTP 404 from "+want) {
		t.Fatalf("result %+v, want rejected naming %s", res, want)
	}
	if strings.Contains(res.Reason, testKey) || strings.Contains(res.Reason, "52998224725") {
		t.Fatalf("reason %q carries a secret or a CPF", res.Reason)
	}
	if len(observed) != 1 || observed[0] != "Not Found "+srv.URL+"/api/v1/api/v1/batches" {
		t.Fatalf("Observe saw %q", observed)
	}
	srv.Close()
	res = c.Submit(context.Background(), []string{"52998224725"})
	if res.Outcome != OutcomeNotSent || !strings.Contains(res.Reason, want+": ") {
		t.Fatalf("result %+v, want not_sent naming %s", res, want)
	}
}
