package dispatch

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/sink"
	"github.com/batchhook/batchhook/sink/filesink"
	"github.com/batchhook/batchhook/store"
)

// killEvents is how many events the SIGKILL test logs; the first half is
// received before midnight, the rest after (with one midnight race).
const killEvents = 240

var killMidnight = time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)

// killReceivedAt is when event seq was received: one second apart across
// midnight, except that seq half+1 was received just before midnight
// though logged after seq half (its commit came later).
func killReceivedAt(seq uint64) time.Time {
	half := uint64(killEvents / 2)
	if seq == half+1 {
		return killMidnight.Add(-500 * time.Millisecond)
	}
	return killMidnight.Add(time.Duration(int64(seq)-int64(half)-1) * time.Second)
}

// TestPaymentKillHelper is the process the SIGKILL test kills: it logs the
// remaining events (each commit is an acknowledgement) while the payment
// dispatcher delivers them to the file sink, and returns once the file
// sink has all of them. It does nothing unless the test runs it.
func TestPaymentKillHelper(t *testing.T) {
	dir := os.Getenv("BATCHHOOK_TEST_PAYMENT_KILL_DIR")
	if dir == "" {
		t.Skip("run by TestFilePaymentsSurviveSIGKILL")
	}
	st, err := store.Open(filepath.Join(dir, "data"), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	st.SetPaymentSinks([]string{"file"})
	fs, err := filesink.New(filepath.Join(dir, "exports"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPayments(PaymentOptions{Outbox: st, Sinks: map[string]sink.PaymentSink{"file": fs},
		BackoffBase: 10 * time.Millisecond, BackoffMax: 100 * time.Millisecond, Run: 7, IdlePoll: 50 * time.Millisecond,
		Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go p.Run(ctx)
	last, err := st.LastPaymentSeq()
	if err != nil {
		t.Fatal(err)
	}
	// The parent times its kill from this line, not from the start: on a
	// loaded machine a race-enabled child may take longer to get here
	// than any fixed delay.
	fmt.Println(killReadyLine)
	for seq := last + 1; seq <= killEvents; seq++ {
		if _, _, err := st.RecordPayment(store.PaymentEvent{ReceivedAt: killReceivedAt(seq), Event: "transaction.paid", Attempt: 1,
			DedupKey: fmt.Sprintf("k-%d", seq)}, []byte(fmt.Sprintf(`{"transaction": {"id": "tx-%d"}}`, seq))); err != nil {
			t.Fatal(err)
		}
		time.Sleep(8 * time.Millisecond) // webhooks come one by one: the kills land between ack and delivery
	}
	for {
		c, err := st.PaymentCursor("file")
		if err != nil {
			t.Fatal(err)
		}
		if c.Through == killEvents {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// killReadyLine is what the helper prints once it logs events.
const killReadyLine = "payment kill helper: logging"

// killsWanted is how many kills must land while events wait for the file
// sink before the helper is let finish; the kills stop there (or after 40
// rounds, and then too few of them is a failure).
const killsWanted = 10

// TestFilePaymentsSurviveSIGKILL runs the helper process again and again,
// SIGKILLing it at random moments while it logs events and the file sink
// delivers them, then lets it finish: every event is in its UTC day's
// file exactly once, each file in seq order, and the cursor is through
// the last.
func TestFilePaymentsSurviveSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a child process repeatedly")
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "exports"), 0o700); err != nil {
		t.Fatal(err)
	}
	kills := 0
	for round := 0; ; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPaymentKillHelper$", "-test.count=1")
		// atexit_sleep_ms=0: a race-enabled child otherwise sleeps a second
		// at its exit.
		cmd.Env = append(os.Environ(), "BATCHHOOK_TEST_PAYMENT_KILL_DIR="+dir, "GORACE=atexit_sleep_ms=0")
		out := &lockedBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		var err error
		if round < 40 && kills < killsWanted {
			// A random moment once the child logs events (it prints
			// killReadyLine first), so that the kill lands between an
			// event's acknowledgement and its delivery however slowly the
			// child started.
			ready := time.Now().Add(30 * time.Second)
			for !strings.Contains(out.String(), killReadyLine) && time.Now().Before(ready) && len(exited) == 0 {
				time.Sleep(5 * time.Millisecond)
			}
			select {
			case err = <-exited:
			case <-time.After(time.Duration(20+rand.IntN(200)) * time.Millisecond):
				cmd.Process.Signal(syscall.SIGKILL)
				<-exited
				if logged, through := killProgress(t, dir); logged > 0 && through < killEvents {
					kills++ // a kill while events were waiting for the file sink
				}
				continue
			}
		} else {
			select {
			case err = <-exited:
			case <-time.After(60 * time.Second):
				cmd.Process.Signal(syscall.SIGKILL)
				<-exited
				t.Fatalf("the helper did not finish:\n%s", out.String())
			}
		}
		if err != nil {
			t.Fatalf("helper round %d: %v\n%s", round, err, out.String())
		}
		break
	}
	st, err := store.Open(filepath.Join(dir, "data"), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if c, _ := st.PaymentCursor("file"); c.Through != killEvents {
		t.Fatalf("cursor through %d; want %d", c.Through, killEvents)
	}
	seen := map[uint64]int{}
	for _, l := range fileSeqs(t, filepath.Join(dir, "exports")) {
		seen[l.seq]++
		if want := filesink.DayOf(killReceivedAt(l.seq)); l.day != want {
			t.Errorf("seq %d in %s's file; received on %s", l.seq, l.day, want)
		}
	}
	missing, twice := 0, 0
	for seq := uint64(1); seq <= killEvents; seq++ {
		switch {
		case seen[seq] == 0:
			missing++
		case seen[seq] > 1:
			twice++
		}
	}
	t.Logf("payment kill test: events=%d kills_with_a_backlog=%d missing=%d twice=%d", killEvents, kills, missing, twice)
	if kills < killsWanted {
		t.Errorf("only %d of 40 kills landed while events waited for the file sink; want %d", kills, killsWanted)
	}
	if missing > 0 || twice > 0 {
		t.Fatalf("%d events missing, %d written more than once", missing, twice)
	}
	if len(seen) != killEvents {
		t.Fatalf("%d distinct seqs on disk; want %d", len(seen), killEvents)
	}
}

// killProgress reads, between two runs of the helper, how many events are
// logged and how far the file sink's cursor is.
func killProgress(t *testing.T, dir string) (uint64, uint64) {
	t.Helper()
	st, err := store.Open(filepath.Join(dir, "data"), 10*time.Second)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return 0, 0
		}
		t.Fatal(err)
	}
	defer st.Close()
	last, _ := st.LastPaymentSeq()
	c, _ := st.PaymentCursor("file")
	return last, c.Through
}

// lockedBuffer collects a child's output from two pipes.
type lockedBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	return len(p), nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}
