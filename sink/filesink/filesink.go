// Package filesink is the `file` payment sink: it appends each
// payment event as one line to EXPORT_DIR/payments/YYYY-MM-DD.ndjson, the
// UTC day the event was received, and fsyncs the file (and the directory
// when it made the file) before it answers, so an event counts as
// delivered to file only once its line is on disk. It is the only writer
// of EXPORT_DIR/payments/: the erasure and the purge go through DropLines
// and RemoveDay, which take the same lock as the appends.
//
// # No line missing, none twice
//
// The dispatcher records "delivered through seq" in the store after this
// sink answered; a crash between the fsync and that commit hands the same
// events to the sink again. So before it appends to a day file the sink
// looks at the file's tail: a last line without its "\n" (a crash in the
// middle of a write) is truncated away, and an event whose seq is not
// above the seq of the last whole line is skipped: it was written and
// synced, only its record was lost. That test is exact because within one
// day file seqs only grow: the dispatcher hands events in log order, one
// run at a time, and never hands an event after a later one was handled.
// Hence an event of day D is in D's file if and only if its seq is at most
// the last seq there: if it was written, it is at most the last; if it was
// not, every event after it is still unhandled (handled events are a
// prefix of the log), so nothing above it is in any file yet.
//
// Midnight needs no special case, and the rule above is why: an event's
// day is that of its receive time, and seqs are assigned at commit, so
// around midnight the log may hold seq 10 received at 00:00:00.001 (day
// D+1) before seq 11 received at 23:59:59.999 (day D). Each day file
// still only grows in seq (11 goes after D's earlier events, all below
// 10), and each event is looked up in its own day's file only, so a replay
// skips 10 in D+1's file and 11 in D's. A run that spans two days is
// written and fsynced one day at a time, and the sink reports as done
// only the events whose file was synced, so the prefix it answers is on
// disk.
//
// A line cannot be trusted while only the page cache holds it: a line the
// tail check finds was perhaps written by an attempt whose fsync failed, and
// after an fsync error a later fsync of the same file returning 0 proves
// nothing (rewrite.go says why). So a day file this process does not trust
// (its first touch by this process, or any error on it) is rewritten before
// the sink skips or appends anything: its whole lines are copied to a new
// file, fsynced, renamed over it, and the directory fsynced. A crash
// between a failed fsync and the rewrite is covered the same way, since the
// next process's first touch rewrites. Afterwards the sink knows what it
// last synced (device, inode, size) and checks only that nothing changed
// under it. The cost is one copy of a day file per process start, for each
// day it appends to (normally today's, and yesterday's around midnight),
// and one after each error on that file.
package filesink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/batchhook/batchhook/sink"
)

// Dir is the directory of the day files, below EXPORT_DIR.
const Dir = "payments"

// dayLayout names a day file: YYYY-MM-DD (UTC), then ".ndjson".
const (
	dayLayout = time.DateOnly
	fileExt   = ".ndjson"
)

// Sink is the file payment sink. It is safe for concurrent use; every
// operation holds one lock, so appends, DropLines and RemoveDay never
// interleave.
type Sink struct {
	root string
	mu   sync.Mutex
	// known is what this process last synced in each day file it wrote
	// or rewrote: the files it trusts. An entry is dropped on any error on
	// that file, which is then rewritten before its next append.
	known map[string]fileState
	// erased holds the seqs whose lines DropLines removed in this process.
	// The dispatcher may have read such an event (with its body) before
	// the erasure committed; appending it afterwards would put the erased
	// data back on disk, so append refuses it. After a restart the store
	// hands the event without its body, so this need not survive one.
	erased map[uint64]bool
	// beforeSync, when set (tests), runs after a day's lines are written
	// and before they are fsynced; an error stands for a crash there.
	beforeSync func(day string) error
	// syncFile, when set (tests), stands for the fsync of a day file, so a
	// test can make it fail as a disk would.
	syncFile func(f *os.File) error
}

