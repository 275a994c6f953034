package lookupsim

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"

	"github.com/batchhook/batchhook/cpf"
)

// Gateway limits (our assumption: docs/provider-api.md shows none).
const (
	// maxGatewayBody caps a deposit or withdrawal request; the fields of
	// 4.4 take a few hundred bytes.
	maxGatewayBody = 64 << 10
	// maxFieldBytes caps each string field.
	maxFieldBytes = 256
)

// amountPattern is a positive decimal with at most two places, as the
// digits of a JSON number (no sign, no exponent, no leading zeros).
var amountPattern = regexp.MustCompile(`^(0|[1-9][0-9]{0,11})(\.[0-9]{1,2})?$`)

// fieldKind is the JSON type a request field must have.
type fieldKind int

const (
	kindString fieldKind = iota
	kindNumber
)

// fieldSpec is one request field of docs/provider-api.md §4.4.
type fieldSpec struct {
	name     string
	kind     fieldKind
	nonEmpty bool // an empty string is refused
}

// depositFields and withdrawalFields are exactly the request fields of
// docs/provider-api.md §4.4, in its order; every one is required (our assumption).
var (
	depositFields = []fieldSpec{
		{"amount", kindNumber, true}, {"merchant_transaction_id", kindString, true},
		{"first_name", kindString, true}, {"last_name", kindString, true}, {"email", kindString, false},
		{"document_number", kindString, true}, {"message", kindString, false},
		{"ip_address", kindString, false}, {"phone_number", kindString, false},
	}
	withdrawalFields = []fieldSpec{
		{"merchant_transaction_id", kindString, true}, {"amount", kindNumber, true},
		{"pix_key_type", kindString, true}, {"pix_key_value", kindString, true},
		{"pix_message", kindString, false}, {"first_name", kindString, true},
		{"last_name", kindString, true}, {"document_number", kindString, true},
	}
)

// FieldError is a gateway request refused because of one field. Its
// message names the field and the rule, never the value (the values are
// personal data).
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

// gatewayRoutes adds the gateway and the sandbox to mux.
func (s *Server) gatewayRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /api/pix/charge", s.handleCreate(flowCashin))
	mux.HandleFunc("POST /api/pix/pay", s.handleCreate(flowCashout))
	mux.HandleFunc("/api/transactions/{ref}/{action}", s.handleSimulate)
}

// Flow types of docs/provider-api.md §2.4.
const (
	flowCashin  = "cashin"
	flowCashout = "cashout"
)

// gatewayAuthorized applies Options.GatewayAuthHeader/Value in constant
// time; with none configured every call passes.
func (s *Server) gatewayAuthorized(r *http.Request) bool {
	if s.opts.GatewayAuthHeader == "" {
		return true
	}
	got := r.Header.Values(s.opts.GatewayAuthHeader)
	return len(got) == 1 && subtle.ConstantTimeCompare([]byte(got[0]), s.opts.GatewayAuthValue) == 1
}

// handleCreate serves a deposit (cashin) or a withdrawal (cashout).
func (s *Server) handleCreate(flow string) http.HandlerFunc {
	specs := depositFields
	if flow == flowCashout {
		specs = withdrawalFields
	}
	return func(w http.ResponseWriter, r *http.Request) {
		s.count(func(st *Stats) { st.GatewayRequests++ })
		if !s.gatewayAuthorized(r) {
			writeJSON(w, http.StatusUnauthorized, errorBody{"unauthorized"})
			return
		}
		fields, err := decodeFields(http.MaxBytesReader(w, r.Body, maxGatewayBody), specs)
		if err != nil {
			writeGatewayError(w, err)
			return
		}
		body, err := s.create(flow, fields, sandboxBase(s, r))
		if err != nil {
			writeGatewayError(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(body)
	}
}

// decodeFields reads one JSON object holding exactly the fields of specs:
// an unknown, repeated, missing or wrongly typed field is a *FieldError,
// as is a rule below; anything that is not one object is ErrInvalid. It
// returns each field's value as text (a number as its digits).
func decodeFields(body io.Reader, specs []fieldSpec) (map[string]string, error) {
	dec := json.NewDecoder(body)
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, bodyError(err)
	}
	raw := make(map[string]json.RawMessage, len(specs))
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, bodyError(err)
		}
		name, _ := tok.(string)
		if !knownField(specs, name) {
			return nil, &FieldError{Field: fieldLabel(name), Reason: "unknown field"}
		}
		if _, dup := raw[name]; dup {
			return nil, &FieldError{Field: name, Reason: "given more than once"}
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, bodyError(err)
		}
		raw[name] = v
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, bodyError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, bodyError(errors.New("trailing data"))
	}
	out := make(map[string]string, len(specs))
	for _, f := range specs {
		v, ok := raw[f.name]
		if !ok {
			return nil, &FieldError{Field: f.name, Reason: "missing"}
		}
		text, err := fieldValue(f, v)
		if err != nil {
			return nil, err
		}
		out[f.name] = text
	}
	if _, err := cpf.Normalize(out["document_number"]); err != nil {
		return nil, &FieldError{Field: "document_number", Reason: "not a valid CPF"}
	}
	return out, nil
}

