package store

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// The batch record is encoded by hand, once per write: encoding/json's
// reflection, and the pass it makes over a MarshalJSON's output to compact
// it, were a seventh of the ack path's CPU. The output is the
// JSON json.Marshal(b) would give (same names, same omitted zero values;
// batch_encode_test.go checks both decode to the same record for every field),
// and it is read back with json.Unmarshal.

// encodeBatch appends b's record to dst.
func encodeBatch(dst []byte, b *Batch) ([]byte, error) {
	var err error
	dst = append(dst, `{"state":`...)
	dst = appendString(dst, string(b.State))
	dst = append(dst, `,"notification":`...)
	if dst, err = appendNotification(dst, &b.Notification); err != nil {
		return nil, err
	}
	if b.Checkpoint != (Checkpoint{}) {
		c := &b.Checkpoint
		dst = append(dst, `,"checkpoint":{`...)
		if c.Cursor != "" {
			dst = append(dst, `"cursor":`...)
			dst = appendString(dst, c.Cursor)
			dst = append(dst, ',')
		}
		dst = append(dst, `"done":`...)
		dst = strconv.AppendBool(dst, c.Done)
		dst = appendInt(dst, `,"staged_bytes":`, c.StagedBytes)
		dst = appendInt(dst, `,"items":`, c.Items)
		dst = appendInt(dst, `,"pages":`, c.Pages)
		if c.Seen != "" {
			dst = append(dst, `,"seen_cursors":`...)
			dst = appendString(dst, c.Seen)
		}
		dst = append(dst, '}')
	}
	if b.FetchAttempts != 0 {
		dst = appendInt(dst, `,"fetch_attempts":`, int64(b.FetchAttempts))
	}
	if dst, err = appendTime(dst, `,"next_attempt_at":`, b.NextAttemptAt); err != nil {
		return nil, err
	}
	dst = appendOptString(dst, `,"last_error":`, b.LastError)
	dst = appendOptString(dst, `,"error_kind":`, b.ErrorKind)
	dst = appendOptString(dst, `,"export_path":`, b.ExportPath)
	if b.Refetch {
		dst = append(dst, `,"refetch":true`...)
	}
	if dst, err = appendOptTime(dst, `,"refetch_at":`, b.RefetchAt); err != nil {
		return nil, err
	}
	if b.Refetches != 0 {
		dst = appendInt(dst, `,"refetches":`, int64(b.Refetches))
	}
	if b.ExportVersion != 0 {
		dst = appendInt(dst, `,"export_version":`, int64(b.ExportVersion))
	}
	if b.ExportRemoved {
		dst = append(dst, `,"export_removed":true`...)
	}
	if dst, err = appendTime(dst, `,"created_at":`, b.CreatedAt); err != nil {
		return nil, err
	}
	if dst, err = appendTime(dst, `,"updated_at":`, b.UpdatedAt); err != nil {
		return nil, err
	}
	if dst, err = appendOptTime(dst, `,"finished_at":`, b.FinishedAt); err != nil {
		return nil, err
	}
	dst = appendOptString(dst, `,"submission_id":`, b.SubmissionID)
	if b.Chunk != 0 {
		dst = appendInt(dst, `,"chunk":`, int64(b.Chunk))
	}
	if b.CPFCount != 0 {
		dst = appendInt(dst, `,"cpf_count":`, int64(b.CPFCount))
	}
	if dst, err = appendOptTime(dst, `,"submitted_at":`, b.SubmittedAt); err != nil {
		return nil, err
	}
	if b.PollAttempts != 0 {
		dst = appendInt(dst, `,"poll_attempts":`, int64(b.PollAttempts))
	}
	if dst, err = appendOptTime(dst, `,"next_poll_at":`, b.NextPollAt); err != nil {
		return nil, err
	}
	if b.Tombstone != nil { // rare: reflection is fine
		t, err := json.Marshal(b.Tombstone)
		if err != nil {
			return nil, err
		}
		dst = append(dst, `,"tombstone":`...)
		dst = append(dst, t...)
	}
	return append(dst, '}'), nil
}

