package dispatch

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/sink"
	"github.com/batchhook/batchhook/sink/filesink"
)

// TestFilePaymentsExactlyOnceAcrossCrashes drives the real file sink from
// a real bbolt store through two crashes, around midnight: (1) the lines
// of a run are written and fsynced but the commit of "delivered" is lost;
// (2) the process dies in the middle of writing a line. After each, a new
// Store is opened on the same directory with a new dispatcher and sink (a
// restart), and at the end every event is in its UTC day's file exactly
// once, in log order.
func TestFilePaymentsExactlyOnceAcrossCrashes(t *testing.T) {
	e := newPayEnv(t, "file")
	exportDir := t.TempDir()
	midnight := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	// Seqs 1..4 late on the 23rd, 5..10 on the 24th, and seq 6 received
	// just before midnight but committed after 5 (the midnight race).
	e.record(t, 4, midnight.Add(-10*time.Second))
	e.record(t, 1, midnight.Add(time.Millisecond))
	e.record(t, 1, midnight.Add(-time.Millisecond))
	e.record(t, 4, midnight.Add(time.Second))
	days := map[uint64]string{}
	for seq := uint64(1); seq <= 10; seq++ {
		ev, err := e.st.PaymentEvent(seq)
		if err != nil {
			t.Fatal(err)
		}
		days[seq] = filesink.DayOf(ev.ReceivedAt)
	}

	// Crash 1: the second run's commit is lost.
	fs, err := filesink.New(exportDir)
	if err != nil {
		t.Fatal(err)
	}
	crashing := &failingOutbox{Store: e.st, failAt: 2}
	p := e.payments(t, crashing, nil, fs)
	if _, err := p.RunOnce(context.Background(), "file"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.RunOnce(context.Background(), "file"); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("the lost commit was not reported: %v", err)
	}
	if c, _ := e.st.PaymentCursor("file"); c.Through != 3 {
		t.Fatalf("cursor through %d; want 3 (the second run's record lost)", c.Through)
	}
	if got := len(fileSeqs(t, exportDir)); got != 6 {
		t.Fatalf("%d lines on disk after crash 1; want 6 (two runs written)", got)
	}
	restart(t, e)

	// Crash 2: after the restart delivered one more run, a crash in the
	// middle of writing seq 10's line leaves half of it.
	fs, err = filesink.New(exportDir)
	if err != nil {
		t.Fatal(err)
	}
	p = e.payments(t, nil, nil, fs)
	for range 2 { // 4..6 again (found on disk), then 7..9
		if _, err := p.RunOnce(context.Background(), "file"); err != nil {
			t.Fatal(err)
		}
	}
	if c, _ := e.st.PaymentCursor("file"); c.Through != 9 {
		t.Fatalf("cursor through %d after the replayed runs; want 9", c.Through)
	}
	ev, _ := e.st.PaymentEvent(10)
	body, _ := e.st.PaymentBody(10)
	line, err := sink.PaymentLine(10, ev.ReceivedAt, ev.Event, ev.Attempt, body)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(exportDir, filesink.Dir, days[10]+".ndjson"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(line[:len(line)-7])
	f.Close()
	restart(t, e)

	fs, err = filesink.New(exportDir)
	if err != nil {
		t.Fatal(err)
	}
	drain(t, e.payments(t, nil, nil, fs), "file")
	got := fileSeqs(t, exportDir)
	seen := map[uint64]int{}
	for _, l := range got {
		seen[l.seq]++
		if days[l.seq] != l.day {
			t.Errorf("seq %d is in %s's file; received on %s", l.seq, l.day, days[l.seq])
		}
	}
	for seq := uint64(1); seq <= 10; seq++ {
		if seen[seq] != 1 {
			t.Errorf("seq %d is on disk %d times", seq, seen[seq])
		}
	}
	if c, _ := e.st.PaymentCursor("file"); c.Through != 10 {
		t.Errorf("cursor through %d; want 10", c.Through)
	}
}

// restart closes the store as a crash would leave it (its last commit
// durable, nothing after) and opens a new one on the same directory.
func restart(t *testing.T, e *payEnv) {
	t.Helper()
	if err := e.st.Close(); err != nil {
		t.Fatal(err)
	}
	e.open(t, "file")
}

type dayLine struct {
	day string
	seq uint64
}

// fileSeqs reads every day file, in day order, checking that each line is
// whole and that seqs grow within a file.
func fileSeqs(t *testing.T, exportDir string) []dayLine {
	t.Helper()
	dir := filepath.Join(exportDir, filesink.Dir)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []dayLine
	for _, ent := range ents {
		day, ok := strings.CutSuffix(ent.Name(), ".ndjson")
		if !ok {
			t.Fatalf("unexpected entry %s", ent.Name())
		}
		raw, err := os.ReadFile(filepath.Join(dir, ent.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if len(raw) > 0 && raw[len(raw)-1] != '\n' {
			t.Fatalf("%s ends in a partial line", ent.Name())
		}
		sc := bufio.NewScanner(strings.NewReader(string(raw)))
		sc.Buffer(nil, 1<<20)
		var last uint64
		for sc.Scan() {
			var seq uint64
			if _, err := fmt.Sscanf(sc.Text(), `{"seq":%d,`, &seq); err != nil {
				t.Fatalf("%s: line %q: %v", ent.Name(), sc.Text(), err)
			}
			if seq <= last {
				t.Errorf("%s: seq %d after %d", ent.Name(), seq, last)
			}
			last = seq
			out = append(out, dayLine{day: day, seq: seq})
		}
	}
	return out
}
