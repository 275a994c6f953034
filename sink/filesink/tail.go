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

// LastSeq returns the highest seq of a whole line in any day file (0 when
// there is none). The daemon raises the payment log's sequence to it at
// start (store.RaisePaymentSeq), so that after a restore of an older
// database a new event never takes a seq these files already hold: the
// tail check would skip it as written. A file whose last line is not the
// sink's is left out (an append to it is refused anyway, errCorrupt).
func (s *Sink) LastSeq() (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	dir, err := s.openDir()
	if err != nil {
		return 0, fmt.Errorf("read the payment day files: %w", err)
	}
	defer dir.Close()
	days, err := listDays(dir)
	if err != nil {
		return 0, fmt.Errorf("read the payment day files: %w", err)
	}
	var top uint64
	for _, day := range days {
		seq, err := lastLineSeq(dir, day+fileExt)
		if errors.Is(err, errCorrupt) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("read the payment day files: %w", err)
		}
		top = max(top, seq)
	}
	return top, nil
}

// lastLineSeq reads the seq of the last whole line of the day file name,
// without changing it (a partial last line is ignored).
func lastLineSeq(dir *os.File, name string) (uint64, error) {
	f, _, err := openFileAt(dir, name, os.O_RDONLY)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("stat %s: %w", f.Name(), err)
	}
	return tailSeq(f, st.Size())
}

// tailSeq reads the seq of the last whole line of f (of size bytes): 0
// when it has none, errCorrupt when that line is not the sink's. A partial
// last line is ignored.
func tailSeq(f *os.File, size int64) (uint64, error) {
	end, err := lastNewline(f, size)
	if err != nil || end < 0 {
		return 0, err
	}
	nl, err := lastNewline(f, end)
	if err != nil {
		return 0, err
	}
	head := make([]byte, min(40, end-(nl+1)))
	if _, err := f.ReadAt(head, nl+1); err != nil && !errors.Is(err, io.EOF) {
		return 0, fmt.Errorf("read the last line of %s: %w", f.Name(), err)
	}
	seq, ok := lineSeq(head)
	if !ok {
		return 0, fmt.Errorf("%s: %w", f.Name(), errCorrupt)
	}
	return seq, nil
}
