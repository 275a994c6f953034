package fetcher

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/batchhook/batchhook/internal/backoff"
)

// ClientOptions configures a Client.
type ClientOptions struct {
	// BaseURL is the provider's base address; pages are read from
	// BaseURL/api/v1/batches/{id}.
	BaseURL string
	// APIKey returns the current Bearer key (called per request, so a
	// reloaded key applies at once).
	APIKey func() []byte
	// Limit is the page size sent as ?limit=.
	Limit int
	// CursorParam names the query parameter carrying next_cursor (the
	// document does not show it).
	CursorParam string
	// ResultsField names the items member; empty = the page's one array.
	ResultsField string
	// StatusField names the member that carries the batch's status (read
	// by Status); empty = "status".
	StatusField string
	// MaxPageBytes caps a page body; a larger page is a protocol error.
	MaxPageBytes int64
	// Timeout bounds one request, body included.
	Timeout time.Duration
	// HTTP is the client to use; nil means a default with no overall timeout
	// (Timeout above applies per request).
	HTTP *http.Client
	// Observe, when set, is told every request's HTTP status (0 when no
	// response came) and its URL without the query (scheme://host/path), so
	// a base URL that gets 404 for everything can be noticed.
	Observe func(status int, url string)
}

// Client reads result pages from the provider.
type Client struct {
	opts ClientOptions
	base *url.URL
}

// NewClient checks opts and returns a Client.
func NewClient(opts ClientOptions) (*Client, error) {
	base, err := url.Parse(strings.TrimRight(opts.BaseURL, "/"))
	if err != nil || base.Host == "" {
		return nil, fmt.Errorf("fetcher: bad base URL %q", opts.BaseURL)
	}
	if opts.Limit < 1 || opts.CursorParam == "" || opts.MaxPageBytes < 1 || opts.Timeout <= 0 || opts.APIKey == nil {
		return nil, errors.New("fetcher: Limit, CursorParam, MaxPageBytes, Timeout and APIKey are required")
	}
	if opts.HTTP == nil {
		opts.HTTP = &http.Client{}
	}
	if opts.StatusField == "" {
		opts.StatusField = "status"
	}
	return &Client{opts: opts, base: base}, nil
}

// Page fetches one page of batchID; cursor is empty for the first page.
// Failures are *Error with their Kind set.
func (c *Client) Page(ctx context.Context, batchID, cursor string) (*Page, error) {
	body, status, err := c.get(ctx, batchID, cursor, c.opts.Limit)
	if err != nil {
		return nil, err
	}
	page, err := ParsePage(body, c.opts.ResultsField)
	if err != nil {
		return nil, &Error{Kind: KindProtocol, Status: status, Err: err}
	}
	return page, nil
}

// Status reads the batch's status from its first page (limit=1): the
// document shows no status endpoint, so batchhook assumes the GET result
// carries the batch's status in the member named StatusField, with
// "processing" (or any value other than the four final statuses) while
// the batch is in flight. Failures are *Error like Page's.
func (c *Client) Status(ctx context.Context, batchID string) (string, error) {
	body, code, err := c.get(ctx, batchID, "", 1)
	if err != nil {
		return "", err
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(body, &members); err != nil {
		return "", &Error{Kind: KindProtocol, Status: code, Err: fmt.Errorf("result is not a JSON object: %w", err)}
	}
	var status string
	raw, ok := members[c.opts.StatusField]
	if !ok || json.Unmarshal(raw, &status) != nil || status == "" {
		return "", &Error{Kind: KindProtocol, Status: code,
			Err: fmt.Errorf("result has no string member %q (BATCHHOOK_STATUS_FIELD)", c.opts.StatusField)}
	}
	return status, nil
}

// get reads one page's raw body.
func (c *Client) get(ctx context.Context, batchID, cursor string, limit int) ([]byte, int, error) {
	u := *c.base
	u.Path = c.base.Path + "/api/v1/batches/" + url.PathEscape(batchID)
	u.RawPath = ""
	q := url.Values{"limit": {strconv.Itoa(limit)}}
	if cursor != "" {
		q.Set(c.opts.CursorParam, cursor)
	}
	shown := u.String() // no query yet: the cursor is the provider's opaque data
	u.RawQuery = q.Encode()

	caller := ctx
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, 0, &Error{Kind: KindRejected, URL: shown, Err: fmt.Errorf("build request: %w", err)}
	}
	req.Header.Set("Authorization", "Bearer "+string(c.opts.APIKey()))
	req.Header.Set("Accept", "application/json")
	resp, err := c.opts.HTTP.Do(req)
	if err != nil {
		// A request its caller gave up on (a stop, a page read ahead and
		// then dropped) is not the provider's failure to answer: only the
		// others count as "none" (a timeout of ours, a refused or dropped
		// connection).
		if caller.Err() == nil {
			c.observe(0, shown)
		}
		return nil, 0, &Error{Kind: KindTransient, URL: shown, Err: fmt.Errorf("request: %w", redactURL(err))}
	}
	c.observe(resp.StatusCode, shown)
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
	}()
	if resp.StatusCode != http.StatusOK {
		e := classify(resp)
		e.URL = shown
		return nil, resp.StatusCode, e
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.opts.MaxPageBytes+1))
	if err != nil {
		return nil, resp.StatusCode, &Error{Kind: KindTransient, Status: resp.StatusCode, URL: shown, Err: fmt.Errorf("read body: %w", err)}
	}
	if int64(len(body)) > c.opts.MaxPageBytes {
		return nil, resp.StatusCode, &Error{Kind: KindProtocol, Status: resp.StatusCode, URL: shown,
			Err: fmt.Errorf("page larger than %d bytes (BATCHHOOK_MAX_PAGE_BYTES)", c.opts.MaxPageBytes)}
	}
	return body, resp.StatusCode, nil
}

// observe reports one request to Observe, when set.
func (c *Client) observe(status int, url string) {
	if c.opts.Observe != nil {
		c.opts.Observe(status, url)
	}
}

// classify turns a non-200 reply into an Error. The response body is not
// quoted: it could carry personal data.
func classify(resp *http.Response) *Error {
	e := &Error{Status: resp.StatusCode, Err: errors.New(http.StatusText(resp.StatusCode))}
	switch s := resp.StatusCode; {
	case s == http.StatusTooManyRequests || s >= 500:
		e.Kind = KindTransient
		e.RetryAfter = backoff.RetryAfter(resp.Header.Get("Retry-After"), time.Now())
	case s == http.StatusUnauthorized || s == http.StatusForbidden:
		e.Kind = KindAuth
		e.Err = errors.New("the provider refused the API key")
	case s == http.StatusNotFound:
		e.Kind = KindNotFound
		e.Err = errors.New("the provider does not know the batch (yet, or any more)")
	case s == http.StatusRequestTimeout:
		e.Kind = KindTransient
	case s < 400:
		// A 2xx other than 200, or a redirect not followed: batchhook does
		// not know what it means, so it retries rather than give up.
		e.Kind = KindProtocol
	default:
		e.Kind = KindRejected
	}
	return e
}

// redactURL drops the URL from a transport error: its query carries the
// provider's cursor, which is opaque data we do not put in logs.
func redactURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}
