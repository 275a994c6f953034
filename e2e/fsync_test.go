package e2e

// Fault injection on the database's fsync, with strace attached to the real
// binary: a `duplicate` is answered only for a record
// whose commit returned, and a failed commit fails the daemon closed.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/batchhook/batchhook/internal/signature"
	"github.com/batchhook/batchhook/lookupsim"
	"github.com/batchhook/batchhook/store"
)

// tracer is strace attached to a running daemon; it keeps strace's lines
// (attach messages and the traced calls) and signals each new one.
type tracer struct {
	cmd     *exec.Cmd
	mu      sync.Mutex
	lines   []string
	changed chan struct{}
	done    chan struct{}
}

// attachStrace attaches strace to pid (every thread: -f), tracing
// fdatasync and pwrite64 with the wall-clock time each call began (-ttt),
// with inject as its tampering (strace's
// -e inject=, e.g. "fdatasync:error=EIO"). It returns
// once strace reports the process attached, and skips the test when strace
// is missing or may not attach (ptrace refused).
func attachStrace(t *testing.T, pid int, inject string) *tracer {
	t.Helper()
	return attachStraceArgs(t, pid, "-e", "trace=fdatasync,pwrite64", "-e", "inject="+inject)
}

// attachStraceArgs is attachStrace with strace's filter and tampering
// given as its arguments (e.g. -P PATH, -e trace=fsync, -e inject=...);
// every line starts with the time its call began (-ttt).
func attachStraceArgs(t *testing.T, pid int, args ...string) *tracer {
	t.Helper()
	path, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("strace is not installed: the fsync fault-injection test needs it (.ci/run installs it)")
	}
	cmd := exec.Command(path, append([]string{"-f", "-ttt", "-p", fmt.Sprint(pid)}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot run strace: %v", err)
	}
	tr := &tracer{cmd: cmd, changed: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(tr.done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			tr.mu.Lock()
			tr.lines = append(tr.lines, sc.Text())
			tr.mu.Unlock()
			select {
			case tr.changed <- struct{}{}:
			default:
			}
		}
		_ = cmd.Wait()
	}()
	t.Cleanup(tr.detach)
	if _, ok := tr.wait(regexp.MustCompile(`attached`), 10*time.Second); !ok {
		tr.detach()
		t.Skipf("strace could not attach to pid %d (ptrace refused?):\n%s", pid, tr.text())
	}
	return tr
}

// wait returns the first line matching re, waiting up to timeout; false
// when strace ended or the time ran out.
func (tr *tracer) wait(re *regexp.Regexp, timeout time.Duration) (string, bool) {
	deadline := time.After(timeout)
	for seen := 0; ; {
		tr.mu.Lock()
		lines := tr.lines[seen:]
		seen = len(tr.lines)
		tr.mu.Unlock()
		for _, l := range lines {
			if re.MatchString(l) {
				return l, true
			}
		}
		select {
		case <-tr.changed:
		case <-tr.done:
			tr.mu.Lock()
			more := len(tr.lines) > seen
			tr.mu.Unlock()
			if !more {
				return "", false
			}
		case <-deadline:
			return "", false
		}
	}
}

func (tr *tracer) text() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return strings.Join(tr.lines, "\n")
}

// detach stops strace (SIGINT: it detaches from the daemon) and waits.
func (tr *tracer) detach() {
	_ = tr.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-tr.done:
	case <-time.After(10 * time.Second):
		_ = tr.cmd.Process.Kill()
		<-tr.done
	}
}

// metaWrite matches bbolt writing a meta page (page 0 or 1 of 4 KiB): from
// then on, a new read transaction sees the commit, synced or not.
var metaWrite = regexp.MustCompile(`pwrite64\(\d+, .*, 4096, (0|4096)[,)< ]`)

// traceTime is when the traced call on line began, by strace's clock
// (-ttt: seconds and microseconds since the epoch).
func traceTime(t *testing.T, line string) time.Time {
	t.Helper()
	m := regexp.MustCompile(`(?:^|\s)(\d+)\.(\d{6}) `).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("no -ttt time in the strace line %q", line)
	}
	sec, _ := strconv.ParseInt(m[1], 10, 64)
	usec, _ := strconv.ParseInt(m[2], 10, 64)
	return time.Unix(sec, usec*1000)
}

// delivery is one webhook attempt and when its reply came.
type delivery struct {
	code   int
	result string
	at     time.Time
	err    error
}

// String shows the transport error's text, which %+v of the struct hides
// behind a pointer.
func (d delivery) String() string {
	return fmt.Sprintf("{code:%d result:%q err:%v}", d.code, d.result, d.err)
}