// fileState identifies a day file as this process left it.
type fileState struct {
	dev, ino uint64
	size     int64
	last     uint64
}

var _ sink.PaymentSink = (*Sink)(nil)

// New returns the sink writing below exportRoot (EXPORT_DIR, which must
// exist: the export package makes it). It makes the payments directory
// (0700) when missing, and refuses one that is a link.
func New(exportRoot string) (*Sink, error) {
	abs, err := filepath.Abs(exportRoot)
	if err != nil {
		return nil, fmt.Errorf("file payment sink: %w", err)
	}
	s := &Sink{root: abs, known: map[string]fileState{}, erased: map[uint64]bool{}}
	dir, err := s.openDir()
	if err != nil {
		return nil, fmt.Errorf("file payment sink: %w", err)
	}
	dir.Close()
	return s, nil
}

// Name is the sink's name in BATCHHOOK_SINKS.
func (s *Sink) Name() string { return "file" }

// Path is the absolute path of the payments directory.
func (s *Sink) Path() string { return filepath.Join(s.root, Dir) }

// openDir opens EXPORT_DIR/payments, making it when missing.
func (s *Sink) openDir() (*os.File, error) {
	root, err := os.Open(s.root)
	if err != nil {
		return nil, fmt.Errorf("open export root: %w", err)
	}
	defer root.Close()
	return openDirAt(root, Dir, true)
}

// DeliverPayments appends the lines of ps to their day files (see the
// package comment for why no line goes missing or twice) and returns how
// many of ps, from the first, are on disk.
func (s *Sink) DeliverPayments(ctx context.Context, ps []sink.Payment) (int, sink.Result) {
	n := validLines(ps)
	done, res := s.append(ctx, ps[:n])
	if done < n || n == len(ps) {
		return done, res
	}
	return n, sink.Result{Outcome: sink.Failed, Kind: "local",
		Reason: fmt.Sprintf("payment event %d: its line is not one line of JSON starting with its seq", ps[n].Seq)}
}

// validLines returns how many of ps, from the first, have a line the day
// file can hold: it starts with its own seq (the tail check reads it
// back) and holds no newline.
func validLines(ps []sink.Payment) int {
	for i, p := range ps {
		prefix := `{"seq":` + strconv.FormatUint(p.Seq, 10) + `,`
		if !bytes.HasPrefix(p.Line, []byte(prefix)) || bytes.IndexByte(p.Line, '\n') >= 0 || p.Seq == 0 {
			return i
		}
	}
	return len(ps)
}

