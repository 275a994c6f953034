package e2e

// Fault injection on the payments day file's fsync, with strace attached to
// the real binary: after a failed fsync the file sink does not count an
// event delivered on the strength of a later fsync of the same file.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/batchhook/batchhook/lookupsim"
	"github.com/batchhook/batchhook/sink/filesink"
)

// paymentsSetup is a daemon with payments on, the file sink, and no fetch
// workers.
func paymentsSetup(t *testing.T) (*setup, *daemonProc) {
	t.Helper()
	s := newSetup(t, lookupsim.Options{})
	payFile := filepath.Join(t.TempDir(), "payments-secret")
	if err := os.WriteFile(payFile, []byte(e2ePaySecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.env["BATCHHOOK_PAYMENTS_SIGNING_SECRET_FILE"] = payFile
	s.env["BATCHHOOK_FETCH_WORKERS"] = "0"
	s.env["BATCHHOOK_LOG_LEVEL"] = "info"
	return s, startDaemon(t, s.addr, s.env)
}

func paymentBody(id string) []byte {
	return []byte(`{"transaction":{"id":"` + id + `","status":"paid","updated_at":"2026-11-24T10:00:00+0000"}}`)
}

// paymentDelivered matches the file sink's payment_delivered line of seq.
func paymentDelivered(seq int) *regexp.Regexp {
	return regexp.MustCompile(fmt.Sprintf(`"sink":"file"[^\n]*"event":"payment_delivered"[^\n]*"seq":%d[,}]`, seq))
}

func fileInode(t *testing.T, path string) uint64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Sys().(*syscall.Stat_t).Ino
}

// waitLog waits up to timeout for a line of the daemon's output matching re.
func waitLog(t *testing.T, d *daemonProc, re *regexp.Regexp, timeout time.Duration, what string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !re.MatchString(d.out.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not logged within %s:\n%s", what, timeout, d.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestPaymentDayFileFsyncFailure: every fsync of today's day file fails
// with EIO (strace, filtered to that path) while seq 2 is appended. Once the
// fault is gone, seq 2 may count as delivered only after the day file was
// rewritten (a new inode, written and synced: see sink/filesink): an fsync
// of the file whose fsync failed proves nothing.
func TestPaymentDayFileFsyncFailure(t *testing.T) {
	t.Parallel()
	s, d := paymentsSetup(t)
	day := filesink.DayOf(time.Now())
	if code, r := postPaymentQuiet(s.addr, e2ePaySecret, paymentBody("fsync-1"), 1); code != 200 || r["result"] != "accepted" {
		t.Fatalf("event 1: %d %v", code, r)
	}
	waitLog(t, d, paymentDelivered(1), 20*time.Second, "seq 1 delivered to file")
	path := filepath.Join(s.exports, filesink.Dir, day+".ndjson")
	failedIno := fileInode(t, path)

	tr := attachStraceArgs(t, d.cmd.Process.Pid, "-P", path, "-e", "trace=fsync", "-e", "inject=fsync:error=EIO")
	if code, r := postPaymentQuiet(s.addr, e2ePaySecret, paymentBody("fsync-2"), 1); code != 200 || r["result"] != "accepted" {
		t.Fatalf("event 2: %d %v", code, r)
	}
	if _, ok := tr.wait(regexp.MustCompile(`INJECTED`), 20*time.Second); !ok {
		t.Fatalf("no fsync of %s failed:\n%s", path, tr.text())
	}
	waitLog(t, d, regexp.MustCompile(`"event":"payment_delivery_retry"[^\n]*"seq":2[,}]`), 20*time.Second, "the retry of seq 2 after the failed fsync")
	tr.detach()
	waitLog(t, d, paymentDelivered(2), 20*time.Second, "seq 2 delivered to file once the fault is gone")
	if filesink.DayOf(time.Now()) != day {
		t.Skip("the test crossed midnight UTC: the events went to two day files")
	}
	if ino := fileInode(t, path); ino == failedIno {
		t.Fatalf("seq 2 counted delivered with the day file never rewritten (inode %d, whose fsync failed): "+
			"a later fsync of that file proves nothing\n%s", failedIno, tr.text())
	}
	lines := readDayFiles(t, s.exports)
	if len(lines) != 2 || lines[0].Seq != 1 || lines[1].Seq != 2 {
		t.Fatalf("day file lines: %+v, want seq 1 and 2 once each", lines)
	}
	d.stop(t)
}