// fieldValue checks one field's type and rules and returns its text.
func fieldValue(f fieldSpec, v json.RawMessage) (string, error) {
	v = bytes.TrimSpace(v)
	if f.kind == kindNumber {
		if len(v) == 0 || !(v[0] == '-' || v[0] >= '0' && v[0] <= '9') {
			return "", &FieldError{Field: f.name, Reason: "must be a JSON number"}
		}
		if !amountPattern.Match(v) || strings.Trim(string(v), "0.") == "" {
			return "", &FieldError{Field: f.name, Reason: "must be positive, with at most two decimal places and no exponent"}
		}
		return string(v), nil
	}
	var str string
	if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &str) != nil {
		return "", &FieldError{Field: f.name, Reason: "must be a JSON string"}
	}
	switch {
	case f.nonEmpty && strings.TrimSpace(str) == "":
		return "", &FieldError{Field: f.name, Reason: "must not be empty"}
	case len(str) > maxFieldBytes:
		return "", &FieldError{Field: f.name, Reason: fmt.Sprintf("longer than %d bytes", maxFieldBytes)}
	}
	return str, nil
}

func knownField(specs []fieldSpec, name string) bool {
	for _, f := range specs {
		if f.name == name {
			return true
		}
	}
	return false
}

// fieldLabel quotes an unknown field's name for the error, capped: the
// name comes from the client.
func fieldLabel(name string) string {
	if len(name) > 64 {
		name = name[:64] + "…"
	}
	return fmt.Sprintf("%q", name)
}

// bodyError classifies a failure to read the body as one JSON object.
func bodyError(err error) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return errTooLarge
	}
	return invalidf("body must be one JSON object with the fields of docs/provider-api.md §4.4")
}

// formatAmount renders an amount's digits with exactly two decimal places
// ("10.5" → "10.50", "7" → "7.00"), as text: no float rounding.
func formatAmount(digits string) string {
	whole, frac, _ := strings.Cut(digits, ".")
	return whole + "." + (frac + "00")[:2]
}

// gatewayErrorBody is a refused gateway call; field names the field at
// fault when there is one.
type gatewayErrorBody struct {
	Error string `json:"error"`
	Field string `json:"field,omitempty"`
}

// writeGatewayError maps gateway errors to statuses; others go to
// writeError.
func writeGatewayError(w http.ResponseWriter, err error) {
	var fe *FieldError
	if errors.As(err, &fe) {
		writeJSON(w, http.StatusBadRequest, gatewayErrorBody{Error: "invalid request: " + fe.Error(), Field: strings.Trim(fe.Field, `"`)})
		return
	}
	writeError(w, err)
}

// sandboxBase is the {sandbox_url} for this request's qrcode links:
// Options.SandboxURL, else the Server's own URL, else (under httptest)
// the address the request came to.
func sandboxBase(s *Server, r *http.Request) string {
	if s.opts.SandboxURL != "" {
		return s.opts.SandboxURL
	}
	if u := s.URL(); u != "" {
		return u
	}
	return "http://" + r.Host
}

// count updates the Stats under the lock.
func (s *Server) count(f func(*Stats)) {
	s.mu.Lock()
	f(&s.stats)
	s.mu.Unlock()
}
