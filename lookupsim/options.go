package lookupsim

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Defaults applied by New to zero-valued Options fields. They mirror the
// provider's API where it gives a value (docs/provider-api.md §8) and are our
// assumption where it does not.
const (
	DefaultProcessingDelay = 2 * time.Second
	DefaultRetention       = 7 * 24 * time.Hour
	DefaultDeliveryTimeout = 10 * time.Second
	DefaultRetryBackoff    = time.Second
	DefaultMaxAttempts     = 8
	DefaultSubmitPerMinute = 10
	DefaultMaxInFlight     = 50
)

// Unlimited, given as SubmitPerMinute or MaxInFlight, disables that limit.
// Zero cannot mean "off" in a Go struct, where it already means "default".
const Unlimited = -1

// maxBackoff caps the spacing between delivery attempts.
const maxBackoff = time.Minute

// Options configures a Server. Zero values take the defaults above, so
// Options{APIKey: "k"} is a working simulator with no webhook.
type Options struct {
	// APIKey is the Bearer key every API call must carry. Required.
	APIKey string
	// SigningSecret signs webhooks. Required when WebhookURL is set.
	SigningSecret []byte
	// WebhookURL is the account's registered URL; empty means no
	// notification is sent (batches are still processed).
	WebhookURL string

	// PaymentsWebhookURL receives the payment events that the sandbox's
	// simulation URLs trigger; empty means none are sent (transactions
	// still move on).
	PaymentsWebhookURL string
	// PaymentsSigningSecret signs payment webhooks: docs/provider-api.md gives one
	// secret per account and product. Required with PaymentsWebhookURL.
	PaymentsSigningSecret []byte
	// GatewayAuthHeader and GatewayAuthValue, set together, make every
	// gateway call (POST /api/pix/charge, /api/pix/pay) carry that header
	// with exactly that value, else 401. The document does not show how
	// gateway calls authenticate; both empty (the default) means no check.
	GatewayAuthHeader string
	GatewayAuthValue  []byte
	// SandboxURL is the {sandbox_url} written into qrcode links. Empty
	// means this Server's own base URL: one listener serves the API, the
	// gateway and the sandbox, but clients must not assume that.
	SandboxURL string

	// ProcessingDelay is how long a batch stays in flight.
	ProcessingDelay time.Duration
	// Retention is how long a final result stays readable, from completion.
	Retention time.Duration
	// DeliveryTimeout bounds one webhook attempt.
	DeliveryTimeout time.Duration
	// RetryBackoff is the spacing after the first failed attempt; it
	// doubles after each further failure, up to one minute.
	RetryBackoff time.Duration
	// MaxAttempts bounds the delivery attempts of one batch.
	MaxAttempts int
	// SubmitPerMinute bounds accepted submissions in any rolling 60 s;
	// Unlimited disables it.
	SubmitPerMinute int
	// MaxInFlight bounds batches not yet final; Unlimited disables it.
	MaxInFlight int

	// Outcome picks the final status of the seq-th submission (0-based).
	// Nil means always "completed". An unknown status is served as "failed".
	Outcome func(seq int, cpfs []string) string
	// Faults is the initial fault injection; see SetFaults.
	Faults Faults
	// Now is the clock for completed_at, retention and the submission
	// window; nil means time.Now. Tests move it to cross retention.
	Now func() time.Time
	// Logf receives one line per event, with ids, counts and statuses only,
	// never CPFs or items; nil means silent.
	Logf func(format string, args ...any)
}

// withDefaults checks o and fills in the defaults.
func (o Options) withDefaults() (Options, error) {
	if o.APIKey == "" {
		return o, errors.New("lookupsim: APIKey is required")
	}
	if o.WebhookURL != "" && len(o.SigningSecret) == 0 {
		return o, errors.New("lookupsim: SigningSecret is required when WebhookURL is set")
	}
	if o.PaymentsWebhookURL != "" && len(o.PaymentsSigningSecret) == 0 {
		return o, errors.New("lookupsim: PaymentsSigningSecret is required when PaymentsWebhookURL is set")
	}
	if (o.GatewayAuthHeader == "") != (len(o.GatewayAuthValue) == 0) {
		return o, errors.New("lookupsim: GatewayAuthHeader and GatewayAuthValue go together")
	}
	if o.GatewayAuthHeader != "" && !validHeaderName(o.GatewayAuthHeader) {
		return o, errors.New("lookupsim: GatewayAuthHeader is not a valid header name")
	}
	o.SandboxURL = strings.TrimRight(o.SandboxURL, "/")
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"ProcessingDelay", &o.ProcessingDelay, DefaultProcessingDelay},
		{"Retention", &o.Retention, DefaultRetention},
		{"DeliveryTimeout", &o.DeliveryTimeout, DefaultDeliveryTimeout},
		{"RetryBackoff", &o.RetryBackoff, DefaultRetryBackoff},
	} {
		if *d.v < 0 {
			return o, fmt.Errorf("lookupsim: %s must not be negative", d.name)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if o.MaxAttempts < 0 {
		return o, errors.New("lookupsim: MaxAttempts must not be negative")
	}
	if o.MaxAttempts == 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	for _, l := range []struct {
		name string
		v    *int
		def  int
	}{
		{"SubmitPerMinute", &o.SubmitPerMinute, DefaultSubmitPerMinute},
		{"MaxInFlight", &o.MaxInFlight, DefaultMaxInFlight},
	} {
		switch {
		case *l.v == 0:
			*l.v = l.def
		case *l.v < 0 && *l.v != Unlimited:
			return o, fmt.Errorf("lookupsim: %s must be positive or Unlimited", l.name)
		}
	}
	if o.Outcome == nil {
		o.Outcome = func(int, []string) string { return StatusCompleted }
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	f, err := o.Faults.normalized()
	if err != nil {
		return o, err
	}
	o.Faults = f
	return o, nil
}

// Cycle returns an Outcome that gives the statuses in turn by submission
// order: Cycle("completed", "failed") makes every second batch fail. With
// no statuses every batch completes. It panics on a status that is not one
// of the four final ones, since that is a mistake in the caller's code.
func Cycle(statuses ...string) func(seq int, cpfs []string) string {
	for _, s := range statuses {
		if !IsFinalStatus(s) {
			panic(fmt.Sprintf("lookupsim.Cycle: %q is not a final status", s))
		}
	}
	list := append([]string(nil), statuses...)
	return func(seq int, _ []string) string {
		if len(list) == 0 {
			return StatusCompleted
		}
		if seq < 0 {
			seq = -seq
		}
		return list[seq%len(list)]
	}
}

// validHeaderName reports whether name is an HTTP field name (RFC 9110
// token characters only).
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
