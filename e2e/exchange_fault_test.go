package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/batchhook/batchhook/internal/testutil"
	"github.com/batchhook/batchhook/lookupsim"
)

// attachExchangeFault attaches strace to the daemon so that every
// renameat2 fails with EINVAL, as on a file system without RENAME_EXCHANGE.
// detach stops strace (at the latest at the end of the test) and returns
// the whole trace. The
// test skips when strace is missing or cannot attach (no ptrace rights).
func attachExchangeFault(t *testing.T, d *daemonProc) (detach func() []byte) {
	t.Helper()
	if _, err := exec.LookPath("strace"); err != nil {
		t.Skip("strace not installed: the RENAME_EXCHANGE fault cannot be injected")
	}
	trace := filepath.Join(t.TempDir(), "strace.out")
	cmd := exec.Command("strace", "-f", "-o", trace, "-e", "trace=renameat2", "-e", "signal=none", "-e", "inject=renameat2:error=EINVAL",
		"-p", strconv.Itoa(d.cmd.Process.Pid))
	stderr := &testutil.SyncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Skipf("strace: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM) // detaches; the daemon runs on
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
		})
	}
	t.Cleanup(stop)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(stderr.String(), "attached") {
		select {
		case err := <-done:
			t.Skipf("strace cannot attach (%v): %s", err, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Skipf("strace did not attach within 10s: %s", stderr.String())
		}
	}
	// strace writes the trace as it goes, but only its exit makes sure
	// every line is in the file.
	return func() []byte {
		stop()
		data, err := os.ReadFile(trace)
		if err != nil {
			t.Fatalf("read the strace output: %v", err)
		}
		return data
	}
}

// On the real binary: without RENAME_EXCHANGE (renameat2
// fails with EINVAL), an old export left aside by an earlier version's
// interrupted replace ("<id>.old" in staging) no longer blocks refetches;
// two refetches in a row both replace the export and leave no staging.
func TestRefetchWithoutRenameExchange(t *testing.T) {
	t.Parallel()
	s := newSetup(t, lookupsim.Options{})
	d := startDaemon(t, s.addr, s.env)
	id, err := s.sim.Submit(lookupsim.SampleCPFs(30, 21))
	if err != nil {
		t.Fatal(err)
	}
	s.waitExport(t, id, d, 20*time.Second)
	waitFor(t, func() bool { return strings.Count(d.out.String(), `"event":"batch_exported"`) == 1 })
	leftover := filepath.Join(s.exports, ".partial", id+".old")
	if err := os.MkdirAll(leftover, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"results.ndjson", "manifest.json"} {
		data, err := os.ReadFile(filepath.Join(s.exports, id, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(leftover, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	detach := attachExchangeFault(t, d)
	for n := 2; n <= 3; n++ {
		before, _ := os.ReadFile(filepath.Join(s.exports, id, "manifest.json"))
		if out, errOut, code := runCLI(t, d, 30*time.Second, "batches", "refetch", id); code != 0 {
			t.Fatalf("refetch: %d %s %s", code, out, errOut)
		}
		deadline := time.Now().Add(waitBound)
		for strings.Count(d.out.String(), `"event":"batch_exported"`) < n {
			if time.Now().After(deadline) {
				t.Fatalf("refetch %d did not complete:\n%s", n-1, d.out.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		after, _ := os.ReadFile(filepath.Join(s.exports, id, "manifest.json"))
		if bytes.Equal(before, after) {
			t.Fatalf("refetch %d did not replace the export", n-1)
		}
		s.checkExport(t, id)
	}
	entries, err := os.ReadDir(filepath.Join(s.exports, ".partial"))
	if err != nil || len(entries) != 0 {
		t.Fatalf("staging after the refetches: %v %v", entries, err)
	}
	// A call another thread's line interrupts is printed in two
	// ("<unfinished ...>", then "<... renameat2 resumed>) = -1 EINVAL"):
	// count the injections, not the whole lines.
	if data := detach(); bytes.Count(data, []byte("RENAME_EXCHANGE")) < 2 || bytes.Count(data, []byte("= -1 EINVAL (Invalid argument) (INJECTED)")) < 2 {
		t.Fatalf("the fault was not injected:\n%s", data)
	}
	d.stop(t)
}
