package filesink

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batchhook/batchhook/sink"
)

// inode returns the inode number of path.
func inode(t *testing.T, path string) uint64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Sys().(*syscall.Stat_t).Ino
}

// syncRecorder is a syncFile that fails the first fail fsyncs with EIO, as
// a disk would, and then really fsyncs, noting the inode of every file
// whose fsync succeeded.
type syncRecorder struct {
	t      *testing.T
	fail   int
	synced []uint64
}

func (r *syncRecorder) sync(f *os.File) error {
	if r.fail > 0 {
		r.fail--
		return fmt.Errorf("fsync %s: %w", f.Name(), syscall.EIO)
	}
	if err := f.Sync(); err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		r.t.Fatal(err)
	}
	r.synced = append(r.synced, st.Sys().(*syscall.Stat_t).Ino)
	return nil
}

// After EIO on the day file's fsync the page cache still shows the line
// that was written, but a later fsync of that file returning 0 proves
// nothing (the kernel reports a writeback error once and may have dropped
// the pages it could not write). So the retry must not count the event
// delivered until the file's content went to fresh pages that were synced:
// a new file renamed over the day file. Once rewritten, the file is trusted
// again and the next append does not rewrite it.
func TestFailedFsyncIsNotTrustedAgain(t *testing.T) {
	root := t.TempDir()
	at := midnight.Add(time.Hour)
	path := filepath.Join(root, Dir, "2026-11-24.ndjson")
	s := newSink(t, root)
	deliver(t, s, pay(t, 1, at))
	failedIno := inode(t, path)
	rec := &syncRecorder{t: t, fail: 1}
	s.syncFile = rec.sync
	done, res := s.DeliverPayments(context.Background(), []sink.Payment{pay(t, 2, at)})
	if done != 0 || res.Outcome != sink.Retry {
		t.Fatalf("with the fsync failing: done %d %+v, want 0 and a retry", done, res)
	}
	// The dispatcher hands seq 2 again; this time every fsync succeeds.
	deliver(t, s, pay(t, 2, at))
	ino := inode(t, path)
	if ino == failedIno {
		t.Fatalf("seq 2 counted delivered with the day file never rewritten (inode %d, whose fsync failed, synced again: %v): "+
			"a later fsync of that file proves nothing", failedIno, rec.synced)
	}
	if !slices.Contains(rec.synced, ino) {
		t.Fatalf("seq 2 counted delivered before the new day file (inode %d) was synced (synced: %v)", ino, rec.synced)
	}
	if got := seqsIn(t, root, "2026-11-24"); !equal(got, []uint64{1, 2}) {
		t.Fatalf("day file after the retry: %v", got)
	}
	deliver(t, s, pay(t, 3, at))
	if got := inode(t, path); got != ino {
		t.Errorf("a day file this process rewrote and synced was rewritten again (inode %d, then %d)", ino, got)
	}
	if got := seqsIn(t, root, "2026-11-24"); !equal(got, []uint64{1, 2, 3}) {
		t.Errorf("day file after the next append: %v", got)
	}
}

// Kill point: the fsync failed and the process died before it could
// rewrite the file. The next process cannot know: its first touch of an
// existing day file rewrites it before the tail check skips anything.
func TestFirstTouchRewritesTheDayFile(t *testing.T) {
	root := t.TempDir()
	at := midnight.Add(time.Hour)
	path := filepath.Join(root, Dir, "2026-11-24.ndjson")
	a := newSink(t, root)
	deliver(t, a, pay(t, 1, at))
	a.syncFile = (&syncRecorder{t: t, fail: 1}).sync
	if done, res := a.DeliverPayments(context.Background(), []sink.Payment{pay(t, 2, at)}); done != 0 {
		t.Fatalf("with the fsync failing: done %d %+v, want 0", done, res)
	}
	before := inode(t, path)
	b := newSink(t, root)
	rec := &syncRecorder{t: t}
	b.syncFile = rec.sync
	deliver(t, b, pay(t, 2, at), pay(t, 3, at))
	after := inode(t, path)
	if after == before {
		t.Fatalf("a new process counted seq 2 delivered from a day file it did not rewrite (inode %d, synced: %v)", before, rec.synced)
	}
	if !slices.Contains(rec.synced, after) {
		t.Fatalf("the rewritten day file (inode %d) was not synced (synced: %v)", after, rec.synced)
	}
	if got := seqsIn(t, root, "2026-11-24"); !equal(got, []uint64{1, 2, 3}) {
		t.Fatalf("day file: %v", got)
	}
}

// A day file this process made and synced is trusted: appends to it are
// not rewrites (a rewrite costs a copy of the whole file).
func TestOwnDayFileIsNotRewritten(t *testing.T) {
	root := t.TempDir()
	at := midnight.Add(time.Hour)
	path := filepath.Join(root, Dir, "2026-11-24.ndjson")
	s := newSink(t, root)
	deliver(t, s, pay(t, 1, at))
	ino := inode(t, path)
	deliver(t, s, pay(t, 2, at))
	deliver(t, s, pay(t, 2, at), pay(t, 3, at))
	if got := inode(t, path); got != ino {
		t.Errorf("the sink's own synced file was rewritten (inode %d, then %d)", ino, got)
	}
	if got := seqsIn(t, root, "2026-11-24"); !equal(got, []uint64{1, 2, 3}) {
		t.Errorf("day file: %v", got)
	}
}

// A write lost to a disk error can read back as NUL bytes inside the file.
// The rewrite that would make the file trusted refuses to copy it (the sink
// retries, naming the cause) and leaves it as it is; it never blesses it.
func TestDamagedDayFileIsNotBlessed(t *testing.T) {
	root := t.TempDir()
	at := midnight.Add(time.Hour)
	path := filepath.Join(root, Dir, "2026-11-24.ndjson")
	deliver(t, newSink(t, root), pay(t, 1, at), pay(t, 2, at), pay(t, 3, at))
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	line1 := len(pay(t, 1, at).Line) + 1
	copy(raw[line1+5:line1+25], make([]byte, 20)) // inside line 2
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	ino := inode(t, path)
	done, res := newSink(t, root).DeliverPayments(context.Background(), []sink.Payment{pay(t, 3, at), pay(t, 4, at)})
	if done != 0 || res.Outcome != sink.Retry || !strings.Contains(res.Reason, "move the file away") {
		t.Fatalf("a damaged day file: done %d %+v, want 0 and a retry naming it", done, res)
	}
	after, err := os.ReadFile(path)
	if err != nil || string(after) != string(raw) || inode(t, path) != ino {
		t.Fatalf("the damaged day file was changed (%v)", err)
	}
	ents, _ := os.ReadDir(filepath.Join(root, Dir))
	if len(ents) != 1 {
		t.Errorf("directory holds %d entries (a temporary file left?)", len(ents))
	}
}
