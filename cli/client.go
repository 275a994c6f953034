package cli

import (
	"bytes"
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

	"github.com/batchhook/batchhook/admin"
	"github.com/batchhook/batchhook/config"
)

// adminClient talks to the daemon's admin API.
type adminClient struct {
	base  string
	token config.Secret
	http  *http.Client
}

// newAdminClient is the admin API client for the URL admin, or
// $BATCHHOOK_ADMIN_URL (else the default) when it is empty.
func newAdminClient(admin string) (*adminClient, error) {
	env, err := config.LoadClient()
	if err != nil {
		return nil, err
	}
	base := env.AdminURL
	if admin != "" {
		base = admin
	}
	return &adminClient{base: strings.TrimRight(base, "/"), token: env.Token, http: &http.Client{Timeout: 15 * time.Second}}, nil
}

// apiError is a non-2xx reply of the admin API; body is the reply, for
// the routes that answer an error with details (a 422 intake). tokenSent
// says whether the request carried a token, for explain's advice on a 401.
type apiError struct {
	status    int
	reason    string
	body      []byte
	tokenSent bool
	// retryAfter is the reply's Retry-After, as sent ("" when none).
	retryAfter string
}

func (e *apiError) Error() string { return fmt.Sprintf("admin API: HTTP %d: %s", e.status, e.reason) }

// do sends a request without a body and returns the body of a 2xx reply.
func (c *adminClient) do(ctx context.Context, method, path string) ([]byte, error) {
	return c.send(ctx, method, path, "", nil)
}

// send sends a request with body (of contentType) and returns the body of a
// 2xx reply.
func (c *adminClient) send(ctx context.Context, method, path, contentType string, body io.Reader) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if len(c.token) > 0 {
		req.Header.Set("Authorization", "Bearer "+string(c.token))
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reach the admin API at %s (is batchhook running? see --admin): %w", c.base, err)
	}
	defer resp.Body.Close()
	reply, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("read admin API reply: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, c.replyError(method, path, resp, reply)
	}
	return reply, nil
}

// replyError turns a non-2xx reply to method path into an apiError, or
// into a notAdminError when a 404 lacks the header every reply of the
// admin API carries: then --admin points at something else (the webhook
// listener answers 404 to /admin/… with the same JSON shape), and "no such
// batch" would send the operator looking for the wrong thing.
func (c *adminClient) replyError(method, path string, resp *http.Response, reply []byte) error {
	if resp.StatusCode == http.StatusNotFound && resp.Header.Get(admin.APIHeader) != admin.APIName {
		return &notAdminError{base: c.base, method: method, path: path}
	}
	var e struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal(reply, &e)
	if e.Error == "" {
		e.Error = http.StatusText(resp.StatusCode)
	}
	return &apiError{status: resp.StatusCode, reason: e.Error, body: reply, tokenSent: len(c.token) > 0,
		retryAfter: resp.Header.Get("Retry-After")}
}

// notAdminError is a 404 from something that is not batchhook's admin API.
type notAdminError struct {
	base, method, path string
}

func (e *notAdminError) Error() string {
	base := e.base
	if u, err := url.Parse(base); err == nil {
		base = u.Redacted() // a password in the URL never reaches the message
	}
	path, _, _ := strings.Cut(e.path, "?")
	return fmt.Sprintf("%s does not look like batchhook's admin API (%s %s answered 404 without the admin API's %s header); "+
		"is --admin (or BATCHHOOK_ADMIN_URL) the admin listener, the daemon's BATCHHOOK_ADMIN_ADDR, and not the webhook listener?",
		base, e.method, path, admin.APIHeader)
}

func printJSON(w io.Writer, raw []byte) error {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return fmt.Errorf("admin API returned invalid JSON: %w", err)
	}
	buf.WriteByte('\n')
	_, err := w.Write(buf.Bytes())
	return err
}

// explain adds what to do to the common admin API errors.
func explain(err error) error {
	var ae *apiError
	if errors.As(err, &ae) {
		switch ae.status {
		case http.StatusUnauthorized:
			return fmt.Errorf("%w (%s)", err, tokenAdvice(ae))
		case http.StatusTooManyRequests:
			when := ""
			if n, perr := strconv.Atoi(ae.retryAfter); perr == nil && n > 0 {
				when = fmt.Sprintf("; try again in %d s", n)
			}
			return fmt.Errorf("%w (too many wrong admin tokens came from this address, or from everywhere: the admin API checks "+
				"no token until the wait is over%s. If this machine sent them, check BATCHHOOK_ADMIN_TOKEN or BATCHHOOK_ADMIN_TOKEN_FILE "+
				"of every client here)", err, when)
		case http.StatusNotFound:
			return fmt.Errorf("%w (no such batch or entry)", err)
		case http.StatusConflict:
			// The reason names the state; only a batch still on its way
			// needs the advice to wait.
			if strings.Contains(ae.reason, " is queued") || strings.Contains(ae.reason, " is fetching") {
				return fmt.Errorf("%w (wait until the batch is exported or abandoned)", err)
			}
			return err
		}
	}
	return err
}

// tokenAdvice says what to fix after a 401, from the admin API's reason
// and whether the CLI sent a token (a daemon older than the two reasons
// answers "unauthorized" to both).
func tokenAdvice(ae *apiError) string {
	switch {
	case ae.reason == admin.ReasonTokenMismatch || (ae.reason != admin.ReasonTokenMissing && ae.tokenSent):
		return "the admin API refused the token: the CLI's BATCHHOOK_ADMIN_TOKEN (or BATCHHOOK_ADMIN_TOKEN_FILE) differs from the daemon's"
	case ae.tokenSent:
		return "the CLI sent BATCHHOOK_ADMIN_TOKEN but the admin API got no token: does something between them (a proxy) drop the Authorization header?"
	default:
		return "the admin API needs a token: set BATCHHOOK_ADMIN_TOKEN or BATCHHOOK_ADMIN_TOKEN_FILE for the CLI too, to the daemon's token"
	}
}

func exitOf(err error, stderr io.Writer) int {
	if err != nil {
		fmt.Fprintf(stderr, "batchhook: %v\n", err)
		return 1
	}
	return 0
}

// getReply is the common part of the read-only commands: it builds the
// admin client, GETs path and, with --json, prints the reply. done is
// true when the command ends here with code (an error, said in the
// command's words, or the JSON printed); otherwise raw is the reply to
// show as a table. A 404 is said as notFoundMsg when it is not empty.
func getReply(ctx context.Context, command string, client func() (*adminClient, error), path, notFoundMsg string, asJSON bool,
	stdout, stderr io.Writer) (raw []byte, code int, done bool) {
	c, err := client()
	if err != nil {
		fmt.Fprintf(stderr, "batchhook %s: %v\n", strings.Fields(command)[0], err)
		return nil, 2, true
	}
	raw, err = c.do(ctx, http.MethodGet, path)
	if err != nil {
		if notFoundMsg != "" {
			err = notFound(err, notFoundMsg)
		} else {
			err = explain(err)
		}
		fmt.Fprintf(stderr, "batchhook %s: %v\n", command, err)
		return nil, 1, true
	}
	if asJSON {
		return nil, exitOf(printJSON(stdout, raw), stderr), true
	}
	return raw, 0, false
}
