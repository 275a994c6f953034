package fetcher_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batchhook/batchhook/fetcher"
)

const (
	// clientFakeCPF is personal data a provider might echo in an error
	// body; it must never reach an error string.
	clientFakeCPF = "12345678909"
	// clientCursor is an opaque provider cursor; it must not reach an
	// error string either.
	clientCursor = "CURSOR-opaque-7f3a9"
	clientAPIKey = "key-sk_live_abc"
)

func newPageClient(t *testing.T, baseURL string, mod func(*fetcher.ClientOptions)) *fetcher.Client {
	t.Helper()
	opts := fetcher.ClientOptions{
		BaseURL:      baseURL,
		APIKey:       func() []byte { return []byte(clientAPIKey) },
		Limit:        50,
		CursorParam:  "cursor",
		MaxPageBytes: 1 << 20,
		Timeout:      5 * time.Second,
	}
	if mod != nil {
		mod(&opts)
	}
	c, err := fetcher.NewClient(opts)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	return c
}

func startPageServer(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

type seenRequest struct {
	method, path, rawQuery, auth string
	query                        map[string][]string
}

func TestClientRequestShape(t *testing.T) {
	const next = "c/2 +&=é%"
	var (
		mu   sync.Mutex
		seen []seenRequest
	)
	srv := startPageServer(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, seenRequest{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization"), r.URL.Query()})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Has("after") {
			fmt.Fprint(w, `{"next_cursor":null,"warnings":[],"items":[{"n":3}]}`)
			return
		}
		fmt.Fprintf(w, `{"next_cursor":%q,"warnings":["w"],"items":[{"n":1}, {"n":2}]}`, next)
	})
	var keyMu sync.Mutex
	key := "key-1"
	c := newPageClient(t, srv.URL+"/prefix/", func(o *fetcher.ClientOptions) {
		o.Limit = 25
		o.CursorParam = "after"
		o.ResultsField = "items"
		o.APIKey = func() []byte {
			keyMu.Lock()
			defer keyMu.Unlock()
			return []byte(key)
		}
	})
	ctx := context.Background()

	p1, err := c.Page(ctx, "ns:b.1_x-2", "")
	if err != nil {
		t.Fatalf("page 1: %v", err)
	}
	if p1.Next == nil || *p1.Next != next {
		t.Fatalf("page 1 next = %v, want %q", p1.Next, next)
	}
	if len(p1.Items) != 2 || string(p1.Items[0]) != `{"n":1}` || string(p1.Items[1]) != `{"n":2}` {
		t.Fatalf("page 1 items = %q", p1.Items)
	}

	keyMu.Lock()
	key = "key-2" // a reloaded key applies to the next request
	keyMu.Unlock()
	p2, err := c.Page(ctx, "ns:b.1_x-2", *p1.Next)
	if err != nil {
		t.Fatalf("page 2: %v", err)
	}
	if p2.Next != nil || len(p2.Items) != 1 || string(p2.Items[0]) != `{"n":3}` {
		t.Fatalf("page 2 = next %v, items %q", p2.Next, p2.Items)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 {
		t.Fatalf("server saw %d requests, want 2", len(seen))
	}
	for i, r := range seen {
		if r.method != http.MethodGet {
			t.Errorf("request %d method = %s, want GET", i, r.method)
		}
		if r.path != "/prefix/api/v1/batches/ns:b.1_x-2" {
			t.Errorf("request %d path = %q", i, r.path)
		}
		if got := r.query["limit"]; len(got) != 1 || got[0] != "25" {
			t.Errorf("request %d limit = %q, want [25]", i, got)
		}
		if _, ok := r.query["cursor"]; ok {
			t.Errorf("request %d carries the default cursor name: %q", i, r.rawQuery)
		}
	}
	if _, ok := seen[0].query["after"]; ok || len(seen[0].query) != 1 {
		t.Errorf("first request query = %q, want only limit", seen[0].rawQuery)
	}
	if got := seen[1].query["after"]; len(got) != 1 || got[0] != next {
		t.Errorf("second request after = %q, want [%q] (raw query %q)", got, next, seen[1].rawQuery)
	}
	if len(seen[1].query) != 2 {
		t.Errorf("second request query = %q, want limit and after only", seen[1].rawQuery)
	}
	if seen[0].auth != "Bearer key-1" || seen[1].auth != "Bearer key-2" {
		t.Errorf("Authorization = %q, %q; want Bearer key-1, Bearer key-2", seen[0].auth, seen[1].auth)
	}
}

func TestClientBaseURLWithoutPath(t *testing.T) {
	paths := make(chan string, 1)
	srv := startPageServer(t, func(w http.ResponseWriter, r *http.Request) {
		paths <- r.URL.Path
		fmt.Fprint(w, `{"next_cursor":null,"results":[]}`)
	})
	c := newPageClient(t, srv.URL, nil)
	if _, err := c.Page(context.Background(), "b-1", ""); err != nil {
		t.Fatal(err)
	}
	if p := <-paths; p != "/api/v1/batches/b-1" {
		t.Errorf("path = %q, want /api/v1/batches/b-1", p)
	}
}

// errorBody is what a provider might answer with: it quotes a CPF.
const errorBody = `{"error":"cpf ` + clientFakeCPF + ` rejected","cursor":"` + clientCursor + `"}`

func replyWith(status int, headers map[string]string, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for k, v := range headers {
			w.Header().Set(k, v)
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

// pageOfSize returns a valid page of exactly n bytes holding the fake CPF.
func pageOfSize(n int) string {
	head := `{"next_cursor":null,"results":[{"cpf":"` + clientFakeCPF + `","pad":"`
	tail := `"}]}`
	return head + strings.Repeat("x", n-len(head)-len(tail)) + tail
}

func TestClientClassifiesFailures(t *testing.T) {
	type bounds struct{ min, max time.Duration }
	tests := []struct {
		name       string
		handler    http.HandlerFunc
		mod        func(*fetcher.ClientOptions)
		kind       fetcher.Kind
		status     int
		retryAfter bounds
	}{
		{name: "200 without next_cursor", handler: replyWith(200, nil, `{"results":[{"cpf":"`+clientFakeCPF+`"}]}`),
			kind: fetcher.KindProtocol, status: 200},
		{name: "200 not JSON", handler: replyWith(200, nil, "cpf "+clientFakeCPF+" "+clientCursor),
			kind: fetcher.KindProtocol, status: 200},
		{name: "200 truncated JSON", handler: replyWith(200, nil, `{"next_cursor":null,"results":[{"cpf":`+clientFakeCPF),
			kind: fetcher.KindProtocol, status: 200},
		{name: "200 with two arrays", handler: replyWith(200, nil, `{"next_cursor":null,"a":["`+clientFakeCPF+`"],"b":[]}`),
			kind: fetcher.KindProtocol, status: 200},
		{name: "200 empty cursor", handler: replyWith(200, nil, `{"next_cursor":"","results":[]}`),
			kind: fetcher.KindProtocol, status: 200},
		{name: "401", handler: replyWith(401, nil, errorBody), kind: fetcher.KindAuth, status: 401},
		{name: "403", handler: replyWith(403, nil, errorBody), kind: fetcher.KindAuth, status: 403},
		{name: "404", handler: replyWith(404, nil, errorBody), kind: fetcher.KindNotFound, status: 404},
		{name: "400", handler: replyWith(400, nil, errorBody), kind: fetcher.KindRejected, status: 400},
		{name: "422", handler: replyWith(422, nil, errorBody), kind: fetcher.KindRejected, status: 422},
		{name: "202 is not a page, retried", handler: replyWith(202, nil, errorBody), kind: fetcher.KindProtocol, status: 202},
		{name: "204 is not a page, retried", handler: replyWith(204, nil, ""), kind: fetcher.KindProtocol, status: 204},
		{name: "304 is not a page, retried", handler: replyWith(304, nil, ""), kind: fetcher.KindProtocol, status: 304},
		{name: "429 Retry-After seconds", handler: replyWith(429, map[string]string{"Retry-After": "7"}, errorBody),
			kind: fetcher.KindTransient, status: 429, retryAfter: bounds{7 * time.Second, 7 * time.Second}},
		{name: "429 Retry-After HTTP-date", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", time.Now().Add(2*time.Minute).UTC().Format(http.TimeFormat))
			w.WriteHeader(429)
			io.WriteString(w, errorBody)
		}, kind: fetcher.KindTransient, status: 429, retryAfter: bounds{2*time.Minute - 5*time.Second, 2 * time.Minute}},
		{name: "429 Retry-After date in the past", handler: replyWith(429, map[string]string{"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, errorBody),
			kind: fetcher.KindTransient, status: 429},
		{name: "429 Retry-After garbage", handler: replyWith(429, map[string]string{"Retry-After": "soon"}, errorBody),
			kind: fetcher.KindTransient, status: 429},
		{name: "429 Retry-After negative", handler: replyWith(429, map[string]string{"Retry-After": "-5"}, errorBody),
			kind: fetcher.KindTransient, status: 429},
		{name: "429 without Retry-After", handler: replyWith(429, nil, errorBody), kind: fetcher.KindTransient, status: 429},
		{name: "500", handler: replyWith(500, nil, errorBody), kind: fetcher.KindTransient, status: 500},
		{name: "503 Retry-After", handler: replyWith(503, map[string]string{"Retry-After": "3"}, errorBody),
			kind: fetcher.KindTransient, status: 503, retryAfter: bounds{3 * time.Second, 3 * time.Second}},
		{name: "connection hijacked and closed", handler: func(w http.ResponseWriter, r *http.Request) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				panic(err)
			}
			conn.Close()
		}, kind: fetcher.KindTransient, status: 0},
		{name: "no reply within Timeout", handler: func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done(): // the client gave up and closed the connection
			case <-time.After(10 * time.Second):
			}
		}, mod: func(o *fetcher.ClientOptions) { o.Timeout = 150 * time.Millisecond },
			kind: fetcher.KindTransient, status: 0},
		{name: "body stalls beyond Timeout", handler: func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(200)
			io.WriteString(w, `{"next_cursor":null,"results":[{"cpf":"`+clientFakeCPF+`"}`)
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		}, mod: func(o *fetcher.ClientOptions) { o.Timeout = 150 * time.Millisecond },
			kind: fetcher.KindTransient, status: 200},
		{name: "page larger than MaxPageBytes", handler: replyWith(200, nil, pageOfSize(4097)),
			mod: func(o *fetcher.ClientOptions) { o.MaxPageBytes = 4096 }, kind: fetcher.KindProtocol, status: 200},
		{name: "much larger page", handler: replyWith(200, nil, pageOfSize(3<<20)),
			mod: func(o *fetcher.ClientOptions) { o.MaxPageBytes = 4096 }, kind: fetcher.KindProtocol, status: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := startPageServer(t, tt.handler)
			c := newPageClient(t, srv.URL, tt.mod)
			start := time.Now()
			p, err := c.Page(context.Background(), "b-1", clientCursor)
			if err == nil {
				t.Fatalf("Page = %+v, want an error", p)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("Page took %v", d)
			}
			var fe *fetcher.Error
			if !errors.As(err, &fe) {
				t.Fatalf("error %v (%T) is not a *fetcher.Error", err, err)
			}
			if fe.Kind != tt.kind {
				t.Errorf("Kind = %q, want %q (error %v)", fe.Kind, tt.kind, err)
			}
			if fe.Status != tt.status {
				t.Errorf("Status = %d, want %d", fe.Status, tt.status)
			}
			if fe.RetryAfter < tt.retryAfter.min || fe.RetryAfter > tt.retryAfter.max {
				t.Errorf("RetryAfter = %v, want within [%v, %v]", fe.RetryAfter, tt.retryAfter.min, tt.retryAfter.max)
			}
			msg := err.Error()
			for _, secret := range []string{clientFakeCPF, clientCursor, clientAPIKey} {
				if strings.Contains(msg, secret) {
					t.Errorf("error text %q contains %q", msg, secret)
				}
			}
		})
	}
}

