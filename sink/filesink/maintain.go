package filesink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The erasure and the purge change the day files through these methods
// only; each holds the sink's lock, so it never interleaves with an append.

// DropLines removes the lines of the events seqs from every day file that
// holds one (the erasure of a person's data). Each affected file
// is rewritten whole (rewrite.go), so a crash leaves the old file or the
// new one, never a mix. A partial last line left by a crash is dropped with
// them (its event was not delivered: the sink writes it again). It reads
// every day file, since a line's day is not known from its seq; erasures
// are rare. It returns how many lines it removed.
func (s *Sink) DropLines(ctx context.Context, seqs []uint64) (int, error) {
	if len(seqs) == 0 {
		return 0, nil
	}
	drop := make(map[uint64]bool, len(seqs))
	for _, q := range seqs {
		drop[q] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for q := range drop {
		s.erased[q] = true // never appended from now on, even by a run read before the erasure
	}
	dir, err := s.openDir()
	if err != nil {
		return 0, fmt.Errorf("drop payment lines: %w", err)
	}
	defer dir.Close()
	days, err := listDays(dir)
	if err != nil {
		return 0, fmt.Errorf("drop payment lines: %w", err)
	}
	total := 0
	for _, day := range days {
		if err := ctx.Err(); err != nil {
			return total, fmt.Errorf("drop payment lines: %w", err)
		}
		n, err := s.rewriteDay(dir, day, drop)
		total += n
		if err != nil {
			return total, fmt.Errorf("drop payment lines from %s%s: %w", day, fileExt, err)
		}
	}
	return total, nil
}

// rewriteDay rewrites day's file without the lines of drop, when it holds
// any; it returns how many it removed. A line that is not the sink's is
// copied as it is (the erasure must not wait for an operator), but then the
// new file is not trusted: the next append checks it again. Otherwise this
// process synced the new file, so appends trust it.
func (s *Sink) rewriteDay(dir *os.File, day string, drop map[uint64]bool) (int, error) {
	name := day + fileExt
	f, _, err := openFileAt(dir, name, os.O_RDONLY)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("stat %s: %w", f.Name(), err)
	}
	sc, err := scanLines(io.NewSectionReader(f, 0, st.Size()), drop, io.Discard)
	if err != nil || sc.dropped == 0 {
		return 0, err
	}
	delete(s.known, day)
	out, fs, n, err := s.rewrite(dir, name, f, st.Size(), drop, false)
	if err != nil {
		return 0, err
	}
	out.Close()
	if sc.damaged == 0 {
		s.remember(day, fs)
	}
	return n, nil
}

// Days returns the UTC midnight of every day that has a day file, oldest
// first. The purge (EXPORT_RETENTION) removes a day with RemoveDay once
// its last possible event is older than the retention, that is when
// day + 24h + EXPORT_RETENTION <= now.
func (s *Sink) Days() ([]time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	dir, err := s.openDir()
	if err != nil {
		return nil, fmt.Errorf("list payment day files: %w", err)
	}
	defer dir.Close()
	days, err := listDays(dir)
	if err != nil {
		return nil, fmt.Errorf("list payment day files: %w", err)
	}
	out := make([]time.Time, 0, len(days))
	for _, d := range days {
		t, _ := time.Parse(dayLayout, d) // listDays kept only those that parse
		out = append(out, t)
	}
	return out, nil
}

// RemoveDay deletes the day file of day (its UTC date), then fsyncs the
// directory; a day without a file is not an error. An event of that day
// still waiting for the file sink (a backlog older than the retention)
// makes a new file when it is delivered, which the next purge removes.
func (s *Sink) RemoveDay(day time.Time) error {
	name := DayOf(day) + fileExt
	s.mu.Lock()
	defer s.mu.Unlock()
	dir, err := s.openDir()
	if err != nil {
		return fmt.Errorf("remove payment day file %s: %w", name, err)
	}
	defer dir.Close()
	delete(s.known, DayOf(day))
	if err := unix.Unlinkat(int(dir.Fd()), name, 0); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return fmt.Errorf("remove payment day file %s: %w", name, err)
	}
	if err := dir.Sync(); err != nil {
		return fmt.Errorf("remove payment day file %s: sync the directory: %w", name, err)
	}
	return nil
}

// listDays returns the days (YYYY-MM-DD) of dir's day files, sorted.
func listDays(dir *os.File) ([]string, error) {
	if _, err := dir.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", dir.Name(), err)
	}
	var days []string
	for _, n := range names {
		d, ok := strings.CutSuffix(n, fileExt)
		if !ok {
			continue
		}
		if _, err := time.Parse(dayLayout, d); err != nil {
			continue
		}
		days = append(days, d)
	}
	slices.Sort(days)
	return days, nil
}
