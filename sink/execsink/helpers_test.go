package execsink

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batchhook/batchhook/sink"
)

// script copies testdata/name into a fresh directory, executable, and
// returns its absolute path.
func script(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}

// export is a published export as the dispatcher would hand it over; the
// exec sink only reads its identity and directory.
func export(t *testing.T) sink.Export {
	t.Helper()
	return sink.Export{BatchID: "b_7Kq2", Status: "partial", Dir: t.TempDir()}
}

func newSink(t *testing.T, o Options) *Sink {
	t.Helper()
	s, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

// readPID waits (bounded) for a pid file a script writes by rename, so it
// is never read half-written.
func readPID(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if err == nil {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared: %v", path, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// alive reports whether pid is still a running process. A zombie counts as
// dead: it has been killed and only waits for whoever inherited it (init,
// or a container's PID 1) to reap it.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) S ...: the state follows the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

// requireGone fails unless pid is dead within a few seconds; the group was
// sent SIGKILL before Deliver returned, so this is only the kernel's delay.
func requireGone(t *testing.T, what string, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL) // do not leave it behind
			t.Fatalf("%s (pid %d) is still alive", what, pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// killIfFailed kills pid (a process group when negative, as for kill(2))
// when the test failed, so a broken sink does not leave the test's
// sleepers running for minutes.
func killIfFailed(t *testing.T, pid int) {
	t.Cleanup(func() {
		if t.Failed() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// logLines parses zerolog's JSON lines.
func logLines(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	var lines []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		lines = append(lines, m)
	}
	return lines
}

func wantResult(t *testing.T, got sink.Result, outcome sink.Outcome, kind, reason string) {
	t.Helper()
	if got.Outcome != outcome || got.Kind != kind || (reason != "" && got.Reason != reason) {
		t.Fatalf("result = %+v (%s), want outcome %s kind %q reason %q", got, got.Outcome, outcome, kind, reason)
	}
}