func TestClientPageOfExactlyMaxPageBytes(t *testing.T) {
	body := pageOfSize(4096)
	if len(body) != 4096 {
		t.Fatalf("test page has %d bytes", len(body))
	}
	srv := startPageServer(t, replyWith(200, nil, body))
	c := newPageClient(t, srv.URL, func(o *fetcher.ClientOptions) { o.MaxPageBytes = 4096 })
	p, err := c.Page(context.Background(), "b-1", "")
	if err != nil {
		t.Fatalf("a page of exactly MaxPageBytes: %v", err)
	}
	if len(p.Items) != 1 || !strings.Contains(string(p.Items[0]), clientFakeCPF) {
		t.Errorf("items = %q", p.Items)
	}
}

func TestClientConnectionRefused(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	c := newPageClient(t, url, nil)
	_, err := c.Page(context.Background(), "b-1", clientCursor)
	var fe *fetcher.Error
	if !errors.As(err, &fe) || fe.Kind != fetcher.KindTransient || fe.Status != 0 {
		t.Fatalf("error = %v, want a transient *fetcher.Error without status", err)
	}
	if strings.Contains(err.Error(), clientCursor) {
		t.Errorf("error text %q contains the cursor", err)
	}
}

func TestNewClientChecksOptions(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*fetcher.ClientOptions)
	}{
		{"empty base URL", func(o *fetcher.ClientOptions) { o.BaseURL = "" }},
		{"base URL without host", func(o *fetcher.ClientOptions) { o.BaseURL = "/api" }},
		{"unparsable base URL", func(o *fetcher.ClientOptions) { o.BaseURL = "http://[::1" }},
		{"limit 0", func(o *fetcher.ClientOptions) { o.Limit = 0 }},
		{"no cursor param", func(o *fetcher.ClientOptions) { o.CursorParam = "" }},
		{"max page bytes 0", func(o *fetcher.ClientOptions) { o.MaxPageBytes = 0 }},
		{"timeout 0", func(o *fetcher.ClientOptions) { o.Timeout = 0 }},
		{"no API key", func(o *fetcher.ClientOptions) { o.APIKey = nil }},
	}
	valid := func() fetcher.ClientOptions {
		return fetcher.ClientOptions{
			BaseURL: "http://127.0.0.1:1", APIKey: func() []byte { return []byte("k") },
			Limit: 1, CursorParam: "cursor", MaxPageBytes: 1, Timeout: time.Second,
		}
	}
	if _, err := fetcher.NewClient(valid()); err != nil {
		t.Fatalf("valid options: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := valid()
			tt.mod(&o)
			if c, err := fetcher.NewClient(o); err == nil {
				t.Errorf("NewClient accepted %+v: %v", o, c)
			}
		})
	}
}
