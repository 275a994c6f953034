// Package gateway is the client of the provider's sandbox payments gateway
// (docs/provider-api.md §4.4): it creates deposits and withdrawals and opens the
// sandbox's simulation URLs, for `batchhook sandbox`. It knows nothing of
// the daemon: an operator rehearses payment flows with it from any
// machine, with only the gateway settings (config.LoadGateway).
//
// Requests carry exactly the fields of 4.4. Replies are returned as
// received, so `--json` can print them untouched; Decode reads the few
// fields a table shows. Nothing here logs: request and reply bodies hold
// personal data (names, e-mail, CPF).
package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/batchhook/batchhook/cpf"
)

// Limits of one call (docs/provider-api.md shows none; these are generous).
const (
	// Timeout bounds one call, reply body included.
	Timeout = 30 * time.Second
	// MaxReplyBytes caps a reply: a transaction with its PNG is a few KiB.
	MaxReplyBytes = 1 << 20
	// maxReason caps the reason quoted from an error reply.
	maxReason = 200
)

// Client calls one gateway and its sandbox.
type Client struct {
	gatewayURL, sandboxURL string
	authHeader             string
	authValue              []byte
	http                   *http.Client
}

// New returns a Client. gatewayURL and sandboxURL are base URLs without a
// trailing slash (either may be empty when the command does not need it);
// authHeader and authValue, when set, go on every gateway call (never on
// the sandbox's URLs, which a browser opens without them).
func New(gatewayURL, sandboxURL, authHeader string, authValue []byte) *Client {
	return &Client{
		gatewayURL: gatewayURL, sandboxURL: sandboxURL, authHeader: authHeader, authValue: authValue,
		http: &http.Client{
			Timeout: Timeout,
			// A redirect is answered as what it is: following one would
			// send the auth header (and personal data) to another place.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

// Deposit is the request of POST {gateway_url}/api/pix/charge, exactly the
// fields of 4.4 in its order.
type Deposit struct {
	Amount                Amount `json:"amount"`
	MerchantTransactionID string `json:"merchant_transaction_id"`
	FirstName             string `json:"first_name"`
	LastName              string `json:"last_name"`
	Email                 string `json:"email"`
	DocumentNumber        string `json:"document_number"`
	Message               string `json:"message"`
	IPAddress             string `json:"ip_address"`
	PhoneNumber           string `json:"phone_number"`
}

// Withdrawal is the request of POST {gateway_url}/api/pix/pay, exactly the
// fields of 4.4 in its order.
type Withdrawal struct {
	MerchantTransactionID string `json:"merchant_transaction_id"`
	Amount                Amount `json:"amount"`
	PixKeyType            string `json:"pix_key_type"`
	PixKeyValue           string `json:"pix_key_value"`
	PixMessage            string `json:"pix_message"`
	FirstName             string `json:"first_name"`
	LastName              string `json:"last_name"`
	DocumentNumber        string `json:"document_number"`
}

// StatusError is a non-2xx reply. Reason is the reply's JSON `error`
// member when there is one (capped, CPF-shaped digits scrubbed), else the
// status text: never the whole body.
type StatusError struct {
	Status int
	Reason string
}

func (e *StatusError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.Status, e.Reason) }

// ErrNotConfigured: the URL a command needs is not set.
var ErrNotConfigured = errors.New("not configured")

// CreateDeposit posts d and returns the reply body as received.
func (c *Client) CreateDeposit(ctx context.Context, d Deposit) ([]byte, error) {
	return c.create(ctx, "/api/pix/charge", d)
}

// CreateWithdrawal posts w and returns the reply body as received.
func (c *Client) CreateWithdrawal(ctx context.Context, w Withdrawal) ([]byte, error) {
	return c.create(ctx, "/api/pix/pay", w)
}

func (c *Client) create(ctx context.Context, path string, v any) ([]byte, error) {
	if c.gatewayURL == "" {
		return nil, fmt.Errorf("gateway URL: %w", ErrNotConfigured)
	}
	body, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.gatewayURL+path, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if c.authHeader != "" {
		req.Header.Set(c.authHeader, string(c.authValue))
	}
	return c.do(req)
}

// Simulate opens a simulation URL (GET, as a browser would) and returns
// the reply body as received.
func (c *Client) Simulate(ctx context.Context, simURL string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, simURL, nil)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	return c.do(req)
}

// do sends req and returns the body of a 2xx reply, or a *StatusError.
// Transport errors say what failed, not the URL (it may be a qrcode link
// an operator pasted, with a token in it).
func (c *Client) do(req *http.Request) ([]byte, error) {
	resp, err := c.http.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("reach %s: %w", req.URL.Host, err)
	}
	defer resp.Body.Close()
	reply, err := io.ReadAll(io.LimitReader(resp.Body, MaxReplyBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read reply: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, &StatusError{Status: resp.StatusCode, Reason: reason(resp.StatusCode, reply)}
	}
	if len(reply) > MaxReplyBytes {
		return nil, fmt.Errorf("reply larger than %d bytes", MaxReplyBytes)
	}
	return reply, nil
}

// reason picks what a StatusError says: the JSON `error` string, capped
// and scrubbed, else the status text.
func reason(status int, body []byte) string {
	var e struct {
		Error any `json:"error"`
	}
	r := http.StatusText(status)
	if json.Unmarshal(body, &e) == nil {
		if s, ok := e.Error.(string); ok && strings.TrimSpace(s) != "" {
			r = s
		}
	}
	r = strings.Join(strings.Fields(cpf.Scrub(r)), " ")
	if len(r) > maxReason {
		r = strings.ToValidUTF8(r[:maxReason], "") + "…"
	}
	if r == "" {
		r = "no reason given"
	}
	return r
}

// NewUUID returns a random version 4 UUID (crypto/rand), the form of a
// merchant transaction id.
func NewUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand contract)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
