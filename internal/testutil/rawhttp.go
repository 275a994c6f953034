package testutil

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"time"
)

// RawRequest is a request written byte for byte, as a client that does not
// follow the rules would send it.
type RawRequest struct {
	Name  string
	Bytes string
}

// Smuggling returns the six shapes of a POST to path carrying both
// Content-Length and Transfer-Encoding: chunked, each with hidden (a whole
// request) after the chunked body's last chunk. A server that frames it as
// chunked and keeps the connection answers hidden too; a proxy in front
// that frames it by Content-Length sends hidden as part of the body, so
// the server answers a request the proxy never saw.
func Smuggling(path, hidden string) []RawRequest {
	body := "0\r\n\r\n" + hidden
	cl := fmt.Sprintf("Content-Length: %d", len(body))
	crlf := func(lines ...string) string { return strings.Join(lines, "\r\n") + "\r\n\r\n" + body }
	start := "POST " + path + " HTTP/1.1"
	host := "Host: 127.0.0.1"
	return []RawRequest{
		{"te after cl", crlf(start, host, cl, "Transfer-Encoding: chunked")},
		{"te first", crlf(start, host, "Transfer-Encoding: chunked", cl)},
		{"upper-case CHUNKED", crlf(start, host, cl, "Transfer-Encoding: CHUNKED")},
		{"tab before chunked", crlf(start, host, cl, "Transfer-Encoding:\tchunked")},
		{"bare LF line ends", strings.Join([]string{start, host, cl, "Transfer-Encoding: chunked"}, "\n") + "\n\n" + body},
		{"expect 100-continue", crlf(start, host, cl, "Transfer-Encoding: chunked", "Expect: 100-continue")},
	}
}

// MoreSmuggling returns further spellings of the same two fields: names in
// other cases, a folded value, HTTP/1.0, a repeated field, a coding
// net/http does not support, white space before the colon, a
// Transfer-Encoding folded into another field. Each must be refused like
// the six of Smuggling.
func MoreSmuggling(path, hidden string) []RawRequest {
	body := "0\r\n\r\n" + hidden
	cl := fmt.Sprintf("Content-Length: %d", len(body))
	crlf := func(lines ...string) string { return strings.Join(lines, "\r\n") + "\r\n\r\n" + body }
	start := "POST " + path + " HTTP/1.1"
	host := "Host: 127.0.0.1"
	return []RawRequest{
		{"lower-case names", crlf(start, host, strings.ToLower(cl), "transfer-encoding: chunked")},
		{"upper-case names", crlf(start, host, strings.ToUpper(cl), "TRANSFER-ENCODING: chunked")},
		{"folded value", crlf(start, host, cl, "Transfer-Encoding:", " chunked")},
		{"http/1.0", crlf("POST "+path+" HTTP/1.0", host, cl, "Transfer-Encoding: chunked")},
		{"two codings fields", crlf(start, host, cl, "Transfer-Encoding: chunked", "Transfer-Encoding: chunked")},
		{"gzip, chunked", crlf(start, host, cl, "Transfer-Encoding: gzip, chunked")},
		{"space before colon", crlf(start, host, cl, "Transfer-Encoding : chunked")},
		{"folded into another field", crlf(start, host, cl, "X-Note: a", " Transfer-Encoding: chunked")},
		{"trailing space", crlf(start, host, cl+" ", "Transfer-Encoding: chunked ")},
	}
}

// Exchange is what a raw exchange came to: the status of each response
// read, in order, and whether the server then closed the connection.
type Exchange struct {
	Statuses []int
	Closed   bool
	// Err is what ended the reading when the server did not close: a
	// timeout means the connection was still open at the deadline.
	Err error
}

// Send writes raw on a new connection to addr and reads responses until
// the server closes the connection or wait passes.
func Send(addr, raw string, wait time.Duration) (Exchange, error) {
	c, err := net.DialTimeout("tcp", addr, wait)
	if err != nil {
		return Exchange{}, fmt.Errorf("dial %s: %w", addr, err)
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(wait)); err != nil {
		return Exchange{}, err
	}
	if _, err := io.WriteString(c, raw); err != nil {
		return Exchange{}, fmt.Errorf("write the request: %w", err)
	}
	var x Exchange
	r := bufio.NewReader(c)
	for {
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			x.Closed = errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
			if !x.Closed {
				x.Err = err
				if errors.Is(err, os.ErrDeadlineExceeded) {
					x.Err = fmt.Errorf("the connection was still open after %s", wait)
				}
			}
			return x, nil
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode < 200 && err == nil {
			continue // 100 Continue: not an answer
		}
		x.Statuses = append(x.Statuses, resp.StatusCode)
		if err != nil {
			x.Closed = errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
			return x, nil
		}
	}
}

// Refused reports what is wrong with x for a request that must be answered
// 400 with the connection closed and nothing more; "" when nothing is.
func (x Exchange) Refused() string {
	switch {
	case len(x.Statuses) != 1 || x.Statuses[0] != http.StatusBadRequest:
		return fmt.Sprintf("answered %v, want [400] alone", x.Statuses)
	case !x.Closed:
		return fmt.Sprintf("answered %v and the connection kept open (%v)", x.Statuses, x.Err)
	}
	return ""
}
