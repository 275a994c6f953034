// Package httpsink delivers exports to an HTTP endpoint, signed with the
// Standard Webhooks scheme (https://www.standardwebhooks.com/) so that a
// receiver can verify them with that project's libraries or a few lines of
// its own (docs/sinks.md, "http sink").
//
// An export goes in parts of at most MaxItems items, one POST each, in
// order. Each part is recorded through sink.Progress once the receiver
// answers 2xx, so a crash or a retry resends only the parts not yet
// acknowledged; the body of a part depends only on the export, so a resent
// part is byte-identical and a receiver deduplicates on its webhook-id.
//
// The package knows nothing of batchhook's configuration or store: the
// daemon hands it everything through Options.
package httpsink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/batchhook/batchhook/sink"
)

// Defaults and limits of Options.
const (
	DefaultMaxItems     = 1000
	MaxMaxItems         = 10000
	DefaultTimeout      = 30 * time.Second
	DefaultMaxItemBytes = 32 << 20 // the default MAX_PAGE_BYTES: an item is never larger than its page
	// responseLimit is how much of a response body is read (and thrown
	// away) so the connection can be reused; the rest is cut off.
	responseLimit = 4 << 10
	userAgent     = "batchhook"
)

// ErrOptions: New was given options it cannot work with; the wrapped text
// names the field (never the key).
var ErrOptions = errors.New("invalid http sink options")

// Options is what the daemon hands the http sink.
type Options struct {
	// URL receives the POSTs: absolute http or https, no userinfo.
	URL string
	// Key returns the signing key (the decoded bytes of the whsec_
	// secret; the daemon decodes it once). It is called on every attempt so that a
	// reload of the secret applies to the next attempt.
	Key func() []byte
	// MaxItems is the most items a part holds (0 = DefaultMaxItems; at
	// most MaxMaxItems).
	MaxItems int
	// Timeout bounds each request, response included (0 = DefaultTimeout).
	Timeout time.Duration
	// MaxItemBytes is the longest line of results.ndjson the sink will
	// send (0 = DefaultMaxItemBytes); the daemon passes MAX_PAGE_BYTES. A
	// longer line fails the delivery.
	MaxItemBytes int
	// Now is the clock for webhook-timestamp and Retry-After dates (nil =
	// time.Now).
	Now func() time.Time
	// Client sends the requests (nil = a client of its own on a clone of
	// http.DefaultTransport). Its redirect policy is replaced: the sink
	// never follows a redirect.
	Client *http.Client
}

// Sink is the http sink. It is safe for concurrent use by the
// dispatcher's workers.
type Sink struct {
	url          string
	shownURL     string // the URL without query, fragment or userinfo, for Reasons
	key          func() []byte
	maxItems     int
	maxItemBytes int
	timeout      time.Duration
	now          func() time.Time
	client       *http.Client
}

var _ sink.Sink = (*Sink)(nil)

