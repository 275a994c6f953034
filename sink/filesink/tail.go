package filesink

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
)

// tailChunk is how much of a day file one backward read takes.
const tailChunk = 64 << 10

// recoverTail makes f (of size bytes) end with a whole line: a last line
// without its "\n" is truncated away. It returns the new size and the seq
// of the last line (0 for an empty file), after an fsync, so that what it
// reports is on disk and not only in the page cache.
func recoverTail(f *os.File, size int64) (int64, uint64, error) {
	if size > 0 {
		var b [1]byte
		if _, err := f.ReadAt(b[:], size-1); err != nil {
			return 0, 0, fmt.Errorf("read the end of %s: %w", f.Name(), err)
		}
		if b[0] != '\n' {
			nl, err := lastNewline(f, size)
			if err != nil {
				return 0, 0, err
			}
			if err := f.Truncate(nl + 1); err != nil {
				return 0, 0, fmt.Errorf("truncate the partial last line of %s: %w", f.Name(), err)
			}
			size = nl + 1
		}
	}
	if err := f.Sync(); err != nil {
		return 0, 0, fmt.Errorf("sync %s: %w", f.Name(), err)
	}
	if size == 0 {
		return 0, 0, nil
	}
	nl, err := lastNewline(f, size-1)
	if err != nil {
		return 0, 0, err
	}
	head := make([]byte, min(40, size-(nl+1)))
	if _, err := f.ReadAt(head, nl+1); err != nil && !errors.Is(err, io.EOF) {
		return 0, 0, fmt.Errorf("read the last line of %s: %w", f.Name(), err)
	}
	seq, ok := lineSeq(head)
	if !ok {
		return 0, 0, fmt.Errorf("%s: %w", f.Name(), errCorrupt)
	}
	return size, seq, nil
}

// lastNewline returns the offset of the last "\n" before end in f, or -1
// when there is none.
func lastNewline(f *os.File, end int64) (int64, error) {
	buf := make([]byte, tailChunk)
	for end > 0 {
		start := max(end-tailChunk, 0)
		chunk := buf[:end-start]
		if _, err := f.ReadAt(chunk, start); err != nil && !errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("read %s: %w", f.Name(), err)
		}
		if i := bytes.LastIndexByte(chunk, '\n'); i >= 0 {
			return start + int64(i), nil
		}
		end = start
	}
	return -1, nil
}

// lineSeq reads N from a line that starts with {"seq":N, (PaymentLine's
// form).
func lineSeq(line []byte) (uint64, bool) {
	rest, ok := bytes.CutPrefix(line, []byte(`{"seq":`))
	if !ok {
		return 0, false
	}
	i := bytes.IndexByte(rest, ',')
	if i <= 0 {
		return 0, false
	}
	seq, err := strconv.ParseUint(string(rest[:i]), 10, 64)
	return seq, err == nil && seq > 0
}
