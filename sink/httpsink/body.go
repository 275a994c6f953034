package httpsink

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// errTooLong, errShort, errLong and errBadItem say why an export cannot be
// sent as it is; retrying cannot help, so they end a delivery as failed.
// Their texts never hold an item.
var (
	errTooLong = errors.New("an item of results.ndjson is larger than the item limit")
	errShort   = errors.New("results.ndjson has fewer items than the manifest says")
	errLong    = errors.New("results.ndjson has more items than the manifest says")
	errBadItem = errors.New("a line of results.ndjson is not one JSON value")
)

// items reads results.ndjson one item at a time. A line is returned
// exactly as stored (only its "\n" removed, never a "\r"), so the items of
// a part are byte-equal to the export on every attempt.
type items struct {
	sc  *bufio.Scanner
	max int
}

func newItems(r io.Reader, maxItemBytes int) *items {
	sc := bufio.NewScanner(r)
	// The buffer grows only as large as the longest item; the cap is one
	// byte over the limit so that an item of exactly the limit still fits
	// with its newline. The first buffer must not be larger than the cap:
	// the Scanner's limit is the larger of the two.
	sc.Buffer(make([]byte, 0, min(64<<10, maxItemBytes+1)), maxItemBytes+1)
	sc.Split(splitLines)
	return &items{sc: sc, max: maxItemBytes}
}

// splitLines is bufio.ScanLines without its removal of a trailing "\r".
func splitLines(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// next returns the next item; errShort at the end of the file. The slice
// is valid until the next call.
func (it *items) next() ([]byte, error) {
	if it.sc.Scan() {
		if len(it.sc.Bytes()) > it.max { // a last line without its newline
			return nil, errTooLong
		}
		return it.sc.Bytes(), nil
	}
	if err := it.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, errTooLong
		}
		return nil, fmt.Errorf("read results.ndjson: %w", err)
	}
	return nil, errShort
}

// skip passes over n items (the parts already delivered).
func (it *items) skip(n int64) error {
	for ; n > 0; n-- {
		if _, err := it.next(); err != nil {
			return err
		}
	}
	return nil
}

// atEnd reports errLong when an item follows the last one the manifest
// counts.
func (it *items) atEnd() error {
	_, err := it.next()
	switch {
	case errors.Is(err, errShort):
		return nil
	case err == nil:
		return errLong
	}
	return err
}

// head is the part of a body that is the same for every part of an
// export: the event type, the export time and the manifest.
type head struct {
	timestamp []byte // JSON string
	batchID   []byte // JSON string
	manifest  []byte // compacted JSON object
}

func newHead(batchID string, exportedAt time.Time, manifest []byte) (head, error) {
	var m bytes.Buffer
	if err := json.Compact(&m, manifest); err != nil {
		return head{}, fmt.Errorf("compact manifest.json: %w", err)
	}
	if m.Len() == 0 || m.Bytes()[0] != '{' {
		return head{}, errors.New("manifest.json is not a JSON object")
	}
	ts, err := json.Marshal(exportedAt.Format(time.RFC3339Nano))
	if err != nil {
		return head{}, fmt.Errorf("encode exported_at: %w", err)
	}
	id, err := json.Marshal(batchID)
	if err != nil {
		return head{}, fmt.Errorf("encode batch_id: %w", err)
	}
	return head{timestamp: ts, batchID: id, manifest: m.Bytes()}, nil
}

// part writes the body of part k of n, taking count items from it. The
// body depends only on the export, never on the attempt, so a retried
// part is byte-identical to its first attempt.
func (h head) part(buf *bytes.Buffer, it *items, k, n int, count int64) error {
	buf.Reset()
	buf.WriteString(`{"type":"batch.exported","timestamp":`)
	buf.Write(h.timestamp)
	buf.WriteString(`,"data":{"batch_id":`)
	buf.Write(h.batchID)
	fmt.Fprintf(buf, `,"part":%d,"parts":%d,"manifest":`, k, n)
	buf.Write(h.manifest)
	buf.WriteString(`,"items":[`)
	for i := int64(0); i < count; i++ {
		item, err := it.next()
		if err != nil {
			return err
		}
		if !json.Valid(item) {
			return errBadItem
		}
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(item)
	}
	buf.WriteString(`]}}`)
	return nil
}
