package filesink

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// Rewriting a day file. A day file is rewritten whole, never edited in
// place: its kept lines go to a temporary file in the same directory, which
// is fsynced and renamed over the day file, then the directory is fsynced,
// so a crash leaves the old file or the new one, never a mix.
//
// DropLines rewrites to remove lines. The appends rewrite a file this
// process does not trust, to prove what it holds: after an fsync error the
// page cache may show lines that never reached the disk, and a later fsync
// of the same file returning 0 proves nothing (the kernel reports a
// writeback error once, and may have dropped the pages it could not write;
// the database fails closed for the same reason). Lines copied into a new
// file are fresh pages, and that file's fsync succeeding proves them.

// tmpPrefix marks the temporary files of a rewrite; Days ignores them and a
// leftover one (a crash during a rewrite) is replaced by the next rewrite.
const tmpPrefix = ".tmp-"

// rewrite replaces the day file name in dir, open as src with size bytes,
// by a copy of its whole lines except those whose seq is in drop (nil for
// none); a last line without its "\n" is left out. With check set (the
// appends, which then trust the copy) a file holding a line that is not
// the sink's is refused with errDamaged and left as it is: a write lost
// after an fsync error can read back as NUL bytes or half a line, and a
// copy must not bless it. It returns the new file, open for reading and
// writing, what it holds, and how many lines drop removed. On error the day
// file is unchanged, or replaced by a complete copy whose name is not yet
// synced in dir.
func (s *Sink) rewrite(dir *os.File, name string, src *os.File, size int64, drop map[uint64]bool, check bool) (*os.File, fileState, int, error) {
	tmp := tmpPrefix + name
	if err := unix.Unlinkat(int(dir.Fd()), tmp, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return nil, fileState{}, 0, fmt.Errorf("rewrite %s: remove a leftover %s: %w", name, tmp, err)
	}
	out, _, err := openFileAt(dir, tmp, os.O_RDWR|os.O_CREATE)
	if err != nil {
		return nil, fileState{}, 0, fmt.Errorf("rewrite %s: %w", name, err)
	}
	w := bufio.NewWriterSize(out, 64<<10)
	sc, err := scanLines(io.NewSectionReader(src, 0, size), drop, w)
	if err == nil && check && sc.damaged > 0 {
		err = fmt.Errorf("line %d of %d: %w", sc.firstDamaged, sc.lines, errDamaged)
	}
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = s.sync(out)
	}
	if err == nil {
		err = unix.Renameat(int(dir.Fd()), tmp, int(dir.Fd()), name)
	}
	if err == nil {
		err = dir.Sync()
	}
	var st unix.Stat_t
	if err == nil {
		err = unix.Fstat(int(out.Fd()), &st)
	}
	if err != nil {
		out.Close()
		_ = unix.Unlinkat(int(dir.Fd()), tmp, 0)
		return nil, fileState{}, 0, fmt.Errorf("rewrite %s: %w", name, err)
	}
	return out, fileState{dev: uint64(st.Dev), ino: st.Ino, size: sc.size, last: sc.last}, sc.dropped, nil
}

// scanned is what scanLines copied.
type scanned struct {
	lines   int    // whole lines read
	dropped int    // lines left out because drop holds their seq
	size    int64  // bytes copied
	last    uint64 // seq of the last line copied; 0 when none, or when it is not the sink's
	// damaged counts the lines that are not the sink's: not starting with
	// {"seq":N, (N above the line before's), not ending with "}", or
	// holding a NUL byte; firstDamaged is the first one's number (from 1).
	damaged, firstDamaged int
}

// scanLines copies r's whole lines to w, except those whose seq is in
// drop and a last line without its "\n".
func scanLines(r io.Reader, drop map[uint64]bool, w io.Writer) (scanned, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var (
		sc   scanned
		prev uint64
	)
	for {
		line, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return sc, nil // a partial last line (or none) is left out
		}
		if err != nil {
			return sc, err
		}
		sc.lines++
		seq, ok := lineSeq(line)
		if ok && drop[seq] {
			sc.dropped++
			continue
		}
		if !ok || seq <= prev || !bytes.HasSuffix(line, []byte("}\n")) || bytes.IndexByte(line, 0) >= 0 {
			sc.damaged++
			if sc.firstDamaged == 0 {
				sc.firstDamaged = sc.lines
			}
			seq = 0
		} else {
			prev = seq
		}
		if _, err := w.Write(line); err != nil {
			return sc, err
		}
		sc.size += int64(len(line))
		sc.last = seq
	}
}
