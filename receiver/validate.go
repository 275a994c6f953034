package receiver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/batchhook/batchhook/store"
)

// EventCompleted is the one event the provider sends (document section 6).
const EventCompleted = "batch.completed"

// MaxBatchCPFs is the provider's limit on CPFs per batch (document section 8).
const MaxBatchCPFs = 1000

// maxDepth bounds JSON nesting: the notification is flat, so anything deep
// is hostile and is refused before it costs stack or time.
const maxDepth = 16

var finalStatuses = map[string]bool{"completed": true, "partial": true, "expired": true, "failed": true}

// errInvalid marks a signed body that is rejected with 400 and quarantined.
var errInvalid = errors.New("invalid notification")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errInvalid, fmt.Sprintf(format, args...))
}

// Parse validates a signed body and returns what it says. It decodes
// strictly (no byte order mark, no duplicate or case-variant keys, one JSON
// object and nothing after it), because a lenient decoder would let two
// readers of the same signed bytes disagree on its meaning.
//
// Only what makes the body unusable is an error: a missing event or
// batch_id, an unsafe batch_id, a status outside the four, a counter that is
// present but not a non-negative integer. Doubtful values (counter
// relations, a completed_at that does not parse, a missing counter) are
// accepted and listed in Flags, because a 400 is retried by the provider for
// ever and a genuine batch must never be lost to it. Unknown fields are
// ignored: the body is not versioned.
func Parse(body []byte) (store.Notification, error) {
	var n store.Notification
	fields, err := decodeObject(body)
	if err != nil {
		return n, err
	}
	if n.Event, err = stringField(fields, "event", true); err != nil {
		return n, err
	}
	if n.BatchID, err = stringField(fields, "batch_id", true); err != nil {
		return n, err
	}
	if err := store.CheckBatchID(n.BatchID); err != nil {
		return n, invalid("batch_id %v", err)
	}
	if n.Event != EventCompleted {
		return n, nil
	}
	if n.Status, err = stringField(fields, "status", true); err != nil {
		return n, err
	}
	if !finalStatuses[n.Status] {
		return n, invalid("status %q is not one of completed, partial, expired, failed", truncate(n.Status))
	}
	for _, c := range []struct {
		name string
		dst  **int64
	}{
		{"total_requested", &n.TotalRequested},
		{"total_found", &n.TotalFound},
		{"total_not_found", &n.TotalNotFound},
	} {
		if *c.dst, err = counterField(fields, c.name); err != nil {
			return n, err
		}
		if *c.dst == nil {
			n.Flags = append(n.Flags, c.name+" missing")
		}
	}
	n.Flags = append(n.Flags, counterFlags(n)...)
	n.CompletedAt, err = completedAt(fields)
	if err != nil {
		n.Flags = append(n.Flags, err.Error())
	}
	return n, nil
}

// decodeObject decodes a signed body strictly into its top-level members:
// no byte order mark, one JSON object (no duplicate or case-variant keys,
// nesting at most maxDepth) and nothing after it. Both products' webhooks
// use it, so the two cannot disagree on what a body says.
func decodeObject(body []byte) (map[string]json.RawMessage, error) {
	if bytes.HasPrefix(body, []byte("\xef\xbb\xbf")) {
		return nil, invalid("body starts with a byte order mark")
	}
	if err := checkStrict(body); err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return nil, invalid("body is not a JSON object")
	}
	return fields, nil
}

func counterFlags(n store.Notification) []string {
	var flags []string
	if r := n.TotalRequested; r != nil && *r > MaxBatchCPFs {
		flags = append(flags, fmt.Sprintf("total_requested %d exceeds %d", *r, MaxBatchCPFs))
	}
	// All three are non-negative, so this form cannot overflow as *f+*nf can.
	if r, f, nf := n.TotalRequested, n.TotalFound, n.TotalNotFound; r != nil && f != nil && nf != nil && (*f > *r || *nf > *r-*f) {
		flags = append(flags, fmt.Sprintf("total_found + total_not_found exceeds total_requested (%d + %d > %d)", *f, *nf, *r))
	}
	return flags
}

func stringField(fields map[string]json.RawMessage, name string, required bool) (string, error) {
	raw, ok := fields[name]
	if !ok || string(raw) == "null" {
		if required {
			return "", invalid("%s is missing", name)
		}
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", invalid("%s is not a string", name)
	}
	if required && s == "" {
		return "", invalid("%s is empty", name)
	}
	return s, nil
}

// counterField reads a counter as written: digits only, so 1.0, 1e3, -1 and
// values beyond int64 are refused rather than rounded.
func counterField(fields map[string]json.RawMessage, name string) (*int64, error) {
	raw, ok := fields[name]
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	text := string(raw)
	if text == "" || strings.Trim(text, "0123456789") != "" {
		return nil, invalid("%s is not a non-negative integer", name)
	}
	v, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return nil, invalid("%s is out of range", name)
	}
	return &v, nil
}

// completedAtLayouts are the ISO 8601 forms accepted: Z or +00:00 (RFC 3339,
// fractions optional) and +0000.
var completedAtLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999-0700"}

func completedAt(fields map[string]json.RawMessage) (*time.Time, error) {
	raw, ok := fields["completed_at"]
	if !ok || string(raw) == "null" {
		return nil, errors.New("completed_at missing")
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, errors.New("completed_at is not a string")
	}
	for _, layout := range completedAtLayouts {
		t, err := time.Parse(layout, s)
		if err != nil {
			continue
		}
		if _, off := t.Zone(); off != 0 {
			return nil, errors.New("completed_at is not UTC")
		}
		t = t.UTC()
		return &t, nil
	}
	return nil, errors.New("completed_at does not parse as ISO 8601 UTC")
}

// checkStrict walks the tokens of body and refuses anything a strict reader
// would: not one JSON object, trailing data, nesting deeper than maxDepth,
// or an object with a key repeated exactly or up to case (encoding/json
// matches keys case-insensitively, so "Batch_ID" would otherwise shadow
// "batch_id").
func checkStrict(body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return invalid("body is not JSON")
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return invalid("body is not a JSON object")
	}
	if err := walkObject(dec, 1); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return invalid("body has data after the JSON object")
	}
	return nil
}

func walkObject(dec *json.Decoder, depth int) error {
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return invalid("body is not JSON")
		}
		key, _ := tok.(string)
		folded := foldKey(key)
		if seen[folded] {
			return invalid("key %q appears more than once (exactly or up to case)", truncate(key))
		}
		seen[folded] = true
		if err := walkValue(dec, depth); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return invalid("body is not JSON")
	}
	return nil
}

func walkValue(dec *json.Decoder, depth int) error {
	tok, err := dec.Token()
	if err != nil {
		return invalid("body is not JSON")
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	if depth+1 > maxDepth {
		return invalid("body is nested deeper than %d levels", maxDepth)
	}
	if d == '{' {
		return walkObject(dec, depth+1)
	}
	for dec.More() {
		if err := walkValue(dec, depth+1); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return invalid("body is not JSON")
	}
	return nil
}

// foldKey maps every rune to the smallest rune of its case-folding orbit
// (unicode.SimpleFold), the equivalence encoding/json uses to match keys:
// "ſtatus" (long s) and "STATUS" both fold to "status".
func foldKey(key string) string {
	var b strings.Builder
	b.Grow(len(key))
	for _, r := range key {
		min := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f < min {
				min = f
			}
		}
		b.WriteRune(min)
	}
	return b.String()
}

// truncate keeps attacker-chosen strings short in errors and logs; callers
// quote the result with %q so control characters are escaped.
func truncate(s string) string {
	const max = 40
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}
