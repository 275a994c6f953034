package lookupsim

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
)

// Page size bounds (our assumption: docs/provider-api.md shows neither).
const (
	DefaultPageLimit = 100
	MaxPageLimit     = 1000
)

// cursorPrefix marks our cursors' format version; the rest is base64url of
// "<batch id>:<offset>", so a cursor is opaque to clients, stable for a
// given page, and refused when replayed against another batch.
const cursorPrefix = "c1."

func encodeCursor(batchID string, offset int) string {
	return cursorPrefix + base64.RawURLEncoding.EncodeToString([]byte(batchID+":"+strconv.Itoa(offset)))
}

var errBadCursor = errors.New("bad cursor")

// decodeCursor returns the offset a cursor stands for; only the exact
// strings encodeCursor issues for this batch are accepted.
func decodeCursor(batchID, cursor string) (int, error) {
	rest, ok := strings.CutPrefix(cursor, cursorPrefix)
	if !ok {
		return 0, errBadCursor
	}
	raw, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil {
		return 0, errBadCursor
	}
	id, off, ok := strings.Cut(string(raw), ":")
	if !ok || id != batchID {
		return 0, errBadCursor
	}
	offset, err := strconv.Atoi(off)
	if err != nil || offset < 1 || encodeCursor(batchID, offset) != cursor {
		return 0, errBadCursor
	}
	return offset, nil
}

// parseLimit reads the limit parameter: absent means the default, above
// the maximum is clamped, anything else that is not a positive integer is
// refused.
func parseLimit(v string, present bool) (int, error) {
	if !present {
		return DefaultPageLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange && !strings.HasPrefix(v, "-") {
			return MaxPageLimit, nil
		}
		return 0, errors.New("limit must be a positive integer")
	}
	if n < 1 {
		return 0, errors.New("limit must be a positive integer")
	}
	return min(n, MaxPageLimit), nil
}

// renderPage writes one page by hand so that member order and bytes are
// fixed: {"batch_id","status","results","next_cursor"}. Items are already
// compact JSON and are copied verbatim.
func renderPage(batchID, status string, items []json.RawMessage, offset, limit int) []byte {
	end := min(offset+limit, len(items))
	page := items[offset:end]
	size := 96 + len(batchID)
	for _, it := range page {
		size += len(it) + 1
	}
	var b bytes.Buffer
	b.Grow(size)
	b.WriteString(`{"batch_id":`)
	writeJSONString(&b, batchID)
	b.WriteString(`,"status":`)
	writeJSONString(&b, status)
	b.WriteString(`,"results":[`)
	for i, it := range page {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(it)
	}
	b.WriteString(`],"next_cursor":`)
	if end < len(items) {
		writeJSONString(&b, encodeCursor(batchID, end))
	} else {
		b.WriteString("null")
	}
	b.WriteByte('}')
	return b.Bytes()
}

// writeJSONString writes s as a JSON string. Our ids, statuses and cursors
// are plain ASCII, but encoding keeps the output valid whatever they hold.
func writeJSONString(b *bytes.Buffer, s string) {
	enc, _ := json.Marshal(s) // a string always encodes
	b.Write(enc)
}
