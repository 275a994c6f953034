package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
)

// apiClient is the tests' own admin API client: a base URL and a bearer
// token, and the body of a 2xx reply or an error.
type apiClient struct {
	base  string
	token string
	http  *http.Client
}

// send sends a request with body (of contentType) and returns the body of
// a 2xx reply.
func (c *apiClient) send(ctx context.Context, method, path, contentType string, body io.Reader) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	reply, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("admin API: HTTP %d: %s", resp.StatusCode, oneLine(string(reply), 200))
	}
	return reply, nil
}

// oneLine is s on one line, cut after max bytes.
func oneLine(s string, max int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}

// regexpLine reports whether a line of text matches pattern.
func regexpLine(text, pattern string) bool {
	for _, l := range strings.Split(text, "\n") {
		if regexp.MustCompile(pattern).MatchString(l) {
			return true
		}
	}
	return false
}

// plural writes n with the singular or plural noun: "1 CPF", "3 CPFs".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