// New checks o and returns a sink. It sends nothing: an unreachable
// receiver shows up as retried deliveries, not as a start error.
func New(o Options) (*Sink, error) {
	u, err := url.Parse(o.URL)
	if err != nil {
		return nil, fmt.Errorf("%w: URL does not parse", ErrOptions)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: URL must be an absolute http or https URL", ErrOptions)
	}
	if u.User != nil {
		return nil, fmt.Errorf("%w: URL must not hold userinfo (user:password@)", ErrOptions)
	}
	if o.Key == nil || len(o.Key()) == 0 {
		return nil, fmt.Errorf("%w: the signing key is empty", ErrOptions)
	}
	if o.MaxItems == 0 {
		o.MaxItems = DefaultMaxItems
	}
	if o.MaxItems < 1 || o.MaxItems > MaxMaxItems {
		return nil, fmt.Errorf("%w: MaxItems must be 1..%d", ErrOptions, MaxMaxItems)
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Timeout < 0 {
		return nil, fmt.Errorf("%w: Timeout must be positive", ErrOptions)
	}
	if o.MaxItemBytes == 0 {
		o.MaxItemBytes = DefaultMaxItemBytes
	}
	if o.MaxItemBytes < 0 {
		return nil, fmt.Errorf("%w: MaxItemBytes must be positive", ErrOptions)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	var c http.Client
	if o.Client != nil {
		c = *o.Client
	} else {
		c.Transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	// A 3xx is answered to us, not followed: following it could send
	// personal data to a host the operator never named.
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	// Reasons name the destination by scheme and host only: some webhook
	// URLs carry their secret in the path (Slack- and Discord-style), as
	// others do in the query.
	shown := u.Scheme + "://" + u.Host
	if u.Path != "" && u.Path != "/" {
		shown += "/…"
	}
	return &Sink{
		url: o.URL, shownURL: shown, key: o.Key,
		maxItems: o.MaxItems, maxItemBytes: o.MaxItemBytes, timeout: o.Timeout,
		now: o.Now, client: &c,
	}, nil
}

// Name is the sink's name in BATCHHOOK_SINKS.
func (s *Sink) Name() string { return "http" }

// Deliver sends the parts of e that p does not already record, in order,
// and marks each once the receiver answered 2xx. It stops at the first
// part that does not go through.
func (s *Sink) Deliver(ctx context.Context, e sink.Export, p sink.Progress) sink.Result {
	key := s.key()
	if len(key) == 0 {
		return local(sink.Retry, errors.New("the signing key is empty"))
	}
	if !headerSafe(e.BatchID) {
		return local(sink.Failed, errors.New("the batch id cannot go in a webhook-id header"))
	}
	if e.Items < 0 {
		return local(sink.Failed, errors.New("the export counts a negative number of items"))
	}
	h, err := newHead(e.BatchID, e.ExportedAt, e.Manifest)
	if err != nil {
		return local(sink.Failed, err)
	}
	per := int64(s.maxItems)
	parts := int((e.Items + per - 1) / per)
	if parts == 0 {
		parts = 1 // an empty batch still says it is done
	}
	done := max(p.Done(), 0)
	if done >= parts {
		return sink.Result{Outcome: sink.Delivered}
	}
	rc, err := e.OpenItems()
	if err != nil {
		return local(sink.Retry, fmt.Errorf("open results.ndjson: %w", err))
	}
	defer rc.Close()
	it := newItems(rc, s.maxItemBytes)
	if err := it.skip(int64(done) * per); err != nil {
		return itemsFailed(err)
	}
	var body bytes.Buffer
	for k := done + 1; k <= parts; k++ {
		if err := ctx.Err(); err != nil {
			return cancelled(err)
		}
		count := min(per, e.Items-int64(k-1)*per)
		if err := h.part(&body, it, k, parts, count); err != nil {
			return itemsFailed(err)
		}
		if k == parts {
			if err := it.atEnd(); err != nil {
				return itemsFailed(err)
			}
		}
		if r, ok := s.post(ctx, key, MessageID(e.BatchID, e.Version, k), body.Bytes()); !ok {
			return r
		}
		if err := p.Mark(k); err != nil {
			return local(sink.Retry, fmt.Errorf("record part %d of %d: %w", k, parts, err))
		}
	}
	return sink.Result{Outcome: sink.Delivered}
}

// headerSafe reports whether s can be sent in a header value as it is.
func headerSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return false
		}
	}
	return s != ""
}

func local(o sink.Outcome, err error) sink.Result {
	return sink.Result{Outcome: o, Kind: "local", Reason: err.Error()}
}

// itemsFailed: a read error may pass (Retry); a malformed item will not.
// A count that disagrees with the manifest is retried: the dispatcher
// checked the file against it, so only a change of the file since can
// cause it, and the next attempt reads the export's newest version.
func itemsFailed(err error) sink.Result {
	if errors.Is(err, errTooLong) || errors.Is(err, errBadItem) {
		return local(sink.Failed, err)
	}
	return local(sink.Retry, err)
}

func cancelled(err error) sink.Result {
	return sink.Result{Outcome: sink.Retry, Kind: "cancelled", Reason: "delivery interrupted: " + err.Error()}
}
