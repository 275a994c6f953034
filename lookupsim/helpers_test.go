package lookupsim

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

const testKey = "test-key"

// fakeClock is a settable Options.Now, safe for concurrent use.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// startSim starts a simulator on loopback with short test defaults.
func startSim(t *testing.T, opts Options) *Server {
	t.Helper()
	if opts.APIKey == "" {
		opts.APIKey = testKey
	}
	if opts.ProcessingDelay == 0 {
		opts.ProcessingDelay = 30 * time.Millisecond
	}
	if opts.RetryBackoff == 0 {
		opts.RetryBackoff = 20 * time.Millisecond
	}
	if opts.SubmitPerMinute == 0 {
		opts.SubmitPerMinute = Unlimited
	}
	opts.Logf = t.Logf
	s, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if _, err := s.Start("127.0.0.1:0"); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

// call makes one request with a fresh connection, so connection faults
// are seen exactly once.
func call(t *testing.T, method, url, key string, body []byte) reply {
	t.Helper()
	r, err := tryCall(method, url, key, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return r
}

func tryCall(method, url, key string, body []byte) (reply, error) {
	return tryCallCtx(context.Background(), method, url, key, body)
}

func tryCallCtx(ctx context.Context, method, url, key string, body []byte) (reply, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return reply{}, err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{}, err
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

func submitBody(t *testing.T, cpfs []string) []byte {
	t.Helper()
	b, err := json.Marshal(map[string][]string{"cpfs": cpfs})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// submitHTTP submits over HTTP and returns the batch id.
func submitHTTP(t *testing.T, s *Server, cpfs []string) string {
	t.Helper()
	r := call(t, http.MethodPost, s.URL()+"/api/v1/batches", testKey, submitBody(t, cpfs))
	if r.status != http.StatusAccepted {
		t.Fatalf("submit: %d %s", r.status, r.body)
	}
	var out struct {
		BatchID string `json:"batch_id"`
	}
	if err := json.Unmarshal(r.body, &out); err != nil {
		t.Fatal(err)
	}
	return out.BatchID
}

func waitFinal(t *testing.T, s *Server, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.WaitFinal(ctx, id); err != nil {
		t.Fatal(err)
	}
}

// pageReply is a decoded page; raw keeps the exact bytes.
type pageReply struct {
	BatchID    string            `json:"batch_id"`
	Status     string            `json:"status"`
	Results    []json.RawMessage `json:"results"`
	NextCursor *string           `json:"next_cursor"`
	raw        []byte
}

func getPage(t *testing.T, s *Server, id, query string) pageReply {
	t.Helper()
	r := call(t, http.MethodGet, s.URL()+"/api/v1/batches/"+id+query, testKey, nil)
	if r.status != http.StatusOK {
		t.Fatalf("GET %s%s: %d %s", id, query, r.status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	var p pageReply
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("page %s: %v", r.body, err)
	}
	if p.Results == nil {
		t.Fatalf("page without a results array: %s", r.body)
	}
	p.raw = r.body
	return p
}

// fetchAll follows next_cursor with the given limit; it returns the items
// and the raw pages.
func fetchAll(t *testing.T, s *Server, id string, limit int) ([]json.RawMessage, [][]byte) {
	t.Helper()
	var items []json.RawMessage
	var pages [][]byte
	cursor := ""
	for i := 0; ; i++ {
		if i > 2000 {
			t.Fatal("paging does not end")
		}
		q := "?limit=" + itoa(limit)
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		p := getPage(t, s, id, q)
		items = append(items, p.Results...)
		pages = append(pages, p.raw)
		if p.NextCursor == nil {
			return items, pages
		}
		if *p.NextCursor == "" || strings.ContainsAny(*p.NextCursor, "&=+/ ") {
			t.Fatalf("cursor %q is not URL-safe", *p.NextCursor)
		}
		cursor = *p.NextCursor
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// errorOf decodes {"error":"…"}.
func errorOf(t *testing.T, r reply) string {
	t.Helper()
	var e struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(r.body, &e); err != nil || e.Error == "" {
		t.Fatalf("error body %q is not {\"error\":...}", r.body)
	}
	return e.Error
}

// waitStats waits until cond holds for the simulator's counters: a reply
// reaches the receiver before the simulator counts it.
func waitStats(t *testing.T, s *Server, cond func(Stats) bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond(s.Stats()) {
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v", s.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
