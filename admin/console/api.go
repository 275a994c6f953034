package console

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// The console's only source: the admin API, called in process. A reply
// is recorded in memory (the API's replies the console asks for are
// pages of at most a few hundred entries), then decoded.

// apiError is an admin API reply that is not a success: its status and
// its {"error":…} reason.
type apiError struct {
	Status int
	Reason string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("admin API answered %d: %s", e.Status, e.Reason)
}

// recorder is an in-memory http.ResponseWriter.
type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) Write(p []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.body.Write(p)
}
func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}

// call sends method path (with its query) to the admin API with the
// current token and, on a 2xx, decodes the JSON reply into out (nil: not
// decoded). from is the console's request, whose sender the API's logs
// then name.
func (c *Console) call(ctx context.Context, from *http.Request, method, path string, body any, out any) error {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("%s %s: encode: %w", method, path, err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://console.internal"+path, rd)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+string(c.o.Token()))
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if from != nil {
		req.RemoteAddr = from.RemoteAddr
	}
	rec := &recorder{header: http.Header{}}
	c.o.API.ServeHTTP(rec, req)
	if rec.code == 0 {
		rec.code = http.StatusOK
	}
	if rec.code < 200 || rec.code > 299 {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(rec.body.Bytes(), &e)
		if e.Error == "" {
			e.Error = http.StatusText(rec.code)
		}
		return &apiError{Status: rec.code, Reason: e.Error}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(rec.body.Bytes(), out); err != nil {
		return fmt.Errorf("%s %s: decode the reply: %w", method, path, err)
	}
	return nil
}

// get is call with GET and no body.
func (c *Console) get(r *http.Request, path string, out any) error {
	return c.call(r.Context(), r, http.MethodGet, path, nil, out)
}
