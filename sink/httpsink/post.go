package httpsink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"

	"github.com/batchhook/batchhook/internal/backoff"
	"github.com/batchhook/batchhook/sink"
)

// post sends one part and classifies the answer at the edge: ok is true
// for a 2xx; otherwise the Result says whether to retry. A Reason names
// the status or the error and the URL without its query (which may hold a
// token), never the body or the signature.
func (s *Sink) post(ctx context.Context, key []byte, id string, body []byte) (sink.Result, bool) {
	reqCtx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(reqCtx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return local(sink.Failed, fmt.Errorf("build a request to %s", s.shownURL)), false
	}
	ts := s.now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", Sign(key, id, ts, body))
	resp, err := s.client.Do(req)
	if err != nil {
		return s.transportFailed(ctx, reqCtx, err), false
	}
	// Read a little so the connection can be reused, then cut it off: a
	// receiver's answer is never trusted to be small.
	_, _ = io.CopyN(io.Discard, resp.Body, responseLimit)
	_ = resp.Body.Close()
	code := resp.StatusCode
	switch {
	case code >= 200 && code <= 299:
		return sink.Result{}, true
	case code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500:
		return sink.Result{
			Outcome:    sink.Retry,
			Kind:       "status",
			Reason:     fmt.Sprintf("POST %s: %s", s.shownURL, statusText(code)),
			RetryAfter: backoff.RetryAfter(resp.Header.Get("Retry-After"), s.now()),
		}, false
	}
	return sink.Result{
		Outcome: sink.Failed,
		Kind:    "status",
		Reason:  fmt.Sprintf("POST %s: %s (not retried)", s.shownURL, statusText(code)),
	}, false
}

func statusText(code int) string {
	if t := http.StatusText(code); t != "" {
		return fmt.Sprintf("HTTP %d %s", code, t)
	}
	return fmt.Sprintf("HTTP %d", code)
}

// transportFailed classifies an error with no response: shutdown, the
// per-request timeout, or anything else on the way (refused, reset, DNS,
// TLS), all retried.
func (s *Sink) transportFailed(ctx, reqCtx context.Context, err error) sink.Result {
	if ctx.Err() != nil {
		return cancelled(ctx.Err())
	}
	// url.Error repeats the URL with its query; keep only what it wraps.
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var ne net.Error
	if errors.Is(reqCtx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return sink.Result{Outcome: sink.Retry, Kind: "timeout",
			Reason: fmt.Sprintf("POST %s: no answer within %s", s.shownURL, s.timeout)}
	}
	return sink.Result{Outcome: sink.Retry, Kind: "connection",
		Reason: fmt.Sprintf("POST %s: %v", s.shownURL, err)}
}