func appendNotification(dst []byte, n *Notification) ([]byte, error) {
	var err error
	dst = append(dst, `{"event":`...)
	dst = appendString(dst, n.Event)
	dst = append(dst, `,"batch_id":`...)
	dst = appendString(dst, n.BatchID)
	dst = append(dst, `,"status":`...)
	dst = appendString(dst, n.Status)
	for _, c := range []struct {
		name string
		v    *int64
	}{{`,"total_requested":`, n.TotalRequested}, {`,"total_found":`, n.TotalFound}, {`,"total_not_found":`, n.TotalNotFound}} {
		if c.v == nil {
			dst = append(append(dst, c.name...), "null"...)
		} else {
			dst = appendInt(dst, c.name, *c.v)
		}
	}
	if n.CompletedAt == nil {
		dst = append(dst, `,"completed_at":null`...)
	} else if dst, err = appendTime(dst, `,"completed_at":`, *n.CompletedAt); err != nil {
		return nil, err
	}
	if len(n.Flags) > 0 {
		dst = append(dst, `,"flags":[`...)
		for i, f := range n.Flags {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, f)
		}
		dst = append(dst, ']')
	}
	dst = appendInt(dst, `,"attempt":`, int64(n.Attempt))
	if dst, err = appendTime(dst, `,"received_at":`, n.ReceivedAt); err != nil {
		return nil, err
	}
	dst = append(dst, `,"source":`...)
	dst = appendString(dst, n.Source)
	switch {
	case n.Raw == nil:
		dst = append(dst, `,"raw":null`...)
	case verbatim(n.Raw):
		dst = append(dst, `,"raw_json":`...)
		dst = append(dst, n.Raw...)
	default:
		dst = append(dst, `,"raw":"`...)
		dst = base64.StdEncoding.AppendEncode(dst, n.Raw)
		dst = append(dst, '"')
	}
	return append(dst, '}'), nil
}

func appendInt(dst []byte, name string, v int64) []byte {
	return strconv.AppendInt(append(dst, name...), v, 10)
}

func appendOptString(dst []byte, name, s string) []byte {
	if s == "" {
		return dst
	}
	return appendString(append(dst, name...), s)
}

// appendString appends s as a JSON string. Printable ASCII without quotes
// or backslashes (ids, states, sources, most errors) is copied; anything
// else goes through encoding/json, which escapes it (and, like json.Marshal
// of the whole record, replaces invalid UTF-8).
func appendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(dst, q...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// appendTime appends t as Time.MarshalJSON writes it, and refuses what it
// refuses: a year outside [0,9999] and a zone offset of a day or more,
// which RFC 3339 cannot express (AppendText is MarshalJSON's own strict
// formatter, without its allocation). Written anyway, an offset past
// 99:59 would make the record unreadable.
func appendTime(dst []byte, name string, t time.Time) ([]byte, error) {
	dst = append(append(dst, name...), '"')
	dst, err := t.AppendText(dst)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", name[2:len(name)-2], err)
	}
	return append(dst, '"'), nil
}

func appendOptTime(dst []byte, name string, t time.Time) ([]byte, error) {
	if t.IsZero() {
		return dst, nil
	}
	return appendTime(dst, name, t)
}

// verbatim reports whether raw can be stored as JSON byte for byte:
// valid JSON in valid UTF-8, compact (no whitespace outside strings), and
// without what encoding/json would escape (<, >, &, U+2028, U+2029), so
// that json.Marshal of the record as a json.RawMessage would not change
// it either.
func verbatim(raw []byte) bool {
	if len(raw) == 0 || !utf8.Valid(raw) {
		return false
	}
	in, esc := false, false
	for i, c := range raw {
		switch {
		case c == '<' || c == '>' || c == '&':
			return false
		case c == 0xe2 && i+2 < len(raw) && raw[i+1] == 0x80 && (raw[i+2] == 0xa8 || raw[i+2] == 0xa9): // U+2028, U+2029
			return false
		case esc:
			esc = false
		case in && c == '\\':
			esc = true
		case c == '"':
			in = !in
		case !in && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return false
		}
	}
	return json.Valid(raw)
}
