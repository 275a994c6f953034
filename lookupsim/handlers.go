package lookupsim

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"
)

// maxSubmitBody caps a submission body: 1,000 CPFs take about 16 KiB.
const maxSubmitBody = 1 << 20

// authorized checks "Authorization: Bearer <key>" in constant time; the
// scheme name is case-insensitive (RFC 9110).
func (s *Server) authorized(r *http.Request) bool {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(token), []byte(s.opts.APIKey)) == 1
}

type submitRequest struct {
	CPFs []string `json:"cpfs"`
}

type submitReply struct {
	BatchID        string `json:"batch_id"`
	Status         string `json:"status"`
	TotalRequested int    `json:"total_requested"`
}

func (s *Server) handleSubmit(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(r) {
		writeError(w, errUnauthorized)
		return
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxSubmitBody))
	dec.DisallowUnknownFields()
	var req submitRequest
	err := dec.Decode(&req)
	if err == nil {
		// Anything after the object is an error, as is an unread remainder
		// that pushes the body past the cap.
		if _, extra := dec.Token(); extra != io.EOF {
			err = extra
			if err == nil {
				err = errors.New("trailing data")
			}
		}
	}
	if err != nil {
		var tooBig *http.MaxBytesError
		var typeErr *json.UnmarshalTypeError
		switch {
		case errors.As(err, &tooBig):
			writeError(w, errTooLarge)
		case errors.As(err, &typeErr):
			writeError(w, invalidf("cpfs must be an array of strings"))
		default:
			writeError(w, invalidf(`body must be one JSON object {"cpfs":[...]} and nothing else`))
		}
		return
	}
	b, err := s.submit(req.CPFs)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, submitReply{BatchID: b.id, Status: StatusProcessing, TotalRequested: len(b.cpfs)})
}

func (s *Server) handlePage(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(r) {
		writeError(w, errUnauthorized)
		return
	}
	f := s.nextGETFault()
	switch {
	case f.status == http.StatusTooManyRequests:
		w.Header().Set("Retry-After", retryAfterSeconds(f.retryAfter))
		writeJSON(w, f.status, errorBody{"rate_limited"})
		return
	case f.status != 0:
		writeJSON(w, f.status, errorBody{"internal"})
		return
	case f.drop:
		dropConnection(w)
		return
	case f.slow > 0:
		t := time.NewTimer(f.slow)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return // the client left (or the Server closed): nobody to answer
		}
	}
	q := r.URL.Query()
	limitValues, present := q["limit"]
	limit, err := parseLimit(strings.Join(limitValues, ","), present)
	if err != nil {
		writeError(w, invalidf("%v", err))
		return
	}
	body, err := s.page(r.PathValue("batch_id"), q.Get("cursor"), limit)
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// page renders one page of a batch, or says why it cannot.
func (s *Server) page(batchID, cursor string, limit int) ([]byte, error) {
	s.mu.Lock()
	b, ok := s.batches[batchID]
	if !ok || b.status != StatusProcessing && s.expiredLocked(b, s.opts.Now()) {
		s.mu.Unlock()
		return nil, ErrNotFound
	}
	if b.status == StatusProcessing {
		s.mu.Unlock()
		if cursor != "" {
			return nil, errBadCursor // no cursor was ever issued for it
		}
		s.countPage(false)
		return renderPage(b.id, StatusProcessing, nil, 0, limit), nil
	}
	status, items := b.status, b.items // immutable once final
	s.mu.Unlock()
	offset := 0
	if cursor != "" {
		off, err := decodeCursor(batchID, cursor)
		if err != nil || off >= len(items) {
			return nil, errBadCursor
		}
		offset = off
	}
	s.countPage(true)
	return renderPage(batchID, status, items, offset, limit), nil
}

func (s *Server) countPage(final bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if final {
		s.stats.PagesServed++
	} else {
		s.stats.Polls++
	}
}

// HTTP-only errors.
var (
	errUnauthorized = errors.New("unauthorized")
	errTooLarge     = errors.New("body_too_large")
)

type errorBody struct {
	Error string `json:"error"`
}

// writeError is the one place where errors become HTTP statuses.
func writeError(w http.ResponseWriter, err error) {
	var limit *LimitError
	switch {
	case errors.Is(err, errUnauthorized):
		w.Header().Set("WWW-Authenticate", "Bearer")
		writeJSON(w, http.StatusUnauthorized, errorBody{"unauthorized"})
	case errors.Is(err, errTooLarge):
		writeJSON(w, http.StatusRequestEntityTooLarge, errorBody{"body_too_large"})
	case errors.As(err, &limit):
		w.Header().Set("Retry-After", retryAfterSeconds(limit.RetryAfter))
		writeJSON(w, http.StatusTooManyRequests, errorBody{"rate_limited"})
	case errors.Is(err, ErrInvalid):
		writeJSON(w, http.StatusBadRequest, errorBody{err.Error()})
	case errors.Is(err, errBadCursor):
		writeJSON(w, http.StatusBadRequest, errorBody{"bad_cursor"})
	case errors.Is(err, ErrNotFound):
		writeJSON(w, http.StatusNotFound, errorBody{"not_found"})
	case errors.Is(err, ErrClosed):
		writeJSON(w, http.StatusServiceUnavailable, errorBody{"shutting_down"})
	default:
		writeJSON(w, http.StatusInternalServerError, errorBody{"internal"})
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status, body = http.StatusInternalServerError, []byte(`{"error":"internal"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
