package submit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/batchhook/batchhook/cpf"
	"github.com/batchhook/batchhook/internal/backoff"
	"github.com/batchhook/batchhook/store"
)

// The submission request and response are "not shown" in
// docs/provider-api.md §4.1. batchhook assumes what the simulator implements
// (lookupsim/doc.go): POST {base}/api/v1/batches with body
// {"cpfs":["12345678909",...]} and any 2xx reply carrying the new id as
// {"batch_id":"..."}. These two names are the whole assumption.
const (
	requestField  = "cpfs"
	responseField = "batch_id"
)

// maxReplyBytes caps the provider's reply to a submission.
const maxReplyBytes = 64 << 10

// Outcome classifies one submission attempt. It decides what happens to
// the chunk, so the classes follow one question: could the provider have
// accepted it?
type Outcome string

const (
	// OutcomeSubmitted: 2xx with a batch id.
	OutcomeSubmitted Outcome = "submitted"
	// OutcomeNotSent: the request never left (connection refused, DNS):
	// safe to send again.
	OutcomeNotSent Outcome = "not_sent"
	// OutcomeRateLimited: 429; retried after Retry-After or the backoff.
	OutcomeRateLimited Outcome = "rate_limited"
	// OutcomeAuth: 401 or 403; retried after the backoff (or a reload).
	OutcomeAuth Outcome = "auth"
	// OutcomeServerError: 503 Service Unavailable, which says the request
	// was not processed; retried. Other 5xx (500, 502, 504) may come after
	// the provider committed the batch, so they are OutcomeUnknown.
	OutcomeServerError Outcome = "server_error"
	// OutcomeRejected: any other status; the chunk fails with the reason.
	OutcomeRejected Outcome = "rejected"
	// OutcomeUnknown: the request was sent but no usable answer came back
	// (timeout, dropped connection, 2xx without a batch id, a 5xx other
	// than 503): the provider may have accepted it, so the chunk is never
	// sent again automatically.
	OutcomeUnknown Outcome = "unknown"
)

// Outcomes lists every outcome (for metrics).
var Outcomes = []Outcome{OutcomeSubmitted, OutcomeNotSent, OutcomeRateLimited, OutcomeAuth, OutcomeServerError, OutcomeRejected, OutcomeUnknown}

// Result is the outcome of one submission attempt.
type Result struct {
	Outcome    Outcome
	BatchID    string        // OutcomeSubmitted only
	RetryAfter time.Duration // from a 429 or 5xx, 0 when absent
	Reason     string        // what went wrong; never holds a CPF
}

// ClientOptions configures a Client.
type ClientOptions struct {
	BaseURL string
	// APIKey returns the current Bearer key (called per request).
	APIKey  func() []byte
	Timeout time.Duration // one request, reply included
	HTTP    *http.Client  // nil = no redirects followed, no kept-alive connections
	// Observe, when set, is told every request's HTTP status (0 when no
	// response came) and its URL (scheme://host/path), so a base URL that
	// gets 404 for everything can be noticed.
	Observe func(status int, url string)
}

// Client sends chunks to the provider.
type Client struct {
	o   ClientOptions
	url string
}

