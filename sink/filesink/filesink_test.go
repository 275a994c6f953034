package filesink

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/sink"
)

// midnight is the start of day D; events just before it go to D-1's file.
var midnight = time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)

// pay builds event seq received at at, with a body naming it.
func pay(t *testing.T, seq uint64, at time.Time) sink.Payment {
	t.Helper()
	raw := fmt.Sprintf(`{ "transaction": {"id": "tx-%d", "status": "paid"} }`, seq)
	line, err := sink.PaymentLine(seq, at, "transaction.paid", 1, []byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return sink.Payment{Seq: seq, ReceivedAt: at, Event: "transaction.paid", Attempt: 1, Line: line}
}

func newSink(t *testing.T, root string) *Sink {
	t.Helper()
	s, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func deliver(t *testing.T, s *Sink, ps ...sink.Payment) {
	t.Helper()
	done, res := s.DeliverPayments(context.Background(), ps)
	if done != len(ps) || res.Outcome != sink.Delivered {
		t.Fatalf("delivered %d of %d: %+v", done, len(ps), res)
	}
}

// seqsIn returns the seqs of the lines of day's file, in file order, and
// fails on a line that is not whole JSON or not "\n"-terminated.
func seqsIn(t *testing.T, root, day string) []uint64 {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, Dir, day+fileExt))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) > 0 && raw[len(raw)-1] != '\n' {
		t.Fatalf("%s does not end with a newline", day)
	}
	var out []uint64
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		seq, ok := lineSeq(sc.Bytes())
		if !ok {
			t.Fatalf("%s: line %q has no seq", day, sc.Text())
		}
		out = append(out, seq)
	}
	return out
}

func equal(a, b []uint64) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

func TestAppendsLinesByUTCDayWithModes(t *testing.T) {
	root := t.TempDir()
	s := newSink(t, root)
	// 21:30 at UTC-3 is 00:30 UTC of the next day: the UTC day counts.
	brt := time.FixedZone("BRT", -3*3600)
	deliver(t, s, pay(t, 1, midnight.Add(-time.Second)), pay(t, 2, midnight.Add(30*time.Minute).In(brt)))
	if got := seqsIn(t, root, "2026-11-23"); !equal(got, []uint64{1}) {
		t.Errorf("2026-11-23: %v", got)
	}
	if got := seqsIn(t, root, "2026-11-24"); !equal(got, []uint64{2}) {
		t.Errorf("2026-11-24: %v", got)
	}
	st, err := os.Stat(filepath.Join(root, Dir))
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("payments dir: %v %v", st.Mode(), err)
	}
	st, err = os.Stat(filepath.Join(root, Dir, "2026-11-24.ndjson"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("day file: %v %v", st.Mode(), err)
	}
	// The line is exactly PaymentLine's, with its newline.
	raw, _ := os.ReadFile(filepath.Join(root, Dir, "2026-11-24.ndjson"))
	if want := string(pay(t, 2, midnight.Add(30*time.Minute)).Line) + "\n"; string(raw) != want {
		t.Errorf("line:\n%s\nwant\n%s", raw, want)
	}
}

// Kill point: the lines are written and synced, the store's record is lost
// (a crash before PaymentsDelivered commits), and a new process (a new
// Sink, nothing known) is handed the same events and more.
func TestRedeliveryAfterLostRecordWritesNothingTwice(t *testing.T) {
	root := t.TempDir()
	at := midnight.Add(time.Hour)
	deliver(t, newSink(t, root), pay(t, 1, at), pay(t, 2, at), pay(t, 3, at))
	deliver(t, newSink(t, root), pay(t, 1, at), pay(t, 2, at), pay(t, 3, at), pay(t, 4, at))
	// The same process, too (its record failed, the events come again).
	s := newSink(t, root)
	deliver(t, s, pay(t, 5, at))
	deliver(t, s, pay(t, 5, at), pay(t, 6, at))
	if got := seqsIn(t, root, "2026-11-24"); !equal(got, []uint64{1, 2, 3, 4, 5, 6}) {
		t.Errorf("got %v", got)
	}
}