// deliver posts a signed body and reports the reply (or the transport
// error: a daemon that is exiting may close the connection).
func deliver(addr string, body []byte, attempt int) delivery {
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+e2ePath, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(signature.Header, signature.Sign([]byte(e2eSecret), body))
	req.Header.Set("X-Service-Attempt", fmt.Sprint(attempt))
	client := &http.Client{Timeout: 20 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return delivery{err: err, at: time.Now()}
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	m := regexp.MustCompile(`"(result|error)":"([^"]*)"`).FindStringSubmatch(buf.String())
	d := delivery{code: resp.StatusCode, at: time.Now()}
	if m != nil {
		d.result = m[2]
	}
	return d
}

// quietSetup is a daemon that writes nothing by itself (no fetch workers;
// the submitter and reconciler only read while idle), so that the traced
// commits are the test's.
func quietSetup(t *testing.T) (*setup, *daemonProc) {
	t.Helper()
	s := newSetup(t, lookupsim.Options{})
	s.env["BATCHHOOK_FETCH_WORKERS"] = "0"
	s.env["BATCHHOOK_LOG_LEVEL"] = "info"
	d := startDaemon(t, s.addr, s.env)
	if code, body := get(t, d.admin+"/readyz", ""); code != 200 {
		t.Fatalf("/readyz: %d %s", code, body)
	}
	return s, d
}

func completedBody(id string) []byte {
	return []byte(`{"event":"batch.completed","batch_id":"` + id + `","status":"completed","total_requested":1,"total_found":1,"total_not_found":0,"completed_at":"2026-11-24T10:00:00Z"}`)
}

// TestDuplicateWaitsForTheSlowFsync: every fdatasync takes 1.5 s. Attempt 2
// of a delivery arrives after attempt 1's commit wrote its meta page (bbolt
// shows it to readers from then on) and before that page's fdatasync
// returned: it must not be answered `duplicate` before the commit returned.
func TestDuplicateWaitsForTheSlowFsync(t *testing.T) {
	const delay = 1500 * time.Millisecond
	s, d := quietSetup(t)
	tr := attachStrace(t, d.cmd.Process.Pid, fmt.Sprintf("fdatasync:delay_enter=%d", delay.Microseconds()))
	body := completedBody("b_slow_fsync")
	first := make(chan delivery, 1)
	go func() { first <- deliver(s.addr, body, 1) }()
	line, ok := tr.wait(metaWrite, waitBound)
	if !ok {
		t.Fatalf("no meta page write traced:\n%s", tr.text())
	}
	// When the write began by strace's clock, not when this test read the
	// line: reading strace's output lags on a loaded machine.
	metaAt := traceTime(t, line)
	second := deliver(s.addr, body, 2)
	one := <-first
	if one.err != nil || one.code != 200 || one.result != "accepted" {
		t.Fatalf("attempt 1: %+v, want 200 accepted", one)
	}
	if second.err != nil || second.code != 200 || second.result != "duplicate" {
		t.Fatalf("attempt 2: %+v, want 200 duplicate once attempt 1 committed", second)
	}
	// The meta page's fdatasync began after its pwrite did (metaAt) and
	// lasts delay: attempt 2's duplicate comes after metaAt+delay. The
	// defect answers attempt 2 at once, up to a whole delay early (less
	// the time this test took to see the pwrite and send attempt 2); the
	// slack is the lag between attempt 1's reply and this test reading it.
	const slack = 250 * time.Millisecond
	if early := metaAt.Add(delay).Sub(second.at); early > slack || one.at.Sub(second.at) > slack {
		t.Fatalf("attempt 2 answered duplicate %s before the commit's fdatasync returned (attempt 1 replied %s after it)",
			early, one.at.Sub(second.at))
	}
	tr.detach()
	if code, out := get(t, d.admin+"/readyz", ""); code != 200 {
		t.Fatalf("/readyz after a slow but successful commit: %d %s", code, out)
	}
	d.stop(t)
}

// TestFailedFsyncFailsClosedAndRestarts: the fdatasync of attempt 1's meta
// page fails with EIO (strace counts per thread; the commit's two syncs
// normally run on one thread, and the trace is checked). Attempt 1 is
// answered 503, attempt 2 gets no 2xx, the daemon exits non-zero; started
// again (as its supervisor would), it answers the provider's retry 2xx and
// the batch is recorded once.
func TestFailedFsyncFailsClosedAndRestarts(t *testing.T) {
	t.Parallel()
	s, d := quietSetup(t)
	tr := attachStrace(t, d.cmd.Process.Pid, "fdatasync:error=EIO:when=2")
	const id = "b_failed_fsync"
	body := completedBody(id)
	one := deliver(s.addr, body, 1)
	if one.code == 200 {
		if _, ok := tr.wait(regexp.MustCompile(`INJECTED`), time.Second); !ok {
			t.Skipf("strace injected nothing into attempt 1's commit (its syncs ran on two threads):\n%s", tr.text())
		}
	}
	two := deliver(s.addr, body, 2)
	if one.err != nil || one.code != 503 {
		t.Fatalf("attempt 1 with a failed fsync: %+v, want 503", one)
	}
	if two.err == nil && two.code/100 == 2 {
		t.Fatalf("attempt 2 after a failed commit: %d %s, want no 2xx", two.code, two.result)
	}
	// strace may print the line after the 503 reached this test: wait for
	// it (or for strace's end, with the daemon's).
	tr.wait(regexp.MustCompile(`INJECTED`), waitBound)
	trace := tr.text()
	if i, j := metaWriteIndex(trace), strings.Index(trace, "INJECTED"); i < 0 || j < i {
		t.Fatalf("the injected EIO did not hit the meta page's fdatasync:\n%s", trace)
	}
	select {
	case err := <-d.done:
		d.done <- err
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() == 0 {
			t.Fatalf("daemon exit after a failed commit: %v, want non-zero", err)
		}
	case <-time.After(2 * waitBound): // its stop may take 2×ShutdownTimeout
		t.Fatalf("daemon still running %s after a failed commit:\n%s", 2*waitBound, d.out.String())
	}
	if !strings.Contains(d.out.String(), `"event":"store_failed"`) {
		t.Fatalf("no store_failed event:\n%s", d.out.String())
	}

	// The supervisor starts it again, without strace. With an injected
	// error the kernel never saw the failure, so the commit may still reach
	// the disk: the retry is then a duplicate; after a real EIO it may be
	// lost and the retry accepted. Either way: a 2xx, and one record.
	d2 := startDaemon(t, s.addr, s.env)
	if r := deliver(s.addr, body, 3); r.err != nil || r.code != 200 || (r.result != "accepted" && r.result != "duplicate") {
		t.Fatalf("the provider's retry after the restart: %+v, want 200", r)
	}
	d2.stop(t)
	st, err := store.Open(s.env["BATCHHOOK_DATA_DIR"], time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b, err := st.Get(id)
	counts, _ := st.Counts()
	if err != nil || b.State != store.StateQueued || counts[store.StateQueued] != 1 {
		t.Fatalf("after the restart: %+v, %v, counts %v; want the batch queued once", b, err, counts)
	}
}

func metaWriteIndex(trace string) int {
	if loc := metaWrite.FindStringIndex(trace); loc != nil {
		return loc[0]
	}
	return -1
}

// TestDiskFullFailsClosedAndRestarts: every write to the database file
// fails with ENOSPC. A failed commit is a failed commit, a full disk
// included (DECISIONS 31): 503, /readyz false with the reason, counted,
// store_failed, exit non-zero. Started again once the disk takes writes (as
// its supervisor would), the daemon records the provider's retry once.
func TestDiskFullFailsClosedAndRestarts(t *testing.T) {
	t.Parallel()
	s, d := quietSetup(t)
	tr := attachStrace(t, d.cmd.Process.Pid, "pwrite64:error=ENOSPC")
	const id = "b_disk_full"
	body := completedBody(id)
	if r := deliver(s.addr, body, 1); r.err != nil || r.code != 503 {
		t.Fatalf("delivery on a full disk: %v, want 503; daemon log tail:\n%s", r, lastLines(d.out.String(), 12))
	}
	if r := deliver(s.addr, body, 2); r.err == nil && r.code/100 == 2 {
		t.Fatalf("attempt 2 after a failed commit: %+v, want no 2xx", r)
	}
	select {
	case err := <-d.done:
		d.done <- err
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() == 0 {
			t.Fatalf("daemon exit after a failed commit on a full disk: %v, want non-zero", err)
		}
	case <-time.After(2 * waitBound): // its stop may take 2×ShutdownTimeout
		t.Fatalf("daemon still running %s after a failed commit on a full disk:\n%s", 2*waitBound, d.out.String())
	}
	out := d.out.String()
	if !strings.Contains(out, `"event":"store_failed"`) || !strings.Contains(out, "no space left on device") {
		t.Fatalf("no store_failed event naming the full disk:\n%s", out)
	}
	tr.detach()

	d2 := startDaemon(t, s.addr, s.env)
	if r := deliver(s.addr, body, 3); r.err != nil || r.code != 200 || r.result != "accepted" {
		t.Fatalf("the provider's retry once the disk takes writes: %+v, want 200 accepted", r)
	}
	if code, out := get(t, d2.admin+"/readyz", ""); code != 200 {
		t.Fatalf("/readyz after the restart: %d %s", code, out)
	}
	d2.stop(t)
	st, err := store.Open(s.env["BATCHHOOK_DATA_DIR"], time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	counts, _ := st.Counts()
	if b, err := st.Get(id); err != nil || b.State != store.StateQueued || counts[store.StateQueued] != 1 {
		t.Fatalf("after the restart: %+v, %v, counts %v; want the batch queued once", b, err, counts)
	}
}
