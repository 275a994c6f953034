package receiver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/batchhook/batchhook/cpf"
	"github.com/batchhook/batchhook/internal/netval"
	"github.com/batchhook/batchhook/store"
)

// EventCompleted is the one event the provider sends (docs/provider-api.md §6).
const EventCompleted = "batch.completed"

// MaxBatchCPFs is the provider's limit on CPFs per batch (docs/provider-api.md §8).
const MaxBatchCPFs = 1000

// maxDepth bounds JSON nesting: the notification is flat, so anything deep
// is hostile and is refused before it costs stack or time.
const maxDepth = 16

// counterNames are the three counters, in the order of their flags.
var counterNames = [...]string{"total_requested", "total_found", "total_not_found"}

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
	var buf [16]member // a notification has seven: no allocation for the members
	fields, err := scanObjectMembers(body, buf[:0])
	if err != nil {
		return n, err
	}
	if n.Event, err = stringField(body, fields, "event", true); err != nil {
		return n, err
	}
	if n.BatchID, err = stringField(body, fields, "batch_id", true); err != nil {
		return n, err
	}
	if err := store.CheckBatchID(n.BatchID); err != nil {
		return n, invalid("batch_id %v", err)
	}
	if n.Event != EventCompleted {
		return n, nil
	}
	if n.Status, err = stringField(body, fields, "status", true); err != nil {
		return n, err
	}
	if !finalStatuses[n.Status] {
		return n, invalid("status %q is not one of completed, partial, expired, failed", truncate(n.Status))
	}
	// Counters go through an array, not pointers into n: &n.TotalFound
	// would move the whole notification to the heap.
	var counters [len(counterNames)]*int64
	for i, name := range counterNames {
		if counters[i], err = counterField(body, fields, name); err != nil {
			n.TotalRequested, n.TotalFound, n.TotalNotFound = counters[0], counters[1], counters[2]
			return n, err
		}
		if counters[i] == nil {
			n.Flags = append(n.Flags, name+" missing")
		} else if flag, shaped := cpfShapedCounter(name, *counters[i]); shaped {
			n.Flags = append(n.Flags, flag)
			counters[i] = nil
		}
	}
	n.TotalRequested, n.TotalFound, n.TotalNotFound = counters[0], counters[1], counters[2]
	n.Flags = append(n.Flags, counterFlags(n)...)
	n.CompletedAt, err = completedAt(body, fields)
	if err != nil {
		n.Flags = append(n.Flags, err.Error())
	}
	return n, nil
}

// decodeObject decodes a signed body strictly into its top-level members:
// no byte order mark, one JSON object (no duplicate or case-variant keys,
// nesting at most maxDepth) and nothing after it. Both products' webhooks
// use the same scanner (strict.go), so the two cannot disagree on what a
// body says. The members alias body.
func decodeObject(body []byte) (map[string]json.RawMessage, error) {
	members, err := scanObjectMembers(body, nil)
	if err != nil {
		return nil, err
	}
	fields := make(map[string]json.RawMessage, len(members))
	for _, m := range members {
		fields[string(m.name(body))] = m.value(body)
	}
	return fields, nil
}

// field returns the value of the top-level member named name; keys are
// unique up to case, so an exact match is the only one.
func field(body []byte, fields []member, name string) ([]byte, bool) {
	for _, m := range fields {
		if string(m.name(body)) == name {
			return m.value(body), true
		}
	}
	return nil, false
}

// knownValues are the event and statuses: decodeString returns these
// constants rather than a copy of the body's bytes.
var knownValues = [...]string{EventCompleted, "completed", "partial", "expired", "failed"}

// decodeString decodes a JSON string value: its bytes when it has no
// escape and is ASCII, else encoding/json's reading (invalid UTF-8 and lone
// surrogates become U+FFFD), as before the scanner. ok is false for a
// value that is not a string.
func decodeString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 && isASCII(inner) {
		for _, known := range knownValues {
			if string(inner) == known {
				return known, true // no copy of the values every notification has
			}
		}
		return string(inner), true
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

// cpfShapedCounter says whether a counter's value has nine digits or more:
// no count of a batch of at most MaxBatchCPFs, and CPF-shaped. Such a
// batch is still recorded (a 400 is retried for ever), flagged, without
// the number: the record, the admin API and the export's manifest would
// serve it back.
func cpfShapedCounter(name string, v int64) (flag string, shaped bool) {
	digits := strconv.FormatInt(v, 10)
	if masked := cpf.Scrub(digits); masked != digits {
		return fmt.Sprintf("%s %s is not a count (CPF-shaped): not kept", name, masked), true
	}
	return "", false
}

func counterFlags(n store.Notification) []string {
	var flags []string
	// A flag quotes the counters, which the sender chose: it is masked
	// when it is made, so the log line, the stored record and the admin
	// API carry the same masked text.
	if r := n.TotalRequested; r != nil && *r > MaxBatchCPFs {
		flags = append(flags, cpf.Scrub(fmt.Sprintf("total_requested %d exceeds %d", *r, MaxBatchCPFs)))
	}
	// All three are non-negative, so this form cannot overflow as *f+*nf can.
	if r, f, nf := n.TotalRequested, n.TotalFound, n.TotalNotFound; r != nil && f != nil && nf != nil && (*f > *r || *nf > *r-*f) {
		flags = append(flags, cpf.Scrub(fmt.Sprintf("total_found + total_not_found exceeds total_requested (%d + %d > %d)", *f, *nf, *r)))
	}
	return flags
}

func stringField(body []byte, fields []member, name string, required bool) (string, error) {
	raw, ok := field(body, fields, name)
	if !ok || string(raw) == "null" {
		if required {
			return "", invalid("%s is missing", name)
		}
		return "", nil
	}
	s, ok := decodeString(raw)
	if !ok {
		return "", invalid("%s is not a string", name)
	}
	if required && s == "" {
		return "", invalid("%s is empty", name)
	}
	return s, nil
}

// counterField reads a counter as written: digits only, so 1.0, 1e3, -1 and
// values beyond int64 are refused rather than rounded.
func counterField(body []byte, fields []member, name string) (*int64, error) {
	raw, ok := field(body, fields, name)
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	if len(raw) == 0 {
		return nil, invalid("%s is not a non-negative integer", name)
	}
	for _, c := range raw {
		if !isDigit(c) {
			return nil, invalid("%s is not a non-negative integer", name)
		}
	}
	// The digits are read here rather than by strconv.ParseInt, which
	// needs a string (a copy of the bytes) and is the same for digits.
	var v int64
	for _, c := range raw {
		d := int64(c - '0')
		if v > (math.MaxInt64-d)/10 {
			return nil, invalid("%s is out of range", name)
		}
		v = v*10 + d
	}
	return &v, nil
}

// completedAtLayouts are the ISO 8601 forms accepted: Z or +00:00 (RFC 3339,
// fractions optional) and +0000.
var completedAtLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999-0700"}

func completedAt(body []byte, fields []member) (*time.Time, error) {
	raw, ok := field(body, fields, "completed_at")
	if !ok || string(raw) == "null" {
		return nil, errors.New("completed_at missing")
	}
	s, ok := decodeString(raw)
	if !ok {
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
func truncate(s string) string { return netval.Text(s, netval.Field) }