// Kill point: a crash in the middle of a write leaves a partial last line;
// the next append truncates it and writes the event whole.
func TestPartialLastLineIsTruncated(t *testing.T) {
	root := t.TempDir()
	at := midnight.Add(time.Hour)
	deliver(t, newSink(t, root), pay(t, 1, at), pay(t, 2, at))
	path := filepath.Join(root, Dir, "2026-11-24.ndjson")
	line3 := pay(t, 3, at).Line
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(line3[:len(line3)/2])
	f.Close()
	deliver(t, newSink(t, root), pay(t, 3, at), pay(t, 4, at))
	if got := seqsIn(t, root, "2026-11-24"); !equal(got, []uint64{1, 2, 3, 4}) {
		t.Errorf("got %v", got)
	}
	// A partial line of an event that is not handed again (its body was
	// erased before it went) longer than the next event's whole line: no
	// byte of it may stay.
	long, err := sink.PaymentLine(5, at, "transaction.paid", 1, []byte(`{"pad":"`+strings.Repeat("x", 500)+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(long[:400])
	f.Close()
	deliver(t, newSink(t, root), pay(t, 6, at))
	if got := seqsIn(t, root, "2026-11-24"); !equal(got, []uint64{1, 2, 3, 4, 6}) {
		t.Errorf("got %v", got)
	}
	// A partial first line: the file is emptied and written again.
	at2 := at.Add(24 * time.Hour)
	path2 := filepath.Join(root, Dir, "2026-11-25.ndjson")
	if err := os.WriteFile(path2, pay(t, 5, at2).Line[:10], 0o600); err != nil {
		t.Fatal(err)
	}
	deliver(t, newSink(t, root), pay(t, 5, at2))
	if got := seqsIn(t, root, "2026-11-25"); !equal(got, []uint64{5}) {
		t.Errorf("got %v", got)
	}
}

// Kill point: the lines are written but the process dies before the fsync
// (beforeSync fails). The sink reports nothing done for that day; a new
// process syncs what it finds and skips it, and nothing is written twice.
func TestCrashBeforeSyncAcrossMidnight(t *testing.T) {
	root := t.TempDir()
	d0, d1 := midnight.Add(-time.Millisecond), midnight.Add(time.Millisecond)
	s := newSink(t, root)
	s.beforeSync = func(day string) error {
		if day == "2026-11-24" {
			return errors.New("killed")
		}
		return nil
	}
	// Around midnight the log may hold a later day before an earlier one
	// (seq is given at commit, the day at receipt).
	run := []sink.Payment{pay(t, 1, d0), pay(t, 2, d1), pay(t, 3, d0), pay(t, 4, d1)}
	done, res := s.DeliverPayments(context.Background(), run)
	if done != 1 || res.Outcome != sink.Retry {
		t.Fatalf("done %d %+v; want 1 (the 23rd synced, the 24th not)", done, res)
	}
	// The dispatcher records 1 and hands 2.. again, to a new process.
	deliver(t, newSink(t, root), run[1:]...)
	// And once more, as if that record was lost too.
	deliver(t, newSink(t, root), run...)
	if got := seqsIn(t, root, "2026-11-23"); !equal(got, []uint64{1, 3}) {
		t.Errorf("2026-11-23: %v", got)
	}
	if got := seqsIn(t, root, "2026-11-24"); !equal(got, []uint64{2, 4}) {
		t.Errorf("2026-11-24: %v", got)
	}
}

// An event not yet written is appended even when a later day's file holds
// higher seqs: each event is looked up in its own day's file.
func TestUnwrittenEventOfEarlierDayIsAppended(t *testing.T) {
	root := t.TempDir()
	d0, d1 := midnight.Add(-time.Millisecond), midnight.Add(time.Millisecond)
	deliver(t, newSink(t, root), pay(t, 1, d0), pay(t, 2, d1))
	deliver(t, newSink(t, root), pay(t, 2, d1), pay(t, 3, d0))
	if got := seqsIn(t, root, "2026-11-23"); !equal(got, []uint64{1, 3}) {
		t.Errorf("2026-11-23: %v", got)
	}
}

func TestBadLineIsFailedAfterTheGoodOnes(t *testing.T) {
	root := t.TempDir()
	at := midnight.Add(time.Hour)
	bad := pay(t, 2, at)
	bad.Line = []byte(`{"seq":3,"body":{}}`) // not its own seq
	done, res := newSink(t, root).DeliverPayments(context.Background(), []sink.Payment{pay(t, 1, at), bad, pay(t, 3, at)})
	if done != 1 || res.Outcome != sink.Failed {
		t.Fatalf("done %d %+v", done, res)
	}
	if got := seqsIn(t, root, "2026-11-24"); !equal(got, []uint64{1}) {
		t.Errorf("got %v", got)
	}
}

func TestCorruptLastLineIsRetriedNotGuessed(t *testing.T) {
	root := t.TempDir()
	newSink(t, root)
	path := filepath.Join(root, Dir, "2026-11-24.ndjson")
	if err := os.WriteFile(path, []byte("not a line of ours\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	done, res := newSink(t, root).DeliverPayments(context.Background(), []sink.Payment{pay(t, 1, midnight)})
	if done != 0 || res.Outcome != sink.Retry || !strings.Contains(res.Reason, "last line") {
		t.Fatalf("done %d %+v", done, res)
	}
}

func TestRefusesLinks(t *testing.T) {
	root, elsewhere := t.TempDir(), t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(root, Dir)); err != nil {
		t.Fatal(err)
	}
	if _, err := New(root); !errors.Is(err, ErrUnsafePath) {
		t.Fatalf("New with payments a link: %v", err)
	}
	root2 := t.TempDir()
	s := newSink(t, root2)
	target := filepath.Join(elsewhere, "stolen.ndjson")
	if err := os.Symlink(target, filepath.Join(root2, Dir, "2026-11-24.ndjson")); err != nil {
		t.Fatal(err)
	}
	done, res := s.DeliverPayments(context.Background(), []sink.Payment{pay(t, 1, midnight)})
	if done != 0 || res.Outcome != sink.Retry || !strings.Contains(res.Reason, "symbolic link") {
		t.Fatalf("done %d %+v", done, res)
	}
	if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the link's target was written: %v", err)
	}
}

func TestDropLinesRewritesOnlyAffectedFiles(t *testing.T) {
	root := t.TempDir()
	s := newSink(t, root)
	d0, d1, d2 := midnight.Add(-time.Hour), midnight.Add(time.Hour), midnight.Add(25*time.Hour)
	deliver(t, s, pay(t, 1, d0), pay(t, 2, d0), pay(t, 3, d1), pay(t, 4, d1), pay(t, 5, d2))
	untouched := filepath.Join(root, Dir, "2026-11-25.ndjson")
	before, _ := os.Stat(untouched)
	n, err := s.DropLines(context.Background(), []uint64{2, 4, 99})
	if err != nil || n != 2 {
		t.Fatalf("DropLines: %d %v", n, err)
	}
	if got := seqsIn(t, root, "2026-11-23"); !equal(got, []uint64{1}) {
		t.Errorf("2026-11-23: %v", got)
	}
	if got := seqsIn(t, root, "2026-11-24"); !equal(got, []uint64{3}) {
		t.Errorf("2026-11-24: %v", got)
	}
	after, _ := os.Stat(untouched)
	if !os.SameFile(before, after) {
		t.Error("a file without any of the seqs was rewritten")
	}
	st, _ := os.Stat(filepath.Join(root, Dir, "2026-11-24.ndjson"))
	if st.Mode().Perm() != 0o600 {
		t.Errorf("rewritten file mode %v", st.Mode())
	}
	ents, _ := os.ReadDir(filepath.Join(root, Dir))
	if len(ents) != 3 {
		t.Errorf("directory holds %d entries (a temporary file left?)", len(ents))
	}
	// Appends go on after a rewrite, to the new file: this process synced
	// it, so it is not copied again.
	rewritten := inode(t, filepath.Join(root, Dir, "2026-11-24.ndjson"))
	deliver(t, s, pay(t, 6, d1))
	if got := seqsIn(t, root, "2026-11-24"); !equal(got, []uint64{3, 6}) {
		t.Errorf("2026-11-24 after appends: %v", got)
	}
	if got := inode(t, filepath.Join(root, Dir, "2026-11-24.ndjson")); got != rewritten {
		t.Errorf("the append after DropLines rewrote the file again (inode %d, then %d)", rewritten, got)
	}
}

func TestDaysAndRemoveDay(t *testing.T) {
	root := t.TempDir()
	s := newSink(t, root)
	deliver(t, s, pay(t, 1, midnight.Add(-time.Hour)), pay(t, 2, midnight.Add(time.Hour)))
	os.WriteFile(filepath.Join(root, Dir, "notes.txt"), nil, 0o600)
	days, err := s.Days()
	if err != nil || len(days) != 2 || !days[0].Equal(midnight.Add(-24*time.Hour)) || !days[1].Equal(midnight) {
		t.Fatalf("Days: %v %v", days, err)
	}
	if err := s.RemoveDay(days[0]); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveDay(days[0]); err != nil {
		t.Fatalf("removing a missing day: %v", err)
	}
	if days, _ = s.Days(); len(days) != 1 || !days[0].Equal(midnight) {
		t.Fatalf("Days after remove: %v", days)
	}
	// A late event of a removed day makes a new file.
	deliver(t, s, pay(t, 3, midnight.Add(-time.Minute)))
	if got := seqsIn(t, root, "2026-11-23"); !equal(got, []uint64{3}) {
		t.Errorf("got %v", got)
	}
}

func TestCancelledBeforeWriting(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done, res := newSink(t, t.TempDir()).DeliverPayments(ctx, []sink.Payment{pay(t, 1, midnight)})
	if done != 0 || res.Outcome != sink.Retry || res.Kind != "cancelled" {
		t.Fatalf("done %d %+v", done, res)
	}
}