// NewClient checks o and returns a Client.
func NewClient(o ClientOptions) (*Client, error) {
	base, err := url.Parse(strings.TrimRight(o.BaseURL, "/"))
	if err != nil || base.Host == "" {
		return nil, fmt.Errorf("submit: bad base URL %q", o.BaseURL)
	}
	if o.APIKey == nil || o.Timeout <= 0 {
		return nil, errors.New("submit: APIKey and Timeout are required")
	}
	if o.HTTP == nil {
		// A redirect would send the CPFs somewhere else, or resend them:
		// neither is done silently.
		// A fresh connection per submission (at most a few a minute): a
		// kept-alive one the server closed just as the POST went out would
		// make an unsent chunk look submit_unknown.
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.DisableKeepAlives = true
		o.HTTP = &http.Client{Transport: t,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	return &Client{o: o, url: base.String() + "/api/v1/batches"}, nil
}

// Submit sends one chunk and classifies the answer.
func (c *Client) Submit(ctx context.Context, cpfs []string) Result {
	body, err := json.Marshal(map[string][]string{requestField: cpfs})
	if err != nil {
		return Result{Outcome: OutcomeNotSent, Reason: "encode request: " + err.Error()}
	}
	caller := ctx
	ctx, cancel := context.WithTimeout(ctx, c.o.Timeout)
	defer cancel()
	// wrote is set by the transport's writer goroutine. A request whose
	// write failed (i.Err) may still have reached the provider in part;
	// only one never written at all is safe to send again.
	var wrote atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteHeaders: func() { wrote.Store(true) },
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return Result{Outcome: OutcomeNotSent, Reason: "build request: " + err.Error()}
	}
	req.Header.Set("Authorization", "Bearer "+string(c.o.APIKey()))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := c.o.HTTP.Do(req)
	// A request its caller gave up on (a stop) is not the provider's
	// failure to answer; our own timeout is.
	if c.o.Observe != nil && (err == nil || caller.Err() == nil) {
		code := 0
		if err == nil {
			code = resp.StatusCode
		}
		c.o.Observe(code, c.url)
	}
	if err != nil {
		reason := "POST " + c.url + ": " + redact(err)
		if !wrote.Load() {
			return Result{Outcome: OutcomeNotSent, Reason: reason}
		}
		return Result{Outcome: OutcomeUnknown, Reason: reason + " (after the request was sent)"}
	}
	defer resp.Body.Close()
	reply, err := io.ReadAll(io.LimitReader(resp.Body, maxReplyBytes+1))
	return classify(resp, reply, err, c.url)
}

// classify turns the provider's answer into a Result whose Reason names
// the status and the URL asked (a 404 for every chunk usually means a wrong
// BATCHHOOK_API_BASE_URL, and the URL shows it).
func classify(resp *http.Response, reply []byte, readErr error, url string) Result {
	code := resp.StatusCode
	status := fmt.Sprintf("HTTP %d from POST %s", code, url)
	switch {
	case code/100 == 2:
		if readErr != nil {
			return Result{Outcome: OutcomeUnknown, Reason: status + ", reply lost: " + redact(readErr)}
		}
		var r map[string]json.RawMessage
		var id string
		if len(reply) > maxReplyBytes || json.Unmarshal(reply, &r) != nil || json.Unmarshal(r[responseField], &id) != nil {
			return Result{Outcome: OutcomeUnknown, Reason: status + " without a readable " + responseField}
		}
		if err := store.CheckBatchID(id); err != nil {
			return Result{Outcome: OutcomeUnknown, Reason: status + " with an unusable " + responseField + ": " + err.Error()}
		}
		return Result{Outcome: OutcomeSubmitted, BatchID: id}
	case code == http.StatusTooManyRequests:
		return Result{Outcome: OutcomeRateLimited, Reason: status + errorMember(reply), RetryAfter: backoff.RetryAfter(resp.Header.Get("Retry-After"), time.Now())}
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return Result{Outcome: OutcomeAuth, Reason: status + ": the provider refused the API key"}
	case code == http.StatusServiceUnavailable:
		return Result{Outcome: OutcomeServerError, Reason: status + errorMember(reply), RetryAfter: backoff.RetryAfter(resp.Header.Get("Retry-After"), time.Now())}
	case code >= 500:
		return Result{Outcome: OutcomeUnknown, Reason: status + errorMember(reply) + " (the provider may have accepted it)"}
	default:
		return Result{Outcome: OutcomeRejected, Reason: status + errorMember(reply)}
	}
}

// errorMember quotes the provider's {"error":"..."} reason, shortened and
// with every CPF-shaped digit run masked (cpf.Scrub): a provider could
// echo a CPF back, in any of its written forms.
func errorMember(reply []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(reply, &e) != nil || e.Error == "" {
		return ""
	}
	msg := cpf.Scrub(e.Error)
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	return ": " + strconv.Quote(msg)
}

// redact drops the operation and URL from a transport error: the caller
// names them once, without a query, in its own words.
func redact(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}
