package natssink

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// errShort, errLong and errTooLong say why an export cannot be sent as it
// is; retrying cannot help, so they end a delivery as failed. Their texts
// never hold an item.
var (
	errShort   = errors.New("results.ndjson has fewer items than the manifest says")
	errLong    = errors.New("results.ndjson has more items than the manifest says")
	errTooLong = errors.New("an item of results.ndjson is larger than the server's max payload")
)

// items reads results.ndjson one item at a time, each exactly as stored
// (only its "\n" removed), so a message is byte-equal to its line on
// every attempt.
type items struct {
	sc *bufio.Scanner
}

func newItems(r io.Reader, maxBytes int) *items {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, min(64<<10, maxBytes+1)), maxBytes+1)
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			return i + 1, data[:i], nil
		}
		if atEOF && len(data) > 0 {
			return len(data), data, nil
		}
		return 0, nil, nil
	})
	return &items{sc: sc}
}

// next returns the next item, valid until the next call; errShort at the
// end of the file.
func (it *items) next() ([]byte, error) {
	if it.sc.Scan() {
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
