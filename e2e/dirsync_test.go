package e2e

// Every directory the daemon makes is durable before anything in it is
// (docs/decisions.md, 38): the real binary runs under strace from its
// first instruction, and the trace shows, for each directory made, that
// its parent was fsynced before anything below it was.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batchhook/batchhook/lookupsim"
	"github.com/batchhook/batchhook/sink/filesink"
	"github.com/batchhook/batchhook/store"
)

// TestNewDirectoriesAreDurableBeforeUse starts the daemon on a DATA_DIR
// that does not exist yet (nor does its parent), and on one that exists
// but is empty, with payments on (the file sink makes payments/). A batch
// goes through the simulator until its export is published, and a
// payment event reaches its day file. In the trace of the whole run, every
// directory made (mkdir, mkdirat) has its parent fsynced after it, and
// nothing at or below it (a directory, the database, a results file, a day
// file) is fsynced before that: every 2xx and every recorded state rests
// on such an fsync (the database's commit, the export root's), so a power
// cut cannot keep the promise and lose the directory it lives in.
func TestNewDirectoriesAreDurableBeforeUse(t *testing.T) {
	if _, err := exec.LookPath("strace"); err != nil {
		t.Skip("strace is not installed: the directory durability test needs it (.ci/run installs it)")
	}
	t.Parallel()
	for _, tc := range []struct {
		name string
		// missing are the levels of DATA_DIR that do not exist at start.
		missing []string
	}{
		{name: "created", missing: []string{"new", "data"}},
		{name: "empty", missing: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			data := filepath.Join(append([]string{base}, tc.missing...)...)
			events, id := runTraced(t, data)
			made := checkDirsDurable(t, events)
			exports := filepath.Join(data, "exports")
			want := []string{exports, filepath.Join(exports, ".partial"), filepath.Join(exports, ".partial", id), filepath.Join(exports, filesink.Dir)}
			for i := range tc.missing {
				want = append(want, filepath.Join(append([]string{base}, tc.missing[:i+1]...)...))
			}
			for _, w := range want {
				if !made[w] {
					t.Errorf("the trace shows no mkdir of %s (made: %v): the check would pass without looking", w, keys(made))
				}
			}
		})
	}
}

// TestRestoreCreateMakesDurableDirectories: `restore --create` into a
// data directory two levels of which are missing makes them durable
// before the database renamed into them (and the export directory it
// compares with) is promised, as the daemon does.
func TestRestoreCreateMakesDurableDirectories(t *testing.T) {
	if _, err := exec.LookPath("strace"); err != nil {
		t.Skip("strace is not installed: the directory durability test needs it (.ci/run installs it)")
	}
	t.Parallel()
	src := t.TempDir()
	st, err := store.Open(src, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	data := filepath.Join(base, "new", "data")
	traces := t.TempDir()
	cmd := exec.Command("strace", "-f", "-ff", "-qq", "-ttt", "-T", "-y", "-e", "trace=mkdir,mkdirat,fsync,fdatasync",
		"-e", "signal=none", "-o", filepath.Join(traces, "t"),
		binary, "restore", filepath.Join(src, store.FileName), "--data-dir", data, "--create")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("restore --create: %v\n%s", err, out)
	}
	made := checkDirsDurable(t, readTraces(t, traces))
	for _, w := range []string{filepath.Join(base, "new"), data, filepath.Join(data, "exports"), filepath.Join(data, "exports", ".partial")} {
		if !made[w] {
			t.Errorf("the trace shows no mkdir of %s (made: %v): the check would pass without looking", w, keys(made))
		}
	}
}

