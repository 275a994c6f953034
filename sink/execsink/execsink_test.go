package execsink

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/sink"
)

func TestMain(m *testing.M) {
	if runtime.GOOS != "linux" {
		// The scripts read /proc; the sink itself builds elsewhere.
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestDeliveredWithDirLastAndOnlyItsEnvironment(t *testing.T) {
	// A secret of batchhook's own must not reach the command.
	t.Setenv("BATCHHOOK_SIGNING_SECRET", "whsec_do-not-leak-me")
	out := t.TempDir()
	cmd := script(t, "record.sh")
	s := newSink(t, Options{Command: []string{cmd, out}, Timeout: 30 * time.Second})
	if s.Name() != "exec" {
		t.Fatalf("Name = %q", s.Name())
	}
	e := export(t)
	wantResult(t, s.Deliver(context.Background(), e, nil), sink.Delivered, "", "")

	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSuffix(string(b), "\n")
	}
	if got := read("args"); got != e.Dir {
		t.Errorf("arguments after OUT = %q, want only the export directory %q", got, e.Dir)
	}
	environ := strings.Split(read("environ"), "\n")
	slices.Sort(environ)
	want := []string{
		"BATCHHOOK_BATCH_ID=b_7Kq2",
		"BATCHHOOK_BATCH_STATUS=partial",
		"BATCHHOOK_EXPORT_DIR=" + e.Dir,
		"BATCHHOOK_EXPORT_VERSION=0",
		"PATH=/usr/local/bin:/usr/bin:/bin",
	}
	if !slices.Equal(environ, want) {
		t.Errorf("environment = %q, want exactly %q", environ, want)
	}
	if strings.Contains(read("environ"), "do-not-leak-me") {
		t.Error("the test process's secret reached the command")
	}
	if got := read("cwd"); got != "/" {
		t.Errorf("working directory = %q, want /", got)
	}
	if got := read("stdin"); got != "/dev/null" {
		t.Errorf("stdin = %q, want /dev/null", got)
	}
}

func TestExitCodes(t *testing.T) {
	cmd := script(t, "exit.sh")
	for _, tc := range []struct {
		code    string
		outcome sink.Outcome
		kind    string
		reason  string
	}{
		{"0", sink.Delivered, "", ""},
		{"75", sink.Retry, "exit", "exit status 75 (EX_TEMPFAIL)"},
		{"1", sink.Failed, "exit", "exit status 1"},
		{"3", sink.Failed, "exit", "exit status 3"},
	} {
		t.Run(tc.code, func(t *testing.T) {
			var logs bytes.Buffer
			// LogOutput on: the output goes to the log, never to Reason.
			s := newSink(t, Options{Command: []string{cmd, tc.code}, Timeout: 30 * time.Second,
				LogOutput: true, Logger: zerolog.New(&logs)})
			got := s.Deliver(context.Background(), export(t), nil)
			wantResult(t, got, tc.outcome, tc.kind, tc.reason)
			if got.Outcome != sink.Delivered && got.Reason == "" {
				t.Error("empty reason")
			}
			if !strings.Contains(logs.String(), "529.982.247-25") {
				t.Errorf("output not logged: %s", logs.String())
			}
		})
	}
}

func TestKilledBySignalIsFailed(t *testing.T) {
	s := newSink(t, Options{Command: []string{script(t, "selfkill.sh")}, Timeout: 30 * time.Second})
	wantResult(t, s.Deliver(context.Background(), export(t), nil), sink.Failed, "signal", "killed by signal 10 (user defined signal 1)")
}

func TestTimeoutKillsTheWholeGroup(t *testing.T) {
	out := t.TempDir()
	const timeout = 2 * time.Second
	s := newSink(t, Options{Command: []string{script(t, "hang.sh"), out}, Timeout: timeout})
	start := time.Now()
	got := s.Deliver(context.Background(), export(t), nil)
	took := time.Since(start)
	wantResult(t, got, sink.Retry, "timeout", "no exit within 2s; process group killed")
	if took < timeout || took > timeout+10*time.Second {
		t.Errorf("Deliver took %s with a %s timeout", took, timeout)
	}
	// Both ignored SIGTERM; SIGKILL to the group takes them anyway.
	leader := readPID(t, filepath.Join(out, "leader.pid"))
	killIfFailed(t, -leader)
	requireGone(t, "leader", leader)
	requireGone(t, "grandchild", readPID(t, filepath.Join(out, "grandchild.pid")))
}

func TestCancelKillsTheGroupAndRetries(t *testing.T) {
	out := t.TempDir()
	s := newSink(t, Options{Command: []string{script(t, "hang.sh"), out}, Timeout: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := make(chan sink.Result, 1)
	go func() { res <- s.Deliver(ctx, export(t), nil) }()
	grandchild := readPID(t, filepath.Join(out, "grandchild.pid"))
	leader := readPID(t, filepath.Join(out, "leader.pid"))
	killIfFailed(t, -leader)
	cancel()
	select {
	case got := <-res:
		wantResult(t, got, sink.Retry, "shutdown", "batchhook is stopping; process group killed")
	case <-time.After(10 * time.Second):
		t.Fatal("Deliver did not return after cancel")
	}
	requireGone(t, "leader", leader)
	requireGone(t, "grandchild", grandchild)
}

func TestCancelledBeforeStartRunsNothing(t *testing.T) {
	out := t.TempDir()
	s := newSink(t, Options{Command: []string{script(t, "touch.sh"), out}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	wantResult(t, s.Deliver(ctx, export(t), nil), sink.Retry, "shutdown", "")
	if _, err := os.Stat(filepath.Join(out, "ran")); !os.IsNotExist(err) {
		t.Fatalf("the command ran after cancel (stat: %v)", err)
	}
	// The same sink with a live context does run it: the check above can fail.
	wantResult(t, s.Deliver(context.Background(), export(t), nil), sink.Delivered, "", "")
	if _, err := os.Stat(filepath.Join(out, "ran")); err != nil {
		t.Fatal(err)
	}
}

func TestStragglerIsKilledAndDoesNotHoldTheOutput(t *testing.T) {
	out := t.TempDir()
	var logs bytes.Buffer
	s := newSink(t, Options{Command: []string{script(t, "straggler.sh"), out}, Timeout: time.Minute,
		LogOutput: true, Logger: zerolog.New(&logs)})
	start := time.Now()
	wantResult(t, s.Deliver(context.Background(), export(t), nil), sink.Delivered, "", "")
	// The straggler holds stdout: without the group kill, Wait would sit
	// out pipeGrace before returning.
	if took := time.Since(start); took >= pipeGrace {
		t.Errorf("Deliver took %s: it waited for the straggler's pipe", took)
	}
	straggler := readPID(t, filepath.Join(out, "straggler.pid"))
	killIfFailed(t, straggler)
	requireGone(t, "straggler", straggler)
	if !strings.Contains(logs.String(), "left one behind") {
		t.Errorf("output not logged: %s", logs.String())
	}
}
