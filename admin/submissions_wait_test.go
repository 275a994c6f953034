package admin

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/store"
	"github.com/batchhook/batchhook/submit"
)

// TestWaitingSaysWhyTheProviderDidNotAccept: after one attempt the
// provider (a loopback server) did not accept, and while the submitter
// backs off, a submission's waiting names the kind of failure, the chunk's
// last error and a hint naming what to change; its estimate is a time to
// come, or none with the reason: unknown on a refused key (it waits for an
// operator), overdue once the retry is due. The API key never shows.
func TestWaitingSaysWhyTheProviderDidNotAccept(t *testing.T) {
	const key = "key-never-shown-7731"
	refused, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusedURL := "http://" + refused.Addr().String()
	refused.Close() // nothing listens there now: the request is never sent
	cases := []struct {
		name, kind, hint string
		status           int
		retryAfter       string
		estimate         string // "" = a time to come
	}{
		{name: "key refused", status: http.StatusUnauthorized, kind: "auth", hint: "BATCHHOOK_API_KEY_FILE", estimate: EstimateUnknown},
		{name: "key forbidden", status: http.StatusForbidden, kind: "auth", hint: "SIGHUP", estimate: EstimateUnknown},
		{name: "rate limited", status: http.StatusTooManyRequests, retryAfter: "120", kind: "rate_limited", hint: "BATCHHOOK_SUBMIT_PER_MINUTE"},
		{name: "provider down", status: http.StatusServiceUnavailable, kind: "server_error", hint: "unavailable"},
		{name: "not reachable", kind: "not_sent", hint: "BATCHHOOK_API_BASE_URL"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := refusedURL
			if tc.status != 0 {
				provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if tc.retryAfter != "" {
						w.Header().Set("Retry-After", tc.retryAfter)
					}
					http.Error(w, `{"error":"no"}`, tc.status)
				}))
				t.Cleanup(provider.Close)
				base = provider.URL
			}
			srv, sub, clock, _ := waitingServer(t, base, key)
			code, out, raw := send(t, "POST", srv.URL+"/admin/submissions", "text/plain", cpfA+"\n"+cpfB+"\n")
			if code != http.StatusAccepted {
				t.Fatalf("POST = %d %s", code, raw)
			}
			id := out["submission_id"].(string)
			if _, err := sub.Step(context.Background()); err != nil {
				t.Fatal(err)
			}

			v, raw := getSubmission(t, srv.URL, id)
			w := v.Waiting
			if w == nil || w.Reason != submit.WaitBackoff || w.ErrorKind != tc.kind || !strings.Contains(w.Hint, tc.hint) ||
				w.LastError == "" || w.LastError != v.Chunks[0].LastError {
				t.Fatalf("waiting = %s; want backoff, error_kind %s, the chunk's last error and a hint naming %s", raw, tc.kind, tc.hint)
			}
			switch {
			case tc.estimate != "" && (w.Estimate != tc.estimate || w.EstimatedDoneAt != nil):
				t.Errorf("estimate %q at %v, want %q and no time", w.Estimate, w.EstimatedDoneAt, tc.estimate)
			case tc.estimate == "" && (w.EstimatedDoneAt == nil || !w.EstimatedDoneAt.After(clock.Now()) || w.Estimate != ""):
				t.Errorf("estimate %q at %v, want a time after %v", w.Estimate, w.EstimatedDoneAt, clock.Now())
			}
			if strings.Contains(raw, key) {
				t.Fatalf("the API key is in the reply: %s", raw)
			}
			if tc.estimate != "" {
				return
			}
			// Past the retry's time, the chunks are late: no past time.
			clock.Set(w.Until.Add(time.Second))
			if v, raw := getSubmission(t, srv.URL, id); v.Waiting == nil || v.Waiting.EstimatedDoneAt != nil || v.Waiting.Estimate != EstimateOverdue {
				t.Errorf("after the retry was due: %s; want estimate overdue and no time", raw)
			}
		})
	}
}

// settableClock is the admin side's clock: the real one until Set.
type settableClock struct{ at atomic.Pointer[time.Time] }

func (c *settableClock) Set(t time.Time) { c.at.Store(&t) }
func (c *settableClock) Now() time.Time {
	if p := c.at.Load(); p != nil {
		return *p
	}
	return time.Now()
}

// waitingServer is an admin server whose submitter sends to base with
// key, and the admin side's clock.
func waitingServer(t *testing.T, base, key string) (*httptest.Server, *submit.Submitter, *settableClock, *store.Store) {
	t.Helper()
	st, err := store.Open(t.TempDir(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	client, err := submit.NewClient(submit.ClientOptions{BaseURL: base, APIKey: func() []byte { return []byte(key) }, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := submit.NewSubmitter(submit.SubmitterOptions{Queue: st, Sender: client, Logger: zerolog.Nop(), PerMinute: 10,
		MaxInFlight: 50, ReconcileAfter: time.Minute, BackoffBase: time.Minute, BackoffMax: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := submit.NewService(submit.ServiceOptions{Store: st, Logger: zerolog.Nop(),
		Rule:    submit.ResubmitRule{Field: "result", Values: []string{"pending"}, CPFField: "cpf"},
		Results: func(store.Batch) (io.ReadCloser, error) { return nil, os.ErrNotExist }})
	if err != nil {
		t.Fatal(err)
	}
	clock := &settableClock{}
	s, err := New(Options{Store: st, Token: func() []byte { return nil }, Submissions: svc, SubmitWait: sub.Wait,
		MaxSubmissionBytes: 4096, Retention: time.Hour, Metrics: http.NotFoundHandler(), Ready: func() error { return nil },
		Logger: zerolog.Nop(), Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv, sub, clock, st
}

func getSubmission(t *testing.T, base, id string) (SubmissionView, string) {
	t.Helper()
	code, _, raw := send(t, "GET", base+"/admin/submissions/"+id, "", "")
	var v SubmissionView
	if err := json.Unmarshal([]byte(raw), &v); code != http.StatusOK || err != nil || len(v.Chunks) != 1 {
		t.Fatalf("GET submission = %d %v %s", code, err, raw)
	}
	return v, raw
}