// runTraced runs the daemon under strace on data, publishes one export and
// delivers one payment event, stops the daemon and returns the trace and
// the batch's id.
func runTraced(t *testing.T, data string) ([]traceEvent, string) {
	t.Helper()
	s := newSetup(t, lookupsim.Options{})
	s.env["BATCHHOOK_DATA_DIR"] = data
	s.exports = filepath.Join(data, "exports")
	payFile := filepath.Join(t.TempDir(), "payments-secret")
	if err := os.WriteFile(payFile, []byte(e2ePaySecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.env["BATCHHOOK_PAYMENTS_SIGNING_SECRET_FILE"] = payFile
	s.env["BATCHHOOK_LOG_LEVEL"] = "info"
	traces := t.TempDir()
	d := startCommand(t, s.addr, s.env, []string{"strace", "-f", "-ff", "-qq", "-ttt", "-T", "-y",
		"-e", "trace=mkdir,mkdirat,fsync,fdatasync", "-e", "signal=none", "-o", filepath.Join(traces, "t"), binary, "serve"})
	pid := traceeOf(t, d.cmd.Process.Pid)
	t.Cleanup(func() {
		// Before strace's own kill (cleanups run last first), and only
		// while strace runs: once it exited, so had its tracee, whose
		// pid may be another process's by now.
		if d.cmd.ProcessState == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})

	id, err := s.sim.Submit(lookupsim.SampleCPFs(5, 1))
	if err != nil {
		t.Fatal(err)
	}
	s.waitExport(t, id, d, waitBound)
	waitExportedLine(t, d, id)
	if code, r := postPaymentQuiet(s.addr, e2ePaySecret, paymentBody("dirsync-1"), 1); code != 200 || r["result"] != "accepted" {
		t.Fatalf("payment event: %d %v", code, r)
	}
	waitLog(t, d, paymentDelivered(1), waitBound, "seq 1 delivered to file")

	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-d.done: // strace exits as its tracee does, with its status
		d.done <- err
		if err != nil {
			t.Fatalf("batchhook under strace did not stop cleanly: %v\n%s", err, d.out.String())
		}
	case <-time.After(2 * waitBound):
		t.Fatalf("batchhook under strace did not stop on SIGTERM")
	}
	return readTraces(t, traces), id
}

// traceeOf returns the process strace (pid) started: its one child.
func traceeOf(t *testing.T, pid int) int {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		t.Fatalf("find strace's child: %v", err)
	}
	f := strings.Fields(string(raw))
	if len(f) != 1 {
		t.Fatalf("strace has children %q, want one", raw)
	}
	child, err := strconv.Atoi(f[0])
	if err != nil {
		t.Fatal(err)
	}
	return child
}

// traceEvent is one traced call that succeeded: a directory made at path,
// or an fsync (fdatasync) of the file or directory at path.
type traceEvent struct {
	at    float64 // when the call began (strace -ttt)
	mkdir bool
	path  string
	line  string
}

var (
	traceLine  = regexp.MustCompile(`^(\d+\.\d+) (mkdirat|mkdir|fsync|fdatasync)\((.*)\) += (-?\d+)`)
	fdArg      = regexp.MustCompile(`^\d+<(.*)>$`)
	mkdiratArg = regexp.MustCompile(`^(?:AT_FDCWD|\d+)<([^>]*)>, "([^"]*)", `)
	mkdirArg   = regexp.MustCompile(`^"([^"]*)", `)
)

// readTraces reads strace's files (one a thread: -ff) into the calls that
// succeeded, in the order they began.
func readTraces(t *testing.T, dir string) []traceEvent {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "t.*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no strace output in %s: %v", dir, err)
	}
	var out []traceEvent
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(raw), "\n") {
			m := traceLine.FindStringSubmatch(line)
			if m == nil || m[4] != "0" {
				continue
			}
			at, _ := strconv.ParseFloat(m[1], 64)
			ev := traceEvent{at: at, line: line, mkdir: strings.HasPrefix(m[2], "mkdir")}
			switch m[2] {
			case "mkdirat":
				a := mkdiratArg.FindStringSubmatch(m[3])
				if a == nil {
					t.Fatalf("unparsed mkdirat: %s", line)
				}
				ev.path = a[2]
				if !filepath.IsAbs(a[2]) {
					ev.path = filepath.Join(a[1], a[2])
				}
			case "mkdir":
				a := mkdirArg.FindStringSubmatch(m[3])
				if a == nil || !filepath.IsAbs(a[1]) {
					t.Fatalf("unparsed mkdir: %s", line)
				}
				ev.path = a[1]
			default:
				a := fdArg.FindStringSubmatch(m[3])
				if a == nil {
					t.Fatalf("unparsed %s: %s", m[2], line)
				}
				ev.path = a[1]
			}
			out = append(out, ev)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].at < out[j].at })
	return out
}

// checkDirsDurable fails the test for each directory made whose parent was
// not fsynced after it, or was fsynced only after something at or below
// the new directory was. It returns the directories made.
func checkDirsDurable(t *testing.T, events []traceEvent) map[string]bool {
	t.Helper()
	made := map[string]bool{}
	for i, mk := range events {
		if !mk.mkdir {
			continue
		}
		made[mk.path] = true
		parent := filepath.Dir(mk.path)
		var early *traceEvent
		synced := false
		for j := i + 1; j < len(events) && !synced; j++ {
			e := events[j]
			switch {
			case e.mkdir:
			case e.path == parent:
				synced = true
			case early == nil && (e.path == mk.path || strings.HasPrefix(e.path, mk.path+"/")):
				early = &events[j]
			}
		}
		switch {
		case !synced:
			t.Errorf("%s was made and its parent %s never fsynced after:\n  %s", mk.path, parent, mk.line)
		case early != nil:
			t.Errorf("%s was made and %s fsynced before its parent %s was:\n  %s\n  %s", mk.path, early.path, parent, mk.line, early.line)
		}
	}
	return made
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
