package receiver

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// paymentRefusals are the reasons a payments body may be refused with:
// every refusal names one of them.
var paymentRefusals = regexp.MustCompile(`^invalid notification: (body starts with a byte order mark|body is not JSON|` +
	`body is not a JSON object|body has data after the JSON object|body is nested deeper than \d+ levels|` +
	`key ".*" appears more than once \(exactly or up to case\))$`)

// FuzzPaymentBody: the payments webhook's reading of a signed body
// (readPayment) never panics; a refusal is errInvalid naming one of the
// known reasons, and a body encoding/json takes for something else than
// one object is refused; an accepted body is one JSON object whose
// top-level members are what encoding/json reads, byte for byte, and its
// SHA-256, dedup key and transaction id are what a reading by
// encoding/json alone gives (the dedup key's values decoded equal the
// body's at the listed paths, or the key is the body's hash exactly when
// one is missing or null).
func FuzzPaymentBody(f *testing.F) {
	for _, s := range []string{
		`{"transaction":{"id":"t-1","status":"paid","updated_at":"2026-11-24T10:00:00+0000"}}`,
		`{"transaction":{"id":"t-1","status":"paid","updated_at":1e3,"amount":12.50}}`,
		`{"transaction":{"id":"t-1","status":null,"updated_at":"u"}}`,
		`{"transaction":{"id":7,"status":"paid","updated_at":"u"}}`,
		`{"transaction":{"id":{"x":[1,2,{"y":null}]},"status":"paid","updated_at":"u"}}`,
		`{"transaction":"t"}`,
		`{"transaction":{"id":"` + strings.Repeat("z", 600) + `","status":"s","updated_at":"u"}}`,
		`{"transaction":{"id":"a\u00e9\ud800","status":"s","updated_at":"u"}}`,
		`{"transaction":{"id":"a","ID":"b"}}`,
		`{"transaction":{"id":"a"},"Transaction":{}}`,
		`{"a":[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]}`,
		"\xef\xbb\xbf{}", `{"a":1} {"b":2}`, `[1]`, `"x"`, ``, `{"a":1,}`, `{"t":"` + "\xff" + `"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		pb, err := readPayment(body, defaultDedup)
		if err != nil {
			if !errors.Is(err, errInvalid) || !paymentRefusals.MatchString(err.Error()) {
				t.Fatalf("readPayment(%q): refusal %q names no known reason", body, err)
			}
			return
		}
		checkPaymentOracle(t, body, pb)
	})
}

// checkPaymentOracle holds an accepted body's reading to encoding/json's.
func checkPaymentOracle(t *testing.T, body []byte, pb paymentBody) {
	t.Helper()
	var top map[string]json.RawMessage
	if !json.Valid(body) || json.Unmarshal(body, &top) != nil || top == nil {
		t.Fatalf("accepted %q, which encoding/json does not read as one object", body)
	}
	fields, err := decodeObject(body)
	if err != nil || len(fields) != len(top) {
		t.Fatalf("accepted %q: %d members (%v), encoding/json %d", body, len(fields), err, len(top))
	}
	for name, raw := range top {
		if got, ok := fields[name]; !ok || !bytes.Equal(got, raw) {
			t.Fatalf("accepted %q: member %q = %q (present %v), encoding/json %q", body, name, got, ok, raw)
		}
	}
	sum := sha256.Sum256(body)
	if pb.bodySHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("body sha256 %s, want %x", pb.bodySHA256, sum)
	}
	tree := decodeNumbers(t, body)
	var values []any
	present := true
	for _, p := range defaultDedup {
		v, ok := walk(tree, p)
		if !ok {
			present = false
			break
		}
		values = append(values, v)
	}
	switch {
	case !present:
		if pb.dedupKey != "sha256:"+pb.bodySHA256 {
			t.Fatalf("%q: a listed field is missing or null, key %q, want the body's hash", body, pb.dedupKey)
		}
	case strings.HasPrefix(pb.dedupKey, "fields:"):
		if len(pb.dedupKey) > maxFieldsKey {
			t.Fatalf("%q: key of %d bytes", body, len(pb.dedupKey))
		}
		got := decodeNumbers(t, []byte(strings.TrimPrefix(pb.dedupKey, "fields:")))
		if !reflect.DeepEqual(got, any(values)) {
			t.Fatalf("%q: key %q holds %#v, the body %#v", body, pb.dedupKey, got, values)
		}
	case strings.HasPrefix(pb.dedupKey, "fields-sha256:"):
		// The values as written, compacted, by encoding/json's reading.
		var arr bytes.Buffer
		arr.WriteByte('[')
		for i, p := range defaultDedup {
			if i > 0 {
				arr.WriteByte(',')
			}
			if err := json.Compact(&arr, walkRaw(t, body, p)); err != nil {
				t.Fatal(err)
			}
		}
		arr.WriteByte(']')
		sum := sha256.Sum256(arr.Bytes())
		if len("fields:")+arr.Len() <= maxFieldsKey || pb.dedupKey != "fields-sha256:"+hex.EncodeToString(sum[:]) {
			t.Fatalf("%q: hashed key %q for values %s", body, pb.dedupKey, arr.Bytes())
		}
	default:
		t.Fatalf("%q: every listed field is present, key %q", body, pb.dedupKey)
	}
	wantID := ""
	if v, ok := walk(tree, []string{"transaction", "id"}); ok {
		if s, ok := v.(string); ok && len(s) <= maxTransactionID {
			wantID = s
		}
	}
	if pb.transactionID != wantID {
		t.Fatalf("%q: transaction id %q, encoding/json reads %q", body, pb.transactionID, wantID)
	}
}

// decodeNumbers decodes one JSON value with encoding/json, numbers kept
// as written.
func decodeNumbers(t *testing.T, data []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("encoding/json cannot read %q: %v", data, err)
	}
	return v
}

// walkRaw returns the JSON text at path in body, by encoding/json.
func walkRaw(t *testing.T, body []byte, path []string) json.RawMessage {
	t.Helper()
	raw := json.RawMessage(body)
	for _, seg := range path {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("%q: %v", body, err)
		}
		raw = m[seg]
	}
	return raw
}

// walk follows path through nested objects by exact names; ok is false
// when a member is missing or null, or a step is not an object.
func walk(v any, path []string) (any, bool) {
	for _, seg := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[seg]; !ok || v == nil {
			return nil, false
		}
	}
	return v, true
}
