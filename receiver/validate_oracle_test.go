package receiver

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/batchhook/batchhook/store"
)

// The decoder batchhook used before the single-pass scanner (strict.go),
// kept verbatim as the oracle the scanner is held equal to: a json.Decoder
// token walk (checkStrict) for the strict rules, then json.Unmarshal into a
// map of raw members, then json.Unmarshal per string field. Only the names
// changed (oracle…).

func oracleParse(body []byte) (store.Notification, error) {
	var n store.Notification
	fields, err := oracleDecodeObject(body)
	if err != nil {
		return n, err
	}
	if n.Event, err = oracleStringField(fields, "event", true); err != nil {
		return n, err
	}
	if n.BatchID, err = oracleStringField(fields, "batch_id", true); err != nil {
		return n, err
	}
	if err := store.CheckBatchID(n.BatchID); err != nil {
		return n, invalid("batch_id %v", err)
	}
	if n.Event != EventCompleted {
		return n, nil
	}
	if n.Status, err = oracleStringField(fields, "status", true); err != nil {
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
		if *c.dst, err = oracleCounterField(fields, c.name); err != nil {
			return n, err
		}
		if *c.dst == nil {
			n.Flags = append(n.Flags, c.name+" missing")
		} else if flag, shaped := cpfShapedCounter(c.name, **c.dst); shaped {
			n.Flags, *c.dst = append(n.Flags, flag), nil
		}
	}
	n.Flags = append(n.Flags, counterFlags(n)...)
	n.CompletedAt, err = oracleCompletedAt(fields)
	if err != nil {
		n.Flags = append(n.Flags, err.Error())
	}
	return n, nil
}

func oracleDecodeObject(body []byte) (map[string]json.RawMessage, error) {
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

func oracleStringField(fields map[string]json.RawMessage, name string, required bool) (string, error) {
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

func oracleCounterField(fields map[string]json.RawMessage, name string) (*int64, error) {
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

func oracleCompletedAt(fields map[string]json.RawMessage) (*time.Time, error) {
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