func (s *Sink) append(ctx context.Context, ps []sink.Payment) (int, sink.Result) {
	if len(ps) == 0 {
		return 0, sink.Result{Outcome: sink.Delivered}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	stop := sink.Result{Outcome: sink.Delivered}
	for i, p := range ps {
		if s.erased[p.Seq] {
			ps = ps[:i]
			stop = sink.Result{Outcome: sink.Failed, Kind: kindErased,
				Reason: fmt.Sprintf("payment event %d was erased while its delivery was in flight; its line is not written", p.Seq)}
			break
		}
	}
	if len(ps) == 0 {
		return 0, stop
	}
	dir, err := s.openDir()
	if err != nil {
		return 0, local(err)
	}
	defer dir.Close()
	done := 0
	for done < len(ps) {
		if err := ctx.Err(); err != nil {
			return done, sink.Result{Outcome: sink.Retry, Kind: "cancelled", Reason: "delivery interrupted: " + err.Error()}
		}
		day := DayOf(ps[done].ReceivedAt)
		end := done + 1
		for end < len(ps) && DayOf(ps[end].ReceivedAt) == day {
			end++
		}
		if err := s.appendDay(dir, day, ps[done:end]); err != nil {
			delete(s.known, day)
			return done, local(err)
		}
		done = end
	}
	return done, stop
}

// kindErased is the failure kind of an event erased while in flight: the
// dispatcher's body_dropped, as it would find it after a restart.
const kindErased = "body_dropped"

// appendDay writes the events of ps (all of day) that the file does not
// hold yet, then fsyncs it, and the directory when the file is new. A file
// this process does not trust is rewritten first (see the package doc).
func (s *Sink) appendDay(dir *os.File, day string, ps []sink.Payment) error {
	name := day + fileExt
	f, created, err := openFileAt(dir, name, os.O_RDWR|os.O_CREATE)
	if err != nil {
		return err
	}
	defer func() { f.Close() }() // f may become the rewritten file
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return fmt.Errorf("stat %s: %w", f.Name(), err)
	}
	fs := fileState{dev: uint64(st.Dev), ino: st.Ino, size: st.Size}
	syncDir := created
	switch k, ok := s.known[day]; {
	case ok && k.dev == fs.dev && k.ino == fs.ino && k.size == fs.size:
		fs.last = k.last
	case fs.size == 0:
		// New, or empty: no line to prove. The file and its name are
		// synced below.
		syncDir = true
	default:
		if _, err := tailSeq(f, fs.size); err != nil {
			return err // a last line not the sink's: refused before any copy
		}
		nf, nfs, _, err := s.rewrite(dir, name, f, fs.size, nil, true)
		if err != nil {
			return err
		}
		f.Close()
		f, fs = nf, nfs
	}
	var buf bytes.Buffer
	last := fs.last
	for _, p := range ps {
		if p.Seq <= last {
			continue // written and synced before; only its record was lost
		}
		buf.Write(p.Line)
		buf.WriteByte('\n')
		last = p.Seq
	}
	if buf.Len() > 0 {
		if _, err := f.WriteAt(buf.Bytes(), fs.size); err != nil {
			return fmt.Errorf("append to %s: %w", f.Name(), err)
		}
	}
	if s.beforeSync != nil {
		if err := s.beforeSync(day); err != nil {
			return err
		}
	}
	if buf.Len() > 0 || syncDir {
		if err := s.sync(f); err != nil {
			return fmt.Errorf("sync %s: %w", f.Name(), err)
		}
	}
	if syncDir {
		if err := dir.Sync(); err != nil {
			return fmt.Errorf("sync %s: %w", dir.Name(), err)
		}
	}
	fs.size += int64(buf.Len())
	fs.last = last
	s.remember(day, fs)
	return nil
}

// maxKnown bounds the files remembered as trusted: a handful of recent
// days is all that is ever written. Forgetting one costs a rewrite of it
// at its next append.
const maxKnown = 8

// remember notes fs as what this process last synced in day's file,
// forgetting the oldest day when there are too many.
func (s *Sink) remember(day string, fs fileState) {
	s.known[day] = fs
	if len(s.known) > maxKnown {
		oldest := day
		for d := range s.known {
			oldest = min(oldest, d)
		}
		delete(s.known, oldest)
	}
}

// sync fsyncs a day file (through syncFile in tests).
func (s *Sink) sync(f *os.File) error {
	if s.syncFile != nil {
		return s.syncFile(f)
	}
	return f.Sync()
}

// DayOf returns the day file an event received at t goes to: its UTC
// date, YYYY-MM-DD.
func DayOf(t time.Time) string { return t.UTC().Format(dayLayout) }

func local(err error) sink.Result {
	return sink.Result{Outcome: sink.Retry, Kind: "local", Reason: err.Error()}
}

// errCorrupt: the last whole line of a day file does not start with
// {"seq":N, so the sink cannot tell what the file holds. It retries (an
// operator moves the file away); it never guesses.
var errCorrupt = errors.New("its last line does not start with {\"seq\":N,; move the file away for the sink to go on")

// errDamaged: a day file the sink was to rewrite before trusting it holds a
// line that is not the sink's (see rewrite). It retries, as for errCorrupt.
var errDamaged = errors.New("a line is not the sink's (not {\"seq\":N,…} with N growing, or NUL bytes: a write lost to a disk error?); move the file away for the sink to go on")
