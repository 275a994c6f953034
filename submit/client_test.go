package submit

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/lookupsim"
)

const testKey = "k-test"

func newClient(t *testing.T, base string) *Client {
	t.Helper()
	c, err := NewClient(ClientOptions{BaseURL: base, APIKey: func() []byte { return []byte(testKey) }, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestClientAgainstSimulator: the wire assumption (cpfs in, batch_id out)
// matches the simulator, and its limits come back as rate_limited.
func TestClientAgainstSimulator(t *testing.T) {
	sim, err := lookupsim.New(lookupsim.Options{APIKey: testKey, SubmitPerMinute: 1, MaxInFlight: lookupsim.Unlimited})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(func() { sim.Close(context.Background()) })
	c := newClient(t, srv.URL)
	cpfs := lookupsim.SampleCPFs(3, 7)
	res := c.Submit(context.Background(), cpfs)
	if res.Outcome != OutcomeSubmitted || !strings.HasPrefix(res.BatchID, "b_") {
		t.Fatalf("first submission = %+v", res)
	}
	if status, ok := sim.Status(res.BatchID); !ok || status == "" {
		t.Fatalf("simulator does not know %s", res.BatchID)
	}
	res = c.Submit(context.Background(), cpfs)
	if res.Outcome != OutcomeRateLimited || res.RetryAfter <= 0 {
		t.Fatalf("second submission in the minute = %+v, want rate_limited with Retry-After", res)
	}
	bad := newClient(t, srv.URL)
	bad.o.APIKey = func() []byte { return []byte("wrong") }
	if res := bad.Submit(context.Background(), cpfs); res.Outcome != OutcomeAuth {
		t.Fatalf("wrong key = %+v", res)
	}
}

func TestClientOutcomes(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		want    Outcome
	}{
		{"202 with id", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(202)
			w.Write([]byte(`{"batch_id":"b_1","status":"processing"}`))
		}, OutcomeSubmitted},
		{"2xx without id", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"id":"b_1"}`)) }, OutcomeUnknown},
		{"2xx with unsafe id", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"batch_id":"../x"}`)) }, OutcomeUnknown},
		{"503: not processed, retried", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) }, OutcomeServerError},
		{"500: may have been accepted", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) }, OutcomeUnknown},
		{"504 from a gateway", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(504) }, OutcomeUnknown},
		{"400 echoing a CPF", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(400)
			w.Write([]byte(`{"error":"bad cpf 529.982.247-25"}`))
		}, OutcomeRejected},
		{"400 echoing a spaced CPF", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(400)
			w.Write([]byte(`{"error":"bad cpf 529 982 247 25"}`))
		}, OutcomeRejected},
		{"422 echoing CPFs in other forms", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(422)
			w.Write([]byte(`{"error":"cpfs 529982247-25, 529/982/247/25 and 529.982.247 - 25 refused"}`))
		}, OutcomeRejected},
		{"503 echoing a CPF", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(503)
			w.Write([]byte(`{"error":"busy with 529 982 247 25"}`))
		}, OutcomeServerError},
		{"redirect not followed", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://127.0.0.1:1/elsewhere", http.StatusTemporaryRedirect)
		}, OutcomeRejected},
		{"connection dropped after the request", func(w http.ResponseWriter, r *http.Request) {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
		}, OutcomeUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bodies := make(chan string, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				buf := new(strings.Builder)
				_, _ = io.Copy(buf, r.Body)
				bodies <- buf.String()
				tt.handler(w, r)
			}))
			defer srv.Close()
			res := newClient(t, srv.URL).Submit(context.Background(), []string{"52998224725"})
			if res.Outcome != tt.want {
				t.Fatalf("outcome %+v, want %s", res, tt.want)
			}
			if body := <-bodies; body != `{"cpfs":["52998224725"]}` {
				t.Fatalf("request body %s", body)
			}
			// The server's URL is left out: its random port may hold the
			// digits too (port 39825 did).
			if strings.Contains(strings.ReplaceAll(res.Reason, srv.URL, ""), "982") {
				t.Fatalf("reason %q carries CPF digits", res.Reason)
			}
		})
	}
}

func TestClientNotSentWhenNothingListens(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	if res := newClient(t, "http://"+addr).Submit(context.Background(), []string{"52998224725"}); res.Outcome != OutcomeNotSent {
		t.Fatalf("outcome %+v, want not_sent", res)
	}
}
